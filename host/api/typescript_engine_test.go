package api_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypeScriptEngineThroughTheHost: the TypeScript echo engine, loaded
// from its own HCL file (command = "node"), does a whole run through the
// real host: it reads the app's file from the run's sandbox over the
// broker, calls a toolpack tool that changes the app, and the run ends
// with a new revision, as a Go engine's would.
func TestTypeScriptEngineThroughTheHost(t *testing.T) {
	testenv.BuildTypeScriptEcho(t, binDir)
	hcl, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "engine-echo-ts", "echo-ts.hcl"))
	require.NoError(t, err)
	dir := testenv.PluginConfigDir(t, "local", "patch")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "echo-ts.hcl"), hcl, 0o644))
	e := startEnvIn(t, "sqlite", dir)

	app := e.createApp(e.tokenA)
	prompt := strings.Join([]string{
		"read index.html",
		`tool coding_agent_rename_file {"from_path":"index.html","to_path":"home.html"}`,
		"say renamed",
	}, "\n")
	var run struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "echo-ts", "prompt": prompt}, &run))
	done := e.waitRun(app, run.ID)
	require.Equal(t, "completed", done.Status, "%+v", done)

	var deltas string
	for _, p := range e.payloads(app, run.ID, "assistant.delta") {
		var d struct{ Text string }
		require.NoError(t, json.Unmarshal([]byte(p), &d))
		deltas += d.Text
	}
	assert.Contains(t, deltas, `<h1>hi</h1>`, "the file read from the sandbox")
	assert.Contains(t, deltas, "renamed")
	completedTools := e.payloads(app, run.ID, "tool.completed")
	require.Len(t, completedTools, 1)
	assert.Contains(t, completedTools[0], "coding_agent_rename_file")
	assert.Len(t, e.payloads(app, run.ID, "revision.created"), 1, "the rename made a revision")
}
