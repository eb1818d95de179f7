package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mockReadmeExample is the first script of the mock engine's README
// ("Edit a file and finish"), read from the file so the doc cannot drift.
func mockReadmeExample(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "plugins", "engine-mock", "README.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(raw), "## Examples")
	require.True(t, ok)
	_, rest, ok = strings.Cut(rest, "```\n")
	require.True(t, ok)
	script, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	return script
}

// TestMockReadmeFirstExampleEdits: the README's first example really edits
// the app (it used to call a tool that is off by default and complete
// "unchanged"), and the off tool's failure says how to turn it on.
func TestMockReadmeFirstExampleEdits(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	run := e.createRun(e.tokenA, app, mockReadmeExample(t))
	done := e.waitRun(app, run.ID)
	require.Equal(t, "completed", done.Status)
	assert.Equal(t, "Adding a greeting.Done.", done.OutputText)
	d := e.runDetail(app, run.ID)
	require.NotEmpty(t, d.ResultRevisionID, "%+v", d)
	assert.Equal(t, "applied", d.Context.Result.Kind)
	assert.Equal(t, "hello\n", e.fileAt(app, d.ResultRevisionID, "src/hello.txt"))
	assert.Contains(t, strings.Join(e.eventTypes(app, run.ID), ","), "tool.completed,assistant.delta")

	off := e.createRun(e.tokenA, app, `tool coding_agent_write_file {"path":"a.txt","content":"x"}`+"\nsay after")
	e.waitRun(app, off.ID)
	failed := e.payloads(app, off.ID, "tool.failed")
	require.Len(t, failed, 1)
	var p struct {
		Code    string `json:"error_code"`
		Message string `json:"error_message"`
	}
	require.NoError(t, json.Unmarshal([]byte(failed[0]), &p))
	assert.Equal(t, "TOOL_UNKNOWN", p.Code)
	assert.Contains(t, p.Message, "APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE=1")
	assert.Contains(t, p.Message, "coding_agent_apply_patch")
}
