package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

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
		_, err = tx.ExecContext(ctx, tx.Rebind(`UPDATE chat_sessions SET updated_at = ? WHERE id = ?`), now, m.ChatSessionID)
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

// chatTailPage is how many turns ChatSessionTail reads with its first query: a
// typical history budget holds a few dozen turns, so most chats take one
// query; the rest of what a run may carry comes in a second.
const chatTailPage = 64

// firstTailPage is how many turns the first read of a tail asks for.
func firstTailPage(maxTurns int) int {
	if maxTurns > 0 {
		return min(chatTailPage, maxTurns)
	}
	return chatTailPage
}

// tailFrom finishes a tail from its first page (newest first) and the
// chat's number of messages: it keeps what fits the budget, and reads the
// rest the run may carry in one more query when the first page did not
// hold it.
func (s *Store) tailFrom(ctx context.Context, sessionID string, budget, maxTurns int, page []ChatMessage, total int) ([]ChatMessage, int, error) {
	var newestFirst []ChatMessage
	used := 0
	keep := func(ms []ChatMessage) bool {
		for _, m := range ms {
			newestFirst = append(newestFirst, m)
			if used += utf8.RuneCountInString(m.Content); used > budget {
				return true
			}
		}
		return false
	}
	full := keep(page)
	want := total - len(newestFirst)
	if maxTurns > 0 {
		want = min(want, maxTurns-len(newestFirst))
	}
	if !full && len(page) == firstTailPage(maxTurns) && want > 0 {
		last := newestFirst[len(newestFirst)-1]
		var rest []ChatMessage
		if err := s.r.SelectContext(ctx, &rest, s.rebind(`SELECT id, chat_session_id, run_id, role, content, created_at FROM chat_messages
 WHERE chat_session_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?`),
			sessionID, last.CreatedAt, last.CreatedAt, last.ID, want); err != nil {
			return nil, 0, translate(err)
		}
		keep(rest)
	}
	slices.Reverse(newestFirst)
	return newestFirst, max(0, total-len(newestFirst)), nil
}

// ChatSessionTail reads a chat session with the newest turns of it that
// fit in budget runes of content, oldest first, plus the newest one that
// does not fit (the caller decides what to keep of it), at most maxTurns in
// all (0: no bound), and how many older turns are left out. It reads newest
// first, in one query for a chat whose tail fits the first page and two at
// most (the first also counts the chat), so its cost follows the budget and
// maxTurns, not the length of the chat: starting a run in a chat needs
// both. A missing session is ErrNotFound.
func (s *Store) ChatSessionTail(ctx context.Context, sessionID string, budget, maxTurns int) (ChatSession, []ChatMessage, int, error) {
	var rows []struct {
		ChatSession
		MsgID        sql.NullString `db:"m_id"`
		MsgRunID     sql.NullString `db:"m_run_id"`
		MsgRole      sql.NullString `db:"m_role"`
		MsgContent   sql.NullString `db:"m_content"`
		MsgCreatedAt sql.NullInt64  `db:"m_created_at"`
		Total        int            `db:"total"`
	}
	err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT s.id, s.tenant_id, s.app_id, s.user_id, s.title, s.restored_checkpoint_id,
 s.created_at, s.updated_at, m.id AS m_id, m.run_id AS m_run_id, m.role AS m_role, m.content AS m_content,
 m.created_at AS m_created_at, COUNT(m.id) OVER () AS total
 FROM chat_sessions s LEFT JOIN chat_messages m ON m.chat_session_id = s.id
 WHERE s.id = ? ORDER BY m.created_at DESC, m.id DESC LIMIT ?`), sessionID, firstTailPage(maxTurns))
	if err != nil {
		return ChatSession{}, nil, 0, translate(err)
	}
	if len(rows) == 0 {
		return ChatSession{}, nil, 0, notFound("chat session", sessionID)
	}
	page := make([]ChatMessage, 0, len(rows))
	for _, r := range rows {
		if r.MsgID.Valid {
			page = append(page, ChatMessage{ID: r.MsgID.String, ChatSessionID: sessionID, RunID: r.MsgRunID,
				Role: r.MsgRole.String, Content: r.MsgContent.String, CreatedAt: r.MsgCreatedAt.Int64})
		}
	}
	tail, older, err := s.tailFrom(ctx, sessionID, budget, maxTurns, page, rows[0].Total)
	return rows[0].ChatSession, tail, older, err
}

// DeleteChatMessage removes a turn.
func (s *Store) DeleteChatMessage(ctx context.Context, id string) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`DELETE FROM chat_messages WHERE id = ?`), id)
	return translate(err)
}

// DeleteChatSession removes a session and its turns.
func (s *Store) DeleteChatSession(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM chat_messages WHERE chat_session_id = ?`), id); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM chat_sessions WHERE id = ?`), id)
		return translate(err)
	})
}
