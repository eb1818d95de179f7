package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatSessionTouchWritesNoIndex: a chat session is touched (updated_at,
// message_count) twice per turn, so no index of chat_sessions may hold a
// column a touch changes. On PostgreSQL the touch is then a HOT update,
// which the transaction's own statistics show; an index on updated_at
// would make it rewrite every index entry of the row instead.
func TestChatSessionTouchWritesNoIndex(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
		require.NoError(t, err)
		require.NoError(t, s.CreateChatSession(ctx, ChatSession{ID: "chat_t", TenantID: "t1", AppID: "app1", UserID: user, Title: "t"}))

		q := `SELECT p.name FROM pragma_index_list('chat_sessions') l, pragma_index_info(l.name) p`
		if s.Dialect() == Postgres {
			q = `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
 WHERE i.indrelid = 'chat_sessions'::regclass`
		}
		var indexed []string
		require.NoError(t, s.r.Select(&indexed, q))
		assert.Contains(t, indexed, "app_id", "sessions are listed by app and user")
		assert.NotContains(t, indexed, "updated_at")
		assert.NotContains(t, indexed, "message_count")

		if s.Dialect() != Postgres {
			return
		}
		tx, err := s.w.BeginTxx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		_, err = tx.Exec(`UPDATE chat_sessions SET updated_at = updated_at + 1, message_count = message_count + 1 WHERE id = 'chat_t'`)
		require.NoError(t, err)
		var hot int
		require.NoError(t, tx.Get(&hot, `SELECT pg_stat_get_xact_tuples_hot_updated('chat_sessions'::regclass)`))
		assert.Equal(t, 1, hot, "the touch was a HOT update")
	})
}
