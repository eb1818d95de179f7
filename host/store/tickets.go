package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// StreamTicket is a short-lived credential for one run's event stream,
// minted by a token that may read the run. A browser's EventSource cannot
// send an Authorization header, so it carries the ticket in its URL
// instead of a long-lived token.
type StreamTicket struct {
	TokenID, TenantID, AppID, RunID string
	// ExpiresAt ends the ticket's use for new connections; ExtendStreamTicket
	// moves it when a connection made with it ends, so the stream's own
	// reconnects keep working.
	ExpiresAt time.Time
}

// expiredTicketsKept is how long an expired ticket row stays before a later
// CreateStreamTicket deletes it: long enough to tell "expired" from
// "unknown" in a support case, short enough that the table stays small.
const expiredTicketsKept = time.Hour

// CreateStreamTicket stores a ticket under the hash of its secret, and
// deletes tickets long expired.
func (s *Store) CreateStreamTicket(ctx context.Context, secret string, t StreamTicket) error {
	now := time.Now()
	if _, err := s.w.ExecContext(ctx, s.rebind(`DELETE FROM stream_tickets WHERE expires_at < ?`), now.Add(-expiredTicketsKept).UnixMilli()); err != nil {
		return translate(err)
	}
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO stream_tickets (ticket_hash, token_id, tenant_id, app_id, run_id, created_at, expires_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)`), HashToken(secret), t.TokenID, t.TenantID, t.AppID, t.RunID, now.UnixMilli(), t.ExpiresAt.UnixMilli())
	return translate(err)
}

// RedeemStreamTicket checks a ticket for a connection to the stream of run
// runID of app appID at now, and returns the principal it stands for: the
// minting token's tenant and user with scope alone (the stream's). A ticket
// that is unknown, expired, minted for another run, or whose token has
// since been revoked, has expired or no longer holds scope, is ErrNotFound.
func (s *Store) RedeemStreamTicket(ctx context.Context, secret, appID, runID, scope string, now time.Time) (Principal, error) {
	var row struct {
		TokenID  string        `db:"token_id"`
		TenantID string        `db:"tenant_id"`
		UserID   string        `db:"user_id"`
		Scopes   string        `db:"scopes"`
		AppID    string        `db:"app_id"`
		RunID    string        `db:"run_id"`
		Until    int64         `db:"expires_at"`
		Expires  sql.NullInt64 `db:"token_expires_at"`
		Revoked  sql.NullInt64 `db:"revoked_at"`
	}
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT t.token_id, t.tenant_id, k.user_id, k.scopes, t.app_id, t.run_id, t.expires_at,
 k.expires_at AS token_expires_at, k.revoked_at
 FROM stream_tickets t JOIN api_tokens k ON k.id = t.token_id WHERE t.ticket_hash = ?`), HashToken(secret))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, notFound("stream ticket", "")
	}
	if err != nil {
		return Principal{}, translate(err)
	}
	p := Principal{TokenID: row.TokenID, TenantID: row.TenantID, UserID: row.UserID}
	if !p.withScopes(row.Scopes).Has(scope) || row.AppID != appID || row.RunID != runID ||
		row.Until < now.UnixMilli() || row.Revoked.Valid || (row.Expires.Valid && row.Expires.Int64 < now.UnixMilli()) {
		return Principal{}, notFound("stream ticket", "")
	}
	p.Scopes = []string{scope}
	return p, nil
}

// withScopes is p holding the space-separated scopes of a token row.
func (p Principal) withScopes(scopes string) Principal {
	p.Scopes = strings.Fields(scopes)
	return p
}

// ExtendStreamTicket keeps a ticket usable until at least until; a
// connection made with it calls this when it ends, so that the client's
// reconnect finds the ticket alive. A ticket minted more than maxAge
// before until is not extended: reconnecting in a loop cannot keep one
// alive for ever, and a client that follows a run for longer mints a new
// one.
func (s *Store) ExtendStreamTicket(ctx context.Context, secret string, until time.Time, maxAge time.Duration) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`UPDATE stream_tickets SET expires_at = ? WHERE ticket_hash = ? AND expires_at < ? AND created_at >= ?`),
		until.UnixMilli(), HashToken(secret), until.UnixMilli(), until.Add(-maxAge).UnixMilli())
	return translate(err)
}
