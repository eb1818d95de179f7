package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatTail: the newest turns that fit the budget plus the first that
// does not, oldest first, and how many older ones were not read, across
// pages and turns written in the same millisecond.
func TestChatTail(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
		require.NoError(t, err)
		require.NoError(t, s.CreateChatSession(ctx, ChatSession{ID: "chat_1", TenantID: "t1", AppID: "app1", UserID: user, Title: "t"}))
		const page = 64 // what the tail used to read per query: reads across it must hold
		const n = 3*page + 5
		for i := 0; i < n; i++ {
			require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%04d", i), ChatSessionID: "chat_1", Role: "user", Content: strings.Repeat("é", 10)}))
		}
		// read is the session's tail as run creation reads it.
		read := func(budget, maxTurns int) ([]ChatMessage, int, error) {
			_, msgs, older, err := s.ChatSessionTail(ctx, "chat_1", budget, maxTurns)
			return msgs, older, err
		}
		ids := func(ms []ChatMessage) []string {
			out := make([]string, len(ms))
			for i, m := range ms {
				out[i] = m.ID
			}
			return out
		}

		tail, older, err := read(25, 0)
		require.NoError(t, err)
		assert.Equal(t, []string{fmt.Sprintf("msg_%04d", n-3), fmt.Sprintf("msg_%04d", n-2), fmt.Sprintf("msg_%04d", n-1)}, ids(tail),
			"two fit in 25 runes, the third is the first that does not")
		assert.Equal(t, n-3, older)

		tail, older, err = read(10*(page+3), 0)
		require.NoError(t, err)
		assert.Len(t, tail, page+4, "read across pages")
		assert.Equal(t, n-page-4, older)
		assert.Equal(t, fmt.Sprintf("msg_%04d", n-1), tail[len(tail)-1].ID, "oldest first")

		all, err := s.ChatMessages(ctx, "chat_1")
		require.NoError(t, err)
		tail, older, err = read(1_000_000, 0)
		require.NoError(t, err)
		assert.Equal(t, ids(all), ids(tail), "a chat within the budget is read whole")
		assert.Zero(t, older)

		tail, older, err = read(1_000_000, page+7)
		require.NoError(t, err)
		assert.Equal(t, ids(all)[n-page-7:], ids(tail), "at most maxTurns, the newest")
		assert.Equal(t, n-page-7, older)
		tail, older, err = read(1_000_000, 5)
		require.NoError(t, err)
		assert.Equal(t, ids(all)[n-5:], ids(tail), "a bound below one page")
		assert.Equal(t, n-5, older)

		cs, _, _, err := s.ChatSessionTail(ctx, "chat_1", 25, 0)
		require.NoError(t, err)
		assert.Equal(t, "chat_1", cs.ID, "the session comes with its tail")
		assert.Equal(t, user, cs.UserID)
		require.NoError(t, s.CreateChatSession(ctx, ChatSession{ID: "chat_empty", TenantID: "t1", AppID: "app1", UserID: user, Title: "e"}))
		cs, got, gotOlder, err := s.ChatSessionTail(ctx, "chat_empty", 100, 0)
		require.NoError(t, err)
		assert.Equal(t, "e", cs.Title)
		assert.Empty(t, got, "a session with no turns yet")
		assert.Zero(t, gotOlder)
		_, _, _, err = s.ChatSessionTail(ctx, "chat_none", 100, 0)
		assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
	})
}
