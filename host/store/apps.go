package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
)

// App is an app row.
type App struct {
	ID              string `db:"id"`
	TenantID        string `db:"tenant_id"`
	Name            string `db:"name"`
	DraftRevisionID string `db:"draft_revision_id"`
	// SelectedAgentID is the app's selected runtime agent, "" for none;
	// read with the app, as every run needs it.
	SelectedAgentID string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// EnsureTenant creates a tenant unless it exists.
func (s *Store) EnsureTenant(ctx context.Context, id, name string) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		id, name, time.Now().UnixMilli())
	return translate(err)
}

// CreateApp records an app of a tenant.
func (s *Store) CreateApp(ctx context.Context, a App) error {
	now := time.Now().UnixMilli()
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO apps (id, tenant_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`),
		a.ID, a.TenantID, a.Name, now, now)
	return translate(err)
}

// appRow is an apps row as read (appColumns).
type appRow struct {
	ID        string         `db:"id"`
	TenantID  string         `db:"tenant_id"`
	Name      string         `db:"name"`
	Draft     sql.NullString `db:"draft_revision_id"`
	Agent     sql.NullString `db:"selected_agent_id"`
	CreatedAt int64          `db:"created_at"`
	UpdatedAt int64          `db:"updated_at"`
}

// appColumns are the apps columns an appRow holds.
const appColumns = `id, tenant_id, name, draft_revision_id, selected_agent_id, created_at, updated_at`

func (r appRow) toApp() App {
	return App{ID: r.ID, TenantID: r.TenantID, Name: r.Name, DraftRevisionID: r.Draft.String, SelectedAgentID: r.Agent.String,
		CreatedAt: fromMS(r.CreatedAt), UpdatedAt: fromMS(r.UpdatedAt)}
}

// GetApp reads an app.
func (s *Store) GetApp(ctx context.Context, id string) (App, error) {
	var row appRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT `+appColumns+` FROM apps WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return App{}, notFound("app", id)
	}
	if err != nil {
		return App{}, translate(err)
	}
	return row.toApp(), nil
}

// CreateAppWithRevision records an app and its first revision, which becomes
// its draft head, in one transaction: a failure at any step leaves no app
// behind (an app without a draft fails every run).
func (s *Store) CreateAppWithRevision(ctx context.Context, a App, first NewRevision) (App, Revision, error) {
	first.AppID, first.AdvanceDraft = a.ID, true
	pr, err := prepareRevision(first)
	if err != nil {
		return App{}, Revision{}, err
	}
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		now := time.Now().UnixMilli()
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO apps (id, tenant_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`),
			a.ID, a.TenantID, a.Name, now, now); err != nil {
			return translate(err)
		}
		_, err := s.writeRevision(ctx, tx, &pr)
		return err
	})
	if err != nil {
		return App{}, Revision{}, err
	}
	s.remember(pr)
	got, err := s.GetApp(ctx, a.ID)
	return got, pr.rev, err
}
