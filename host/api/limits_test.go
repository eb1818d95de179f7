package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testFileLimit is the per-file limit of these tests: small, so no test
// writes large data.
const testFileLimit = 1 << 20

// eachDialectLimited runs fn on both dialects with a host whose file limits
// are small.
func eachDialectLimited(t *testing.T, maxFiles int, fn func(e *env)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			fn(startEnvIn(t, d, testenv.PluginConfigDir(t, "mock", "local", "patch"), func(h *config.Host) {
				h.MaxFileBytes, h.MaxWorkspaceBytes, h.MaxFiles = testFileLimit, 8*testFileLimit, maxFiles
			}))
		})
	}
}

// runAllowing runs a mock script whose commands ask permission, allowing
// them, and returns the finished run.
func (e *env) runAllowing(app, script string) runDetail {
	e.t.Helper()
	run := e.createRun(e.tokenA, app, script)
	resp := e.openStream(e.tokenA, app, run.ID, "")
	readSSE(e.t, resp, func(f frame) bool { return f.Event == "permission.requested" })
	resp.Body.Close()
	require.Equal(e.t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/resume", map[string]string{"decision": "allow"}, nil))
	return e.runDetail(app, run.ID)
}

type loggedEvent struct {
	Event       string          `json:"event"`
	Payload     json.RawMessage `json:"payload"`
	Diagnostics json.RawMessage `json:"diagnostics"`
}

func (e *env) events(app, id string) []loggedEvent {
	e.t.Helper()
	var page struct {
		Items []loggedEvent `json:"items"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+id+"/events?limit=500", nil, &page))
	return page.Items
}

type leftOut struct{ Path, Reason string }

// warnings returns the left_out lists of a run's warning events.
func (e *env) warnings(app, id string) []leftOut {
	e.t.Helper()
	var out []leftOut
	for _, ev := range e.events(app, id) {
		var p struct {
			Stage   string    `json:"stage"`
			LeftOut []leftOut `json:"left_out"`
		}
		require.NoError(e.t, json.Unmarshal(ev.Payload, &p))
		if ev.Event == "run.status" && p.Stage == "warning" {
			out = append(out, p.LeftOut...)
		}
	}
	return out
}

func (e *env) revisionPaths(app, rev string) map[string]int64 {
	e.t.Helper()
	var got struct {
		Files []struct {
			Path string `json:"path"`
			Size int64  `json:"size"`
		} `json:"files"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/revisions/"+rev, nil, &got))
	out := map[string]int64{}
	for _, f := range got.Files {
		out[f.Path] = f.Size
	}
	return out
}

// TestRunWritingAnOversizedFileIsNotApplied: a command that writes a file
// over the host's limit does not brick the app: the run fails
// RESULT_TOO_LARGE naming the file, the draft is as it was, and the next run
// works.
func TestRunWritingAnOversizedFileIsNotApplied(t *testing.T) {
	eachDialectLimited(t, 0, func(e *env) {
		app := e.createApp(e.tokenA)
		before := e.draft(app)
		r := e.runAllowing(app, `tool coding_agent_run_command {"command":"head -c 3000000 /dev/zero > big.bin; echo ok > small.txt"}`)
		assert.Equal(t, "failed", r.Status)
		var got runOut
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+r.ID, nil, &got))
		assert.Equal(t, "RESULT_TOO_LARGE", got.ErrorCode)
		assert.Contains(t, r.ErrorMessage, "big.bin")
		assert.Equal(t, before, e.draft(app), "the draft is unchanged")
		evs := e.events(app, r.ID)
		last := evs[len(evs)-1]
		require.Equal(t, "run.failed", last.Event)
		assert.Contains(t, string(last.Diagnostics), "big.bin", "the diagnostics name the file")

		next := e.createRun(e.tokenA, app, patchLine(t, "index.html", "<h1>hi</h1>", "<h1>next</h1>"))
		d := e.runDetail(app, next.ID)
		require.Equal(t, "completed", d.Status, d.ErrorMessage)
		assert.Equal(t, "applied", d.Context.Result.Kind)
		assert.Equal(t, "<h1>next</h1>\n", e.fileAt(app, d.ResultRevisionID, "index.html"))
		assert.NotContains(t, e.revisionPaths(app, d.ResultRevisionID), "big.bin")
	})
}

// TestAppHoldingAnOversizedFileStillRuns: an app that holds a file over
// the limits (stored before them, or before the operator lowered them) is
// run without it, with a warning; the run's result keeps it, and an edit
// can remove it.
func TestAppHoldingAnOversizedFileStillRuns(t *testing.T) {
	eachDialectLimited(t, 0, func(e *env) {
		app := e.createApp(e.tokenA)
		ctx := context.Background()
		head := e.draft(app)
		files, err := e.h.Store.RevisionFiles(ctx, head)
		require.NoError(t, err)
		files = append(files, sandbox.File{Path: "media/big.bin", Data: make([]byte, 2*testFileLimit)})
		rev, _, err := e.h.Store.CreateRevision(ctx, store.NewRevision{ID: "rev_big_" + strings.ReplaceAll(t.Name(), "/", "_"), AppID: app, ParentID: head,
			Source: "manual", Message: "from before the limits", Files: files, AdvanceDraft: true, DraftFrom: head})
		require.NoError(t, err)

		run := e.createRun(e.tokenA, app, patchLine(t, "index.html", "<h1>hi</h1>", "<h1>next</h1>"))
		d := e.runDetail(app, run.ID)
		require.Equal(t, "completed", d.Status, d.ErrorMessage)
		assert.Equal(t, "applied", d.Context.Result.Kind)
		w := e.warnings(app, run.ID)
		require.Len(t, w, 1, "one warning names the file kept out")
		assert.Equal(t, "media/big.bin", w[0].Path)
		paths := e.revisionPaths(app, d.ResultRevisionID)
		assert.Equal(t, int64(2*testFileLimit), paths["media/big.bin"], "the result does not delete what it never saw")
		assert.Equal(t, "<h1>next</h1>\n", e.fileAt(app, d.ResultRevisionID, "index.html"))

		// A chat's second run takes the warm sandbox holding the first
		// one's result, without reading the app's files: the file kept out
		// then is named again, and kept again.
		first := e.mockTurn(app, "", patchLine(t, "index.html", "<h1>next</h1>", "<h1>chat</h1>"))
		require.Equal(t, "run.completed", first.terminal, first.payload)
		second := e.mockTurn(app, first.chatID, patchLine(t, "index.html", "<h1>chat</h1>", "<h1>warm</h1>"))
		require.Equal(t, "run.completed", second.terminal, second.payload)
		assert.True(t, second.ready.Reused, "the chat's sandbox is reused")
		w = e.warnings(app, second.runID)
		require.Len(t, w, 1, "the warm run names the file kept out too")
		assert.Equal(t, "media/big.bin", w[0].Path)
		d2 := e.runDetail(app, second.runID)
		require.Equal(t, "applied", d2.Context.Result.Kind)
		assert.Equal(t, int64(2*testFileLimit), e.revisionPaths(app, d2.ResultRevisionID)["media/big.bin"], "nor does a warm run's")
		assert.Equal(t, "<h1>warm</h1>\n", e.fileAt(app, d2.ResultRevisionID, "index.html"))

		// An edit that keeps the file is fine; one that removes it too.
		head = e.draft(app)
		require.NotEqual(t, rev.ID, head)
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/revisions",
			map[string]any{"base_revision_id": head, "files": map[string]any{"index.html": "<h1>edited</h1>\n"}}, nil))
		head = e.draft(app)
		var er apiError
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/revisions",
			map[string]any{"base_revision_id": head, "files": map[string]any{"media/big.bin": nil}}, &er), "%+v", er)
		assert.NotContains(t, e.revisionPaths(app, e.draft(app)), "media/big.bin")
	})
}

// TestRunLeavesOutWhatCannotBeStored: a file whose name is not UTF-8 and a
// symlink made by a command do not fail the run: everything else is
// applied, and what was left out is reported in the result and a warning.
func TestRunLeavesOutWhatCannotBeStored(t *testing.T) {
	eachDialectLimited(t, 0, func(e *env) {
		app := e.createApp(e.tokenA)
		r := e.runAllowing(app, `tool coding_agent_run_command {"command":"printf x > \"$(printf 'bad\\377.txt')\"; ln -s index.html link.html; echo good > good.txt"}`)
		require.Equal(t, "completed", r.Status, r.ErrorMessage)
		assert.Equal(t, "applied", r.Context.Result.Kind)
		paths := e.revisionPaths(app, r.ResultRevisionID)
		assert.Contains(t, paths, "good.txt")
		assert.Contains(t, paths, "index.html")
		assert.Len(t, paths, 2)

		var full struct {
			Context struct {
				Result struct {
					LeftOut []leftOut `json:"left_out"`
				} `json:"result"`
			} `json:"context"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+r.ID, nil, &full))
		want := []leftOut{{Path: `"bad\xff.txt"`, Reason: "the name is not valid UTF-8"}, {Path: "link.html", Reason: "symlink"}}
		assert.ElementsMatch(t, want, full.Context.Result.LeftOut)
		assert.ElementsMatch(t, want, e.warnings(app, r.ID))
	})
}

// TestFilesOverTheLimitsAreRefused: creating an app, uploading one and
// saving an edit answer 413 FILES_TOO_LARGE naming the file, and store
// nothing.
func TestFilesOverTheLimitsAreRefused(t *testing.T) {
	eachDialectLimited(t, 3, func(e *env) {
		big := strings.Repeat("x", testFileLimit+1)
		var er apiError
		assert.Equal(t, http.StatusRequestEntityTooLarge, e.do(e.tokenA, "POST", "/admin/apps",
			map[string]any{"name": "x", "files": map[string]string{"a.txt": "a", "big.txt": big}}, &er))
		assert.Equal(t, "FILES_TOO_LARGE", er.Detail.Code)
		assert.Equal(t, "files.big.txt", er.Detail.Field)
		assert.Contains(t, er.Detail.Message, "big.txt")

		er = apiError{}
		assert.Equal(t, http.StatusRequestEntityTooLarge, e.do(e.tokenA, "POST", "/admin/apps",
			map[string]any{"name": "x", "files": map[string]string{"a": "", "b": "", "c": "", "d": ""}}, &er))
		assert.Equal(t, "FILES_TOO_LARGE", er.Detail.Code, "max_files is 3")

		req, err := http.NewRequest("POST", e.srv.URL+"/admin/apps?name=zipped", strings.NewReader(string(newZip(t, map[string]string{"big.txt": big}))))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.tokenA)
		req.Header.Set("Content-Type", "application/zip")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		er = apiError{}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&er))
		resp.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "an upload is held to the same limits")
		assert.Equal(t, "FILES_TOO_LARGE", er.Detail.Code)
		assert.Equal(t, "files.big.txt", er.Detail.Field, "the entry is named")

		var apps struct{ Items []struct{ ID string } }
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps", nil, &apps))
		assert.Empty(t, apps.Items, "nothing was stored")

		app := e.createApp(e.tokenA)
		er = apiError{}
		assert.Equal(t, http.StatusRequestEntityTooLarge, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/revisions",
			map[string]any{"base_revision_id": e.draft(app), "files": map[string]any{"big.txt": big}}, &er))
		assert.Equal(t, "FILES_TOO_LARGE", er.Detail.Code)
	})
}
