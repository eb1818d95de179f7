package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChatSessionsCarryHistory(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		base := "/admin/apps/" + app + "/coding-agent/"
		var first map[string]any
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", base+"runs", map[string]any{"prompt": "history"}, &first))
		chat, _ := first["chat_session_id"].(string)
		require.NotEmpty(t, chat, "a session is made when none is given")
		assert.Equal(t, "completed", e.waitRun(app, first["id"].(string)).Status)

		var second map[string]any
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", base+"runs", map[string]any{"prompt": "history", "chat_session_id": chat}, &second))
		done := e.waitRun(app, second["id"].(string))
		assert.Equal(t, "history=2 user,assistant", done.OutputText, "the second run gets the first run's turns")
		// The third reads only the turns added since the second (the tail
		// held from its read), with the app in one statement on PostgreSQL.
		var third map[string]any
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", base+"runs", map[string]any{"prompt": "history", "chat_session_id": chat}, &third))
		assert.Equal(t, "history=4 user,assistant,user,assistant", e.waitRun(app, third["id"].(string)).OutputText)

		var got struct {
			ID       string `json:"id"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
				RunID   string `json:"run_id"`
			} `json:"messages"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", base+"chat-sessions/"+chat, nil, &got))
		require.Len(t, got.Messages, 6)
		assert.Equal(t, []string{"user", "assistant", "user", "assistant"},
			[]string{got.Messages[0].Role, got.Messages[1].Role, got.Messages[2].Role, got.Messages[3].Role})
		assert.Equal(t, "history=0 ", got.Messages[1].Content)
		assert.Equal(t, first["id"], got.Messages[0].RunID)

		var list struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", base+"chat-sessions", nil, &list))
		require.Len(t, list.Items, 1)
		var created struct{ ID string }
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", base+"chat-sessions", map[string]string{"title": "New idea"}, &created))

		// Someone else's session answers 404, even in the same tenant.
		ctx := t.Context()
		other, err := e.h.Store.EnsureUser(ctx, "default", "usr_other", "other@default")
		require.NoError(t, err)
		_, err = e.h.Store.CreateToken(ctx, "default", other, "o", "token-other", []string{"apps.read", "apps.write"})
		require.NoError(t, err)
		var er apiError
		assert.Equal(t, http.StatusNotFound, e.do("token-other", "GET", base+"chat-sessions/"+chat, nil, &er))
		assert.Equal(t, http.StatusNotFound, e.do("token-other", "POST", base+"runs", map[string]any{"prompt": "x", "chat_session_id": chat}, &er))
		assert.Equal(t, "chat_session_id", er.Detail.Field)
		assert.Equal(t, http.StatusNotFound, e.do(e.tokenB, "GET", base+"chat-sessions/"+chat, nil, &er))
	})
}
