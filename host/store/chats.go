package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
)

// ChatSession is a conversation of one user about one app.
type ChatSession struct {
	ID       string `db:"id"`
	TenantID string `db:"tenant_id"`
	AppID    string `db:"app_id"`
	UserID   string `db:"user_id"`
	Title    string `db:"title"`
	// RestoredCheckpointID is the checkpoint restored since the session's
	// last run (its next run's history says so); empty when none.
	RestoredCheckpointID sql.NullString `db:"restored_checkpoint_id"`
	CreatedAt            int64          `db:"created_at"`
	UpdatedAt            int64          `db:"updated_at"`
}

// ChatMessage is one turn.
type ChatMessage struct {
	ID            string         `db:"id"`
	ChatSessionID string         `db:"chat_session_id"`
	RunID         sql.NullString `db:"run_id"`
	Role          string         `db:"role"`
	Content       string         `db:"content"`
	CreatedAt     int64          `db:"created_at"`
}

const chatColumns = `id, tenant_id, app_id, user_id, title, restored_checkpoint_id, created_at, updated_at`

// CreateChatSession stores a new session.
func (s *Store) CreateChatSession(ctx context.Context, cs ChatSession) error {
	now := time.Now().UnixMilli()
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO chat_sessions (id, tenant_id, app_id, user_id, title, created_at, updated_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)`), cs.ID, cs.TenantID, cs.AppID, cs.UserID, cs.Title, now, now)
	return translate(err)
}

// GetChatSession reads a session; callers check its app and user.
func (s *Store) GetChatSession(ctx context.Context, id string) (ChatSession, error) {
	var cs ChatSession
	err := s.r.GetContext(ctx, &cs, s.rebind(`SELECT `+chatColumns+` FROM chat_sessions WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return ChatSession{}, notFound("chat session", id)
	}
	return cs, translate(err)
}

// ListChatSessions returns a user's sessions of an app, most recently used
// first, after the cursor session (empty: from the first).
func (s *Store) ListChatSessions(ctx context.Context, appID, userID, before string, limit int) ([]ChatSession, error) {
	var out []ChatSession
	q := `SELECT ` + chatColumns + ` FROM chat_sessions WHERE app_id = ? AND user_id = ?`
	args := []any{appID, userID}
	if before != "" {
		q += ` AND (updated_at, id) < (SELECT updated_at, id FROM chat_sessions WHERE id = ?)`
		args = append(args, before)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	err := s.r.SelectContext(ctx, &out, s.rebind(q), args...)
	return out, translate(err)
}

// AddChatMessage appends a turn and touches the session, in one
// transaction (one commit, not two, on a run's way to finishing).
func (s *Store) AddChatMessage(ctx context.Context, m ChatMessage) error {
	now := time.Now().UnixMilli()
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at)
 VALUES (?, ?, ?, ?, ?, ?)`), m.ID, m.ChatSessionID, m.RunID, m.Role, m.Content, now)
		if err != nil {
			return translate(err)
		}
		_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE chat_sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?`), now, m.ChatSessionID)
		return translate(err)
	})
}

// ChatMessages returns a session's turns, oldest first.
func (s *Store) ChatMessages(ctx context.Context, sessionID string) ([]ChatMessage, error) {
	var out []ChatMessage
	err := s.r.SelectContext(ctx, &out, s.rebind(`SELECT id, chat_session_id, run_id, role, content, created_at FROM chat_messages
 WHERE chat_session_id = ? ORDER BY created_at, id`), sessionID)
	return out, translate(err)
}

// DeleteChatMessage removes a turn, and counts it out of its session.
func (s *Store) DeleteChatMessage(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE chat_sessions SET message_count = message_count - 1
 WHERE id = (SELECT chat_session_id FROM chat_messages WHERE id = ?)`), id); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM chat_messages WHERE id = ?`), id)
		return translate(err)
	})
}

// DeleteChatSession removes a session and its turns.
func (s *Store) DeleteChatSession(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM chat_messages WHERE chat_session_id = ?`), id); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM chat_sessions WHERE id = ?`), id)
		s.chatTails.drop(id)
		return translate(err)
	})
}
