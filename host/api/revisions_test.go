package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// patchLine is a mock script line that applies a unified diff.
func patchLine(t *testing.T, path, from, to string) string {
	t.Helper()
	input, err := json.Marshal(map[string]string{"patch": fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-%s\n+%s\n", path, path, from, to)})
	require.NoError(t, err)
	return "tool coding_agent_apply_patch " + string(input)
}

type runDetail struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	BaseRevisionID   string `json:"base_revision_id"`
	ResultRevisionID string `json:"result_revision_id"`
	ErrorMessage     string `json:"error_message"`
	SandboxID        string `json:"sandbox_id"`
	Context          struct {
		Result struct {
			Kind         string `json:"kind"`
			RevisionID   string `json:"revision_id"`
			CheckpointID string `json:"checkpoint_id"`
			Conflicts    []struct {
				Path string `json:"path"`
			} `json:"conflicts"`
		} `json:"result"`
	} `json:"context"`
}

func (e *env) runDetail(app, id string) runDetail {
	e.t.Helper()
	e.waitRun(app, id)
	var r runDetail
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+id, nil, &r))
	return r
}

func (e *env) eventTypes(app, id string) []string {
	e.t.Helper()
	var page struct {
		Items []struct {
			Event string `json:"event"`
		} `json:"items"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+id+"/events?limit=500", nil, &page))
	var out []string
	for _, it := range page.Items {
		out = append(out, it.Event)
	}
	return out
}

func (e *env) draft(app string) string {
	e.t.Helper()
	var a struct {
		Draft string `json:"draft_revision_id"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app, nil, &a))
	return a.Draft
}

func (e *env) fileAt(app, rev, path string) string {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/admin/apps/"+app+"/revisions/"+rev+"/files/"+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.tokenA)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(e.t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

// TestRunResultBecomesRevision: a run that edits files produces exactly one
// revision (parent: its base), a checkpoint, and the events before
// run.completed; its diff and files are served; restoring the first
// checkpoint after more runs makes a new head and keeps every revision.
func TestRunResultBecomesRevision(t *testing.T) {
	eachDialect(t, func(e *env) {
		var app struct {
			ID    string `json:"id"`
			Draft string `json:"draft_revision_id"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", map[string]string{"name": "site", "template": "static-site"}, &app))
		base := app.Draft

		// A run that changes nothing makes no revision.
		same := e.runDetail(app.ID, e.createRun(e.tokenA, app.ID, "say nothing to do").ID)
		assert.Equal(t, "unchanged", same.Context.Result.Kind)
		assert.Empty(t, same.ResultRevisionID)
		assert.Equal(t, base, e.draft(app.ID))

		run := e.createRun(e.tokenA, app.ID, "# make it red\n"+patchLine(t, "styles.css", "body {", "body { color: red;")+"\nsay done")
		r := e.runDetail(app.ID, run.ID)
		require.Equal(t, "completed", r.Status, r.ErrorMessage)
		assert.Equal(t, "applied", r.Context.Result.Kind)
		assert.NotEmpty(t, r.ResultRevisionID)
		assert.Equal(t, r.ResultRevisionID, e.draft(app.ID), "the result is the draft head")
		types := e.eventTypes(app.ID, run.ID)
		n := len(types)
		require.GreaterOrEqual(t, n, 3)
		assert.Equal(t, []string{"revision.created", "checkpoint.created", "run.completed"}, types[n-3:])

		var got struct {
			Revision struct {
				ParentID string `json:"parent_id"`
				Source   string `json:"source"`
				RunID    string `json:"run_id"`
				IsDraft  bool   `json:"is_draft"`
			} `json:"revision"`
			Files []struct{ Path string } `json:"files"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app.ID+"/revisions/"+r.ResultRevisionID, nil, &got))
		assert.Equal(t, base, got.Revision.ParentID)
		assert.Equal(t, "run", got.Revision.Source)
		assert.Equal(t, run.ID, got.Revision.RunID)
		assert.True(t, got.Revision.IsDraft)
		assert.Len(t, got.Files, 3)
		assert.True(t, strings.HasPrefix(e.fileAt(app.ID, "draft", "styles.css"), "body { color: red;\n"))

		var diff struct {
			From  string `json:"from"`
			Files []struct{ Path, Status string }
			Diff  string `json:"diff"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app.ID+"/revisions/"+r.ResultRevisionID+"/diff", nil, &diff))
		assert.Equal(t, base, diff.From)
		require.Len(t, diff.Files, 1)
		assert.Equal(t, "styles.css", diff.Files[0].Path)
		assert.Contains(t, diff.Diff, "-body {\n+body { color: red;\n")

		// Two more runs, then restore the first checkpoint.
		first := r.Context.Result.CheckpointID
		for i, to := range []string{"body { color: blue;", "body { color: green;"} {
			from := []string{"body { color: red;", "body { color: blue;"}[i]
			rr := e.runDetail(app.ID, e.createRun(e.tokenA, app.ID, patchLine(t, "styles.css", from, to)).ID)
			require.Equal(t, "applied", rr.Context.Result.Kind, rr.ErrorMessage)
		}
		var cps struct {
			Items []struct {
				ID         string `json:"id"`
				RevisionID string `json:"revision_id"`
				IsDraft    bool   `json:"is_draft"`
				Kind       string `json:"kind"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app.ID+"/coding-agent/checkpoints", nil, &cps))
		require.Len(t, cps.Items, 4, "three runs and the app's creation")
		assert.True(t, cps.Items[0].IsDraft)
		assert.Equal(t, first, cps.Items[2].ID, "newest first")
		assert.Equal(t, "created", cps.Items[3].Kind)
		assert.Equal(t, base, cps.Items[3].RevisionID, "the app's first files")

		var restored struct {
			Draft      string `json:"draft_revision_id"`
			Checkpoint struct {
				ID   string `json:"id"`
				Kind string `json:"kind"`
			} `json:"checkpoint"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app.ID+"/coding-agent/checkpoints/"+first+"/restore", nil, &restored))
		assert.Equal(t, "restore", restored.Checkpoint.Kind)
		assert.Equal(t, restored.Draft, e.draft(app.ID))
		assert.True(t, strings.HasPrefix(e.fileAt(app.ID, "draft", "styles.css"), "body { color: red;\n"))
		var revs struct {
			Items []struct {
				ID     string `json:"id"`
				Source string `json:"source"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app.ID+"/revisions", nil, &revs))
		require.Len(t, revs.Items, 5, "base, three runs and the restore")
		assert.Equal(t, "restore", revs.Items[0].Source)

		// Another tenant sees none of it.
		var er apiError
		assert.Equal(t, http.StatusNotFound, e.do(e.tokenB, "GET", "/admin/apps/"+app.ID+"/revisions", nil, &er))
		assert.Equal(t, http.StatusNotFound, e.do(e.tokenB, "POST", "/admin/apps/"+app.ID+"/coding-agent/checkpoints/"+first+"/restore", nil, &er))
	})
}

// TestConcurrentEditMergesOrConflicts: a user's edit saved while a run works
// merges with the run's result when they touch different lines, and turns
// the run's result into an unapplied revision when they collide.
func TestConcurrentEditMergesOrConflicts(t *testing.T) {
	eachDialect(t, func(e *env) {
		var app struct {
			ID    string `json:"id"`
			Draft string `json:"draft_revision_id"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", map[string]any{"name": "x",
			"files": map[string]string{"a.txt": "one\ntwo\nthree\nfour\nfive\nsix\n", "b.txt": "b\n"}}, &app))

		edit := func(base string, files map[string]any) string {
			var out struct {
				Revision struct {
					ID string `json:"id"`
				} `json:"revision"`
			}
			require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app.ID+"/revisions",
				map[string]any{"base_revision_id": base, "files": files, "message": "by hand"}, &out))
			return out.Revision.ID
		}
		// The run waits before it patches, so the edit (a few ms) lands first
		// even on a loaded machine.
		run := e.createRun(e.tokenA, app.ID, "sleep 1s\n"+patchLine(t, "a.txt", "one", "ONE"))
		manual := edit(app.Draft, map[string]any{"b.txt": "B\n"})
		r := e.runDetail(app.ID, run.ID)
		require.Equal(t, "completed", r.Status)
		require.Equal(t, "merged", r.Context.Result.Kind)
		head := e.draft(app.ID)
		assert.Equal(t, r.ResultRevisionID, head)
		assert.Equal(t, "ONE\ntwo\nthree\nfour\nfive\nsix\n", e.fileAt(app.ID, head, "a.txt"))
		assert.Equal(t, "B\n", e.fileAt(app.ID, head, "b.txt"), "the user's edit is kept")
		_ = manual

		// Now both change the first line.
		run = e.createRun(e.tokenA, app.ID, "sleep 1s\n"+patchLine(t, "a.txt", "ONE", "uno"))
		manual = edit(head, map[string]any{"a.txt": "1\ntwo\nthree\nfour\nfive\nsix\n"})
		r = e.runDetail(app.ID, run.ID)
		require.Equal(t, "completed", r.Status, "a conflict is a result, not a failure")
		require.Equal(t, "conflict", r.Context.Result.Kind)
		require.Len(t, r.Context.Result.Conflicts, 1)
		assert.Equal(t, "a.txt", r.Context.Result.Conflicts[0].Path)
		assert.Equal(t, manual, e.draft(app.ID), "the user's edit stays the head")
		assert.Equal(t, "uno\ntwo\nthree\nfour\nfive\nsix\n", e.fileAt(app.ID, r.ResultRevisionID, "a.txt"), "the run's result is kept aside")

		// A stale edit is refused.
		var er apiError
		assert.Equal(t, http.StatusConflict, e.do(e.tokenA, "POST", "/admin/apps/"+app.ID+"/revisions",
			map[string]any{"base_revision_id": app.Draft, "files": map[string]any{"b.txt": "x"}}, &er))
		assert.Equal(t, "REVISION_CONFLICT", er.Detail.Code)
		_ = time.Second
	})
}

// TestRestoreIsToldToTheNextRun: the chat session whose checkpoint was
// restored gets a system note in its next run's history, once.
func TestRestoreIsToldToTheNextRun(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	var first struct {
		ID   string `json:"id"`
		Chat string `json:"chat_session_id"`
	}
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"prompt": patchLine(t, "index.html", "<h1>hi</h1>", "<h1>hello</h1>")}, &first))
	r := e.runDetail(app, first.ID)
	require.Equal(t, "applied", r.Context.Result.Kind, r.ErrorMessage)
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/checkpoints/"+r.Context.Result.CheckpointID+"/restore", nil, nil))

	say := func() string {
		var run struct {
			ID string `json:"id"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
			map[string]any{"prompt": "history", "chat_session_id": first.Chat}, &run))
		return e.waitRun(app, run.ID).OutputText
	}
	assert.Equal(t, "history=2 user,system", say(), "the note closes the history (the first run said nothing, so it has no turn)")
	assert.Equal(t, "history=3 user,user,assistant", say(), "told once: the note is not a stored turn")
}

// TestCreateAppFromArchive: a zip of a project folder becomes an app, its
// node_modules left out.
func TestCreateAppFromArchive(t *testing.T) {
	e := startEnv(t, "sqlite")
	var buf strings.Builder
	zw := newZip(t, map[string]string{"proj/index.html": "<p>x</p>\n", "proj/node_modules/a/index.js": "x"})
	buf.Write(zw)
	req, err := http.NewRequest("POST", e.srv.URL+"/admin/apps?name=zipped", strings.NewReader(buf.String()))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.tokenA)
	req.Header.Set("Content-Type", "application/zip")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		ID           string `json:"id"`
		FileCount    int    `json:"file_count"`
		SkippedFiles int    `json:"skipped_files"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 1, out.FileCount)
	assert.Equal(t, 1, out.SkippedFiles)
	assert.Equal(t, "<p>x</p>\n", e.fileAt(out.ID, "draft", "index.html"))

	var er apiError
	assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps", map[string]string{"name": "x", "template": "nope"}, &er))
	assert.Equal(t, "template", er.Detail.Field)
	assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps", map[string]any{"name": "x", "files": map[string]string{"../x": "y"}}, &er))
	assert.Equal(t, "files", er.Detail.Field)
}

// TestGeneratedArtifactsNeverReachARevision: build output, installed
// dependencies and caches a run leaves in its sandbox are not part of the
// revision its result becomes.
func TestGeneratedArtifactsNeverReachARevision(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		script := `tool coding_agent_run_command {"command":"mkdir -p node_modules/react dist .vite .cache/x src && echo x > node_modules/react/index.js && echo x > dist/index.js && echo x > .vite/deps && echo x > .cache/x/y && echo x > tsconfig.tsbuildinfo && echo x > .eslintcache && echo real > src/main.ts"}`
		run := e.createRun(e.tokenA, app, script)
		// run_command asks by default: allow it.
		resp := e.openStream(e.tokenA, app, run.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "permission.requested" })
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/resume", map[string]string{"decision": "allow"}, nil))
		r := e.runDetail(app, run.ID)
		require.Equal(t, "applied", r.Context.Result.Kind, r.ErrorMessage)
		var got struct {
			Files []struct{ Path string } `json:"files"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/revisions/"+r.ResultRevisionID, nil, &got))
		var paths []string
		for _, f := range got.Files {
			paths = append(paths, f.Path)
		}
		assert.Equal(t, []string{"index.html", "src/main.ts"}, paths)
	})
}
