package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppForRunWithChatTail: the app and the chat's tail read together are
// what AppForRun and ChatSessionTail read apart, whether the chat's tail is
// read whole (none held) or only its new turns (one held); a turn deleted
// behind the held tail sends it back to a whole read.
func TestAppForRunWithChatTail(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedChat(t, s, "chat_w")
		add := func(from, to int) {
			for i := from; i < to; i++ {
				require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%03d", i), ChatSessionID: "chat_w", Role: "user", Content: fmt.Sprintf("turn %03d", i)}))
			}
		}
		const budget, maxTurns = 40, 0
		check := func(what string) ChatTailRead {
			t.Helper()
			app, m, engineID, tail, err := s.AppForRunWithChatTail(ctx, "app1", "t1", "mock", "chat_w", budget, maxTurns)
			require.NoError(t, err, what)
			wantApp, wantModel, wantID, err := s.AppForRun(ctx, "app1", "t1", "mock")
			require.NoError(t, err)
			assert.Equal(t, wantApp, app, what)
			assert.Equal(t, wantModel, m, what)
			assert.Equal(t, wantID, engineID, what)
			require.NoError(t, tail.Err, what)
			all, err := s.ChatMessages(ctx, "chat_w")
			require.NoError(t, err)
			want := trimTail(all, budget, 1<<31-1)
			assert.Equal(t, ids(want), ids(tail.Turns), what)
			assert.Equal(t, len(all)-len(want), tail.Older, what)
			assert.Equal(t, "chat_w", tail.Session.ID, what)
			assert.Equal(t, "app1", tail.Session.AppID, what)
			return tail
		}

		add(0, 12)
		first := check("whole, nothing held")
		require.Len(t, first.Turns, 6, "five fit in 40 runes, and the first that does not")
		held, ok := s.chatTails.get("chat_w")
		require.True(t, ok, "the tail read whole is held")
		assert.Equal(t, 12, held.total)

		// Rewritten behind the store's back: a held turn is not read again,
		// so a read of only the new turns shows the old content.
		_, err := s.w.ExecContext(ctx, s.rebind(`UPDATE chat_messages SET content = 'edited' WHERE id = ?`), "msg_011")
		require.NoError(t, err)
		add(12, 14)
		since := check("new turns only")
		assert.Equal(t, "turn 011", since.Turns[len(since.Turns)-3].Content, "held turns come from memory")
		assert.Equal(t, "turn 013", since.Turns[len(since.Turns)-1].Content, "new ones from the database")

		require.NoError(t, s.DeleteChatMessage(ctx, "msg_013"))
		add(14, 15)
		whole := check("held tail no longer true: whole again")
		assert.Equal(t, "edited", whole.Turns[len(whole.Turns)-3].Content, "read from the database")
	})
}
