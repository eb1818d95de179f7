package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatRunsShareAWarmSandbox: over HTTP, a chat session's runs use one
// sandbox, kept running between them; another chat gets its own.
func TestChatRunsShareAWarmSandbox(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	runs := "/admin/apps/" + app + "/coding-agent/runs"
	type runJSON struct {
		ID            string `json:"id"`
		Chat          string `json:"chat_session_id"`
		SandboxID     string `json:"sandbox_id"`
		SandboxStatus string `json:"sandbox_status"`
	}
	get := func(id string) runJSON {
		e.waitRun(app, id)
		var r runJSON
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", runs+"/"+id, nil, &r))
		return r
	}
	var first runJSON
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", runs, map[string]any{"prompt": "say one"}, &first))
	a := get(first.ID)
	assert.Equal(t, "running", a.SandboxStatus, "kept warm for the chat's next run")
	var second runJSON
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", runs, map[string]any{"prompt": "say two", "chat_session_id": first.Chat}, &second))
	b := get(second.ID)
	assert.Equal(t, a.SandboxID, b.SandboxID)
	var other runJSON
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", runs, map[string]any{"prompt": "say three"}, &other))
	assert.NotEqual(t, a.SandboxID, get(other.ID).SandboxID, "another chat, another sandbox")
}
