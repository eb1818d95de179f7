package api_test

import (
	"encoding/json"
	"net/http"
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

// TestTourRestoreGoesBack: the README tour's "go back" — every state has a
// checkpoint, including the app's creation and an edit saved through the
// API, so restoring the creation's checkpoint brings the original back.
func TestTourRestoreGoesBack(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA) // index.html: <h1>hi</h1>
		run := e.createRun(e.tokenA, app, patchLine(t, "index.html", "<h1>hi</h1>", "<h1>Hello, world</h1>"))
		require.Equal(t, "applied", e.runDetail(app, run.ID).Context.Result.Kind)
		var edit struct {
			Checkpoint struct {
				ID   string `json:"id"`
				Kind string `json:"kind"`
			} `json:"checkpoint"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/revisions", map[string]any{
			"base_revision_id": e.draft(app), "message": "add a footer\nwith details", "files": map[string]any{"footer.html": "<footer/>\n"}}, &edit))
		assert.Equal(t, "edit", edit.Checkpoint.Kind)

		var cps struct {
			Items []struct {
				ID    string `json:"id"`
				Kind  string `json:"kind"`
				Label string `json:"label"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/checkpoints", nil, &cps))
		require.Len(t, cps.Items, 3)
		assert.Equal(t, []string{"edit", "run", "created"}, []string{cps.Items[0].Kind, cps.Items[1].Kind, cps.Items[2].Kind})
		assert.Equal(t, "add a footer", cps.Items[0].Label, "a label is one line")
		assert.Equal(t, edit.Checkpoint.ID, cps.Items[0].ID)

		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/checkpoints/"+cps.Items[2].ID+"/restore", nil, nil))
		assert.Equal(t, "<h1>hi</h1>\n", e.fileAt(app, "draft", "index.html"))
		var rev struct {
			Files []struct{ Path string } `json:"files"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/revisions/draft", nil, &rev))
		require.Len(t, rev.Files, 1, "the footer added later is not in the original")
	})
}

// TestChatTitleIsTheFirstLine: a chat session made by a run is titled by
// the prompt's first line, trimmed and bounded.
func TestChatTitleIsTheFirstLine(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	run := e.createRun(e.tokenA, app, "  say Make the heading bigger   \nsay and more")
	e.waitRun(app, run.ID)
	chat := e.chatOf(app, run.ID)
	var cs struct {
		Title string `json:"title"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/chat-sessions/"+chat, nil, &cs))
	assert.Equal(t, "say Make the heading bigger", cs.Title)
}

// TestCreatedModelSaysWhetherItIsTheDefault: POST answers the is_default a
// GET right after shows (the first model is the default when none is set).
func TestCreatedModelSaysWhetherItIsTheDefault(t *testing.T) {
	eachDialect(t, func(e *env) {
		var first, second struct {
			ID        string `json:"id"`
			IsDefault bool   `json:"is_default"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{"name": "A", "provider": "openai", "provider_model": "a"}, &first))
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{"name": "B", "provider": "openai", "provider_model": "b"}, &second))
		var list struct {
			Items []struct {
				ID        string `json:"id"`
				IsDefault bool   `json:"is_default"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/models", nil, &list))
		got := map[string]bool{}
		for _, m := range list.Items {
			got[m.ID] = m.IsDefault
		}
		assert.Equal(t, map[string]bool{first.ID: first.IsDefault, second.ID: second.IsDefault}, got)
		assert.True(t, first.IsDefault)
		assert.False(t, second.IsDefault)
	})
}
