package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChatStore(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
		require.NoError(t, err)
		require.NoError(t, s.CreateChatSession(ctx, ChatSession{ID: "chat_1", TenantID: "t1", AppID: "app1", UserID: user, Title: "hi"}))
		for i, role := range []string{"user", "assistant", "user"} {
			require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: "msg_" + string(rune('a'+i)), ChatSessionID: "chat_1",
				RunID: sql.NullString{String: "run_1", Valid: true}, Role: role, Content: role}))
		}
		msgs, err := s.ChatMessages(ctx, "chat_1")
		require.NoError(t, err)
		require.Len(t, msgs, 3)
		assert.Equal(t, "assistant", msgs[1].Role)

		require.NoError(t, s.DeleteChatMessage(ctx, "msg_c"))
		msgs, err = s.ChatMessages(ctx, "chat_1")
		require.NoError(t, err)
		assert.Len(t, msgs, 2)

		list, err := s.ListChatSessions(ctx, "app1", user, "", 10)
		require.NoError(t, err)
		require.Len(t, list, 1)

		require.NoError(t, s.DeleteChatSession(ctx, "chat_1"))
		_, err = s.GetChatSession(ctx, "chat_1")
		assert.True(t, errors.Is(err, ErrNotFound))
		msgs, err = s.ChatMessages(ctx, "chat_1")
		require.NoError(t, err)
		assert.Empty(t, msgs, "the session's turns go with it")
	})
}
