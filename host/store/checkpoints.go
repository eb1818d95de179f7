package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// Checkpoint marks a revision a user can go back to: one per run that
// changed the app, one per restore.
type Checkpoint struct {
	ID            string `json:"id" db:"id"`
	AppID         string `json:"app_id" db:"app_id"`
	RevisionID    string `json:"revision_id" db:"revision_id"`
	RunID         string `json:"run_id,omitempty" db:"run_id"`
	ChatSessionID string `json:"chat_session_id,omitempty" db:"chat_session_id"`
	// Kind says what made it: CheckpointRun, CheckpointRestore,
	// CheckpointCreated or CheckpointEdit.
	Kind      string    `json:"kind" db:"kind"`
	Label     string    `json:"label" db:"label"`
	CreatedAt time.Time `json:"created_at" db:"-"`
}

// Checkpoint kinds.
const (
	// CheckpointRun: a run's applied result.
	CheckpointRun = "run"
	// CheckpointRestore: a restore of an earlier checkpoint.
	CheckpointRestore = "restore"
	// CheckpointCreated: the files an app was created (or uploaded) with.
	CheckpointCreated = "created"
	// CheckpointEdit: a revision saved through the API.
	CheckpointEdit = "edit"
)

type checkpointRow struct {
	ID            string         `db:"id"`
	AppID         string         `db:"app_id"`
	RevisionID    string         `db:"revision_id"`
	RunID         sql.NullString `db:"run_id"`
	ChatSessionID sql.NullString `db:"chat_session_id"`
	Kind          string         `db:"kind"`
	Label         string         `db:"label"`
	CreatedAt     int64          `db:"created_at"`
}

func (r checkpointRow) checkpoint() Checkpoint {
	return Checkpoint{ID: r.ID, AppID: r.AppID, RevisionID: r.RevisionID, RunID: r.RunID.String,
		ChatSessionID: r.ChatSessionID.String, Kind: r.Kind, Label: r.Label, CreatedAt: fromMS(r.CreatedAt)}
}

const checkpointColumns = `id, app_id, revision_id, run_id, chat_session_id, kind, label, created_at`

// CreateCheckpoint records a checkpoint; CreatedAt is set when zero.
func (s *Store) CreateCheckpoint(ctx context.Context, c *Checkpoint) error {
	if c.ID == "" || c.AppID == "" || c.RevisionID == "" || c.Kind == "" {
		return core.Errf(core.CodeInvalidRequest, "", "checkpoint id, app, revision and kind are required")
	}
	return insertCheckpoint(ctx, s.w, c)
}

// insertCheckpoint writes a checkpoint through db (the store's writer or a
// transaction).
func insertCheckpoint(ctx context.Context, db sqlx.ExtContext, c *Checkpoint) error {
	if c.ID == "" || c.AppID == "" || c.RevisionID == "" || c.Kind == "" {
		return core.Errf(core.CodeInvalidRequest, "", "checkpoint id, app, revision and kind are required")
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO checkpoints (`+checkpointColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.AppID, c.RevisionID, nullStr(c.RunID), nullStr(c.ChatSessionID), c.Kind, c.Label, c.CreatedAt.UnixMilli())
	return translate(err)
}

// GetCheckpoint reads one checkpoint.
func (s *Store) GetCheckpoint(ctx context.Context, id string) (Checkpoint, error) {
	var row checkpointRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT `+checkpointColumns+` FROM checkpoints WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, notFound("checkpoint", id)
	}
	if err != nil {
		return Checkpoint{}, translate(err)
	}
	return row.checkpoint(), nil
}

// ListCheckpoints returns an app's checkpoints newest first, optionally only
// those of one chat session, older than the cursor checkpoint.
func (s *Store) ListCheckpoints(ctx context.Context, appID, chatSessionID, before string, limit int) ([]Checkpoint, error) {
	q := `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE app_id = ?`
	args := []any{appID}
	if chatSessionID != "" {
		q += ` AND chat_session_id = ?`
		args = append(args, chatSessionID)
	}
	if before != "" {
		q += ` AND (created_at, id) < (SELECT created_at, id FROM checkpoints WHERE id = ?)`
		args = append(args, before)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	var rows []checkpointRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return nil, translate(err)
	}
	out := make([]Checkpoint, len(rows))
	for i, r := range rows {
		out[i] = r.checkpoint()
	}
	return out, nil
}

// MarkChatRestored records on a chat session that a checkpoint was restored,
// so its next run's history says so; "" clears the mark.
func (s *Store) MarkChatRestored(ctx context.Context, chatSessionID, checkpointID string) error {
	res, err := s.w.ExecContext(ctx, s.rebind(`UPDATE chat_sessions SET restored_checkpoint_id = ?, updated_at = ? WHERE id = ?`),
		nullStr(checkpointID), time.Now().UnixMilli(), chatSessionID)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("chat session", chatSessionID)
	}
	return nil
}
