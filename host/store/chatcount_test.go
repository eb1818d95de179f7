package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// messageCount is a session's message_count and its messages counted.
func messageCount(t *testing.T, s *Store, sessionID string) (kept, counted int) {
	t.Helper()
	require.NoError(t, s.r.Get(&kept, s.rebind(`SELECT message_count FROM chat_sessions WHERE id = ?`), sessionID))
	require.NoError(t, s.r.Get(&counted, s.rebind(`SELECT count(*) FROM chat_messages WHERE chat_session_id = ?`), sessionID))
	return kept, counted
}

// TestChatMessageCount: every path that adds or removes a turn keeps the
// session's count (which the chat tail reads instead of counting the chat),
// and the migration that adds it counts the chats already there.
func TestChatMessageCount(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
		require.NoError(t, err)
		check := func(want int, what string) {
			t.Helper()
			kept, counted := messageCount(t, s, "chat_c")
			assert.Equal(t, want, counted, what)
			assert.Equal(t, counted, kept, "%s: the session's count", what)
			_, _, older, err := s.ChatSessionTail(ctx, "chat_c", 1, 1)
			require.NoError(t, err)
			assert.Equal(t, want-1, older, "%s: the tail's older turns", what)
		}
		for i := range 2 {
			r := newRun(fmt.Sprintf("run_c%d", i))
			r.UserID, r.ChatSessionID = user, "chat_c"
			_, err = s.StartRun(ctx, r, &core.ChatTurn{MessageID: fmt.Sprintf("msg_%d_1", i), Content: "say hi", NewSession: i == 0}, core.EventInput{Type: core.EventRunAccepted})
			require.NoError(t, err)
			check(2*i+1, "a run's turn")
			running := *r
			running.Status = core.RunRunning
			_, err = s.TransitionRun(ctx, &running, core.Sources(core.RunRunning))
			require.NoError(t, err)
			done := running
			done.Status = core.RunCompleted
			_, _, err = s.FinishRun(ctx, &done, core.Sources(core.RunCompleted), core.EventInput{Type: core.EventRunCompleted}, &core.ChatTurn{MessageID: fmt.Sprintf("msg_%d_2", i), Content: "hi"})
			require.NoError(t, err)
			check(2*i+2, "the assistant's turn")
		}
		require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: "msg_9", ChatSessionID: "chat_c", Role: "user", Content: "more"}))
		check(5, "a turn added")
		require.NoError(t, s.DeleteChatMessage(ctx, "msg_0_1"))
		check(4, "a turn deleted")
		require.NoError(t, s.DeleteChatMessage(ctx, "msg_nope"))
		check(4, "no such turn")

		latest, err := LatestVersion(s.Dialect())
		require.NoError(t, err)
		for v := latest; v > 7; v-- { // down through the count's migration
			require.NoError(t, s.MigrateDown())
		}
		_, err = s.w.ExecContext(ctx, s.rebind(`INSERT INTO chat_messages (id, chat_session_id, role, content, created_at) VALUES (?, ?, 'user', 'x', 1)`), "msg_old", "chat_c")
		require.NoError(t, err)
		require.NoError(t, s.MigrateUp())
		s.chatTails.drop("chat_c")
		check(5, "counted by the migration")
	})
}
