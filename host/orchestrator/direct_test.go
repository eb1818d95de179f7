package orchestrator_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/orchestrator/orchestratortest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolpackReachesTheSandboxDirectly: through the real binaries, a
// toolpack's file calls go to the sandbox plugin's own socket under the
// host's grant, not through the host's relay, and do what they did
// through it: a write reaches the run's result, a read sees it, and a path
// the toolpack refuses is still refused.
func TestToolpackReachesTheSandboxDirectly(t *testing.T) {
	var relayed atomic.Int64
	store := orchestratortest.NewMemory()
	h := launchHostRelaying(t, defaultConfigs(t), orchestrator.Options{}, store, store, store, func(inner workspace.Resolver) workspace.Resolver {
		return func(ctx context.Context, id string) (workspace.Workspace, error) {
			relayed.Add(1)
			return inner(ctx, id)
		}
	})
	h.store = store

	final := h.wait(t, h.start(t, `tool coding_agent_write_file {"path":"src/hello.txt","content":"hello direct\n"}`+"\n"+
		`tool coding_agent_read_file {"path":"src/hello.txt"}`+"\n"+
		`tool coding_agent_workspace_index {}`+"\n"+
		`tool coding_agent_read_file {"path":"../outside"}`+"\n"+
		"say done").ID)
	require.Equal(t, core.RunCompleted, final.Status, "%s: %s", final.ErrorCode, final.ErrorMessage)

	var completed []json.RawMessage
	var failed []string
	for _, e := range h.store.Events(final.ID) {
		var p struct {
			Output json.RawMessage `json:"output"`
			Code   string          `json:"error_code"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		switch e.Event {
		case core.EventToolCompleted:
			completed = append(completed, p.Output)
		case core.EventToolFailed:
			failed = append(failed, p.Code)
		}
	}
	require.Len(t, completed, 3, "write, read and index completed")
	var read struct {
		Content string `json:"content"`
	}
	require.NoError(t, json.Unmarshal(completed[1], &read))
	assert.Equal(t, "hello direct\n", read.Content)
	assert.Contains(t, string(completed[2]), `"src/hello.txt"`, "the index lists the written file")
	assert.Equal(t, []string{"BUILDER_PATCH_POLICY_VIOLATION"}, failed)

	files := map[string]string{}
	for _, f := range h.store.Result(final.ID) {
		files[f.Path] = string(f.Data)
	}
	assert.Equal(t, "hello direct\n", files["src/hello.txt"])
	assert.Zero(t, relayed.Load(), "the host relayed a toolpack's workspace call")
}
