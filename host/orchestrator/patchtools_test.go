package orchestrator_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryPatchToolThroughRealPlugins: a mock run calls each tool of the
// patch toolpack through the real engine, toolpack and sandbox binaries; each
// call shows as tool.started then tool.completed, and the files end as the
// calls left them.
func TestEveryPatchToolThroughRealPlugins(t *testing.T) {
	configs := defaultConfigs(t)
	configs[2].Config = []byte(`{}`) // the legacy write tool stays off
	configs[2].Permissions = map[string]plugin.Permission{"coding_agent_run_command": plugin.PermissionAllow}
	h := newHost(t, configs, orchestrator.Options{})
	script := []string{
		`tool coding_agent_run_command {"command":"mkdir -p src && printf 'export function handleLogin() {\n  return 1\n}\n' > src/login.ts && printf 'old\n' > notes.txt"}`,
		`tool coding_agent_workspace_index {}`,
		`tool coding_agent_collect_context {"query":"login handler"}`,
		`tool coding_agent_search {"query":"handleLogin"}`,
		`tool coding_agent_read_file {"path":"src/login.ts"}`,
		`tool coding_agent_read_file_range {"path":"src/login.ts","start_line":2,"context_lines":1}`,
		`tool coding_agent_apply_patch {"patch":"--- a/src/login.ts\n+++ b/src/login.ts\n@@ -2 +2 @@\n-  return 1\n+  return 2\n"}`,
		`tool coding_agent_rename_file {"from_path":"notes.txt","to_path":"docs/notes.txt"}`,
		`tool coding_agent_delete_file {"path":"docs/notes.txt"}`,
		`say done`,
	}
	run := h.start(t, strings.Join(script, "\n"))
	final := h.wait(t, run.ID)
	require.Equal(t, core.RunCompleted, final.Status, final.ErrorMessage)
	evs := h.store.Events(run.ID)
	requireWellFormed(t, evs)

	var tools []string
	for _, o := range toolOutcomes(t, evs) {
		assert.True(t, o.OK, "%s failed: %s", o.Tool, o.Code)
		tools = append(tools, o.Tool)
	}
	assert.Equal(t, []string{"coding_agent_run_command", "coding_agent_workspace_index", "coding_agent_collect_context",
		"coding_agent_search", "coding_agent_read_file", "coding_agent_read_file_range", "coding_agent_apply_patch", "coding_agent_rename_file",
		"coding_agent_delete_file"}, tools)
	started := 0
	for _, e := range evs {
		if e.Event == core.EventToolStarted {
			started++
		}
	}
	assert.Equal(t, len(tools), started, "each call started once and finished once")

	// The search found the function the command wrote.
	for _, e := range evs {
		if e.Event != core.EventToolCompleted {
			continue
		}
		var p struct {
			Tool   string          `json:"tool"`
			Output json.RawMessage `json:"output"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		if p.Tool == "coding_agent_search" {
			assert.Contains(t, string(p.Output), `"path":"src/login.ts","line":1`)
		}
	}
	files := map[string]string{}
	for _, f := range h.store.Result(run.ID) {
		files[f.Path] = string(f.Data)
	}
	assert.Equal(t, "export function handleLogin() {\n  return 2\n}\n", files["src/login.ts"], "the patch landed")
	assert.NotContains(t, files, "notes.txt")
	assert.NotContains(t, files, "docs/notes.txt")
}
