package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
)

// Principal is who a token acts for.
type Principal struct {
	TokenID  string
	TenantID string
	UserID   string
	Scopes   []string
}

// ScopePlatformAdmin is the operator's scope: global models and the global
// default. A tenant's "admin" does not imply it; only the host's CLI
// (`tokens create`) and the bootstrap token grant it.
const ScopePlatformAdmin = "platform.admin"

// Has reports whether the principal holds a scope. A tenant's "admin"
// holds every tenant scope, never the platform's.
func (p Principal) Has(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope || s == "admin" && scope != ScopePlatformAdmin {
			return true
		}
	}
	return false
}

// TokenPrefix marks agenthost secrets so they are recognisable in logs and
// by secret scanners.
const TokenPrefix = "ah_"

// HashToken is the stored form of a secret: only its sha256 is kept.
func HashToken(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:])
}

// NewTokenSecret makes a random secret.
func NewTokenSecret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return TokenPrefix + hex.EncodeToString(b[:])
}

// EnsureUser creates a user of a tenant unless one with that email exists,
// and returns its id.
func (s *Store) EnsureUser(ctx context.Context, tenantID, userID, email string) (string, error) {
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO users (id, tenant_id, email, created_at) VALUES (?, ?, ?, ?)
 ON CONFLICT (tenant_id, email) DO NOTHING`), userID, tenantID, email, time.Now().UnixMilli())
	if err != nil {
		return "", translate(err)
	}
	var id string
	err = s.w.GetContext(ctx, &id, s.rebind(`SELECT id FROM users WHERE tenant_id = ? AND email = ?`), tenantID, email)
	return id, translate(err)
}

// CreateToken stores a token for secret (hashed) and returns its id.
func (s *Store) CreateToken(ctx context.Context, tenantID, userID, name, secret string, scopes []string) (string, error) {
	id := "tok_" + HashToken(secret)[:16]
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO api_tokens (id, tenant_id, user_id, token_hash, scopes, name, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)`), id, tenantID, userID, HashToken(secret), strings.Join(scopes, " "), name, time.Now().UnixMilli())
	return id, translate(err)
}

// Authenticate finds the live token for a secret.
func (s *Store) Authenticate(ctx context.Context, secret string) (Principal, error) {
	var row struct {
		ID       string        `db:"id"`
		TenantID string        `db:"tenant_id"`
		UserID   string        `db:"user_id"`
		Scopes   string        `db:"scopes"`
		Expires  sql.NullInt64 `db:"expires_at"`
		Revoked  sql.NullInt64 `db:"revoked_at"`
	}
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT id, tenant_id, user_id, scopes, expires_at, revoked_at FROM api_tokens WHERE token_hash = ?`), HashToken(secret))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, notFound("token", "")
	}
	if err != nil {
		return Principal{}, translate(err)
	}
	if row.Revoked.Valid || (row.Expires.Valid && row.Expires.Int64 < time.Now().UnixMilli()) {
		return Principal{}, notFound("token", "")
	}
	return Principal{TokenID: row.ID, TenantID: row.TenantID, UserID: row.UserID, Scopes: strings.Fields(row.Scopes)}, nil
}

// ListApps returns a tenant's apps newest first, older than the cursor app
// (empty: from the newest).
func (s *Store) ListApps(ctx context.Context, tenantID, before string, limit int) ([]App, error) {
	var rows []appRow
	q := `SELECT ` + appColumns + ` FROM apps WHERE tenant_id = ?`
	args := []any{tenantID}
	if before != "" {
		q += ` AND (created_at, id) < (SELECT created_at, id FROM apps WHERE id = ?)`
		args = append(args, before)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return nil, translate(err)
	}
	out := make([]App, len(rows))
	for i, r := range rows {
		out[i] = r.toApp()
	}
	return out, nil
}

// SetDraft moves an app's draft head, but only from the expected revision
// (compare-and-set): a head that moved meanwhile is REVISION_CONFLICT.
func (s *Store) SetDraft(ctx context.Context, appID, from, to string) error {
	res, err := s.w.ExecContext(ctx, s.rebind(`UPDATE apps SET draft_revision_id = ?, updated_at = ?
 WHERE id = ? AND COALESCE(draft_revision_id, '') = ?`), to, time.Now().UnixMilli(), appID, from)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return core.Errf(core.CodeRevisionConflict, "base_revision_id", "the app's draft head is no longer %q", from)
	}
	return nil
}

// ListRuns returns an app's runs, newest first, older than the cursor run
// (empty: from the newest), optionally filtered by status.
func (s *Store) ListRuns(ctx context.Context, appID, status, before string, limit int) ([]*core.Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs WHERE app_id = ?`
	args := []any{appID}
	if status != "" {
		q += ` AND status = ?`
		args = append(args, status)
	}
	if before != "" {
		q += ` AND (created_at, id) < (SELECT created_at, id FROM runs WHERE id = ?)`
		args = append(args, before)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	var rows []runRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return nil, translate(err)
	}
	out := make([]*core.Run, len(rows))
	for i, row := range rows {
		out[i] = row.toRun()
	}
	return out, nil
}
