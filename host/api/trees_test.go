package api_test

import (
	"archive/tar"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTar builds a tar archive of regular files, in the order given.
func newTar(t testing.TB, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, n := range names {
		require.NoError(t, w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
		_, err := w.Write([]byte("x"))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// TestAppTreesASandboxCanHold: creation (inline or archive) and a saved
// edit refuse a tree no sandbox can hold — ".", a file that is also a
// folder, names that are not UTF-8 or too long, a file in the way of the
// host's contract file — with 400 INVALID_REQUEST, field "files" and the
// path in the message. Such apps used to be stored, then every run failed
// SANDBOX_ERROR.
func TestAppTreesASandboxCanHold(t *testing.T) {
	eachDialect(t, func(e *env) {
		t := e.t.(*testing.T)
		long := strings.Repeat("n", 256)
		for _, tc := range []struct {
			name        string
			contentType string
			body        []byte
			path        string // the path the message must name
		}{
			{name: "inline dot", body: []byte(`{"name":"n","files":{".":"x"}}`), path: `"."`},
			{name: "inline file and folder", body: []byte(`{"name":"n","files":{"a":"x","a/b":"y"}}`), path: `"a"`},
			{name: "inline name over 255 bytes", body: []byte(`{"name":"n","files":{"d/` + long + `":"x"}}`), path: long},
			{name: "tar file and folder", contentType: "application/x-tar", body: newTar(t, "a", "a/b"), path: `"a/b"`},
			{name: "tar folder then file", contentType: "application/x-tar", body: newTar(t, "x/a/b", "x/a"), path: `"a/b"`},
			{name: "tar invalid UTF-8 name", contentType: "application/x-tar", body: newTar(t, "ok.txt", "bad\xff.txt"), path: `bad\xff.txt`},
			{name: "tar dot", contentType: "application/x-tar", body: newTar(t, ".", "b.txt"), path: `"."`},
			{name: "zip file and folder", contentType: "application/zip", body: newZip(t, map[string]string{"a": "x", "a/b": "y"}), path: `"a/b"`},
			{name: "zip invalid UTF-8 name", contentType: "application/zip", body: newZip(t, map[string]string{"ok.txt": "x", "bad\xff.txt": "y"}), path: `bad\xff.txt`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				path := "/admin/apps"
				headers := map[string]string{}
				if tc.contentType != "" {
					path += "?name=n"
					headers["Content-Type"] = tc.contentType
				}
				status, er, raw := e.rawRequest("POST", path, tc.body, headers)
				require.Equal(t, http.StatusBadRequest, status, "%s", raw)
				assert.Equal(t, "INVALID_REQUEST", er.Detail.Code)
				assert.Equal(t, "files", er.Detail.Field)
				assert.Contains(t, er.Detail.Message, tc.path)
			})
		}
		var apps struct{ Items []struct{ ID string } }
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps", nil, &apps))
		assert.Empty(t, apps.Items, "no refused tree left an app behind")

		// Saving an edit checks the whole tree it makes.
		app := e.createApp(e.tokenA)
		for _, tc := range []struct {
			name   string
			files  map[string]any
			status int
			path   string
		}{
			{name: "folder over a file of the draft", files: map[string]any{"index.html/x": "y"}, status: http.StatusBadRequest, path: `"index.html"`},
			{name: "dot", files: map[string]any{".": "y"}, status: http.StatusBadRequest, path: `"."`},
			{name: "in the way of the contract file", files: map[string]any{".cache": "y"}, status: http.StatusBadRequest, path: `".cache"`},
			{name: "the contract file itself", files: map[string]any{".cache/agenthost/selected_agent_contract.json": "{}"}, status: http.StatusBadRequest, path: "selected_agent_contract.json"},
			// Replacing the file by a folder of that name in one edit is fine.
			{name: "file becomes a folder", files: map[string]any{"index.html": nil, "index.html/x": "y"}, status: http.StatusCreated},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var a struct {
					Draft string `json:"draft_revision_id"`
				}
				require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app, nil, &a))
				var er apiError
				status := e.do(e.tokenA, "POST", "/admin/apps/"+app+"/revisions", map[string]any{"base_revision_id": a.Draft, "files": tc.files}, &er)
				require.Equal(t, tc.status, status, er.Detail.Message)
				if tc.status == http.StatusBadRequest {
					assert.Equal(t, "INVALID_REQUEST", er.Detail.Code)
					assert.Equal(t, "files", er.Detail.Field)
					assert.Contains(t, er.Detail.Message, tc.path)
				}
			})
		}
		assert.Equal(t, "y", e.fileAt(app, "draft", "index.html/x"))
	})
}

// TestInlineAppsSkipGeneratedFolders: an app made from inline files leaves
// out version control and generated folders exactly as an archive upload
// does, and says how many it left out.
func TestInlineAppsSkipGeneratedFolders(t *testing.T) {
	eachDialect(t, func(e *env) {
		t := e.t.(*testing.T)
		var out struct {
			ID           string `json:"id"`
			FileCount    int    `json:"file_count"`
			SkippedFiles int    `json:"skipped_files"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", map[string]any{"name": "n", "files": map[string]string{
			"index.html": "<p>x</p>", ".git/config": "[core]", ".git/HEAD": "ref", "node_modules/x/i.js": "x", "dist/app.js": "x",
			"src/.cache/y": "y", "app.tsbuildinfo": "{}", "src/main.ts": "m",
		}}, &out))
		assert.Equal(t, 2, out.FileCount)
		assert.Equal(t, 6, out.SkippedFiles)
		var rev struct {
			Files []struct{ Path string } `json:"files"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+out.ID+"/revisions/draft", nil, &rev))
		var paths []string
		for _, f := range rev.Files {
			paths = append(paths, f.Path)
		}
		assert.Equal(t, []string{"index.html", "src/main.ts"}, paths)
	})
}

// TestEveryListChecksItsCursor: ?cursor= and ?limit= mean the same on every
// list route: garbage is 400 on the field, and a cursor pages.
func TestEveryListChecksItsCursor(t *testing.T) {
	eachDialect(t, func(e *env) {
		t := e.t.(*testing.T)
		app := e.createApp(e.tokenA)
		e.createApp(e.tokenA)
		for _, name := range []string{"one", "two"} {
			require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/agents", map[string]any{"name": name}, nil))
			require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/chat-sessions", map[string]any{"title": name}, nil))
		}
		lists := []string{"/admin/apps", "/admin/agents", "/admin/apps/" + app + "/revisions",
			"/admin/apps/" + app + "/coding-agent/checkpoints", "/admin/apps/" + app + "/coding-agent/chat-sessions",
			"/admin/apps/" + app + "/coding-agent/runs"}
		for _, list := range lists {
			for _, q := range []struct{ query, field string }{
				{"cursor=garbage!", "cursor"}, {"cursor=..%2Fx", "cursor"}, {"cursor=" + strings.Repeat("c", 101), "cursor"},
				{"limit=0", "limit"}, {"limit=201", "limit"}, {"limit=x", "limit"},
			} {
				var er apiError
				assert.Equal(t, http.StatusBadRequest, e.doInvalid(e.tokenA, "GET", list+"?"+q.query, nil, &er), "%s?%s", list, q.query)
				assert.Equal(t, "INVALID_REQUEST", er.Detail.Code, "%s?%s", list, q.query)
				assert.Equal(t, q.field, er.Detail.Field, "%s?%s", list, q.query)
			}
		}
		// The lists that used to ignore the cursor now page with it.
		for _, list := range lists[:2] {
			var first, second struct {
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
				Next string `json:"next_cursor"`
			}
			require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", list+"?limit=1", nil, &first), list)
			require.Len(t, first.Items, 1, list)
			require.NotEmpty(t, first.Next, list)
			require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", list+"?limit=1&cursor="+first.Next, nil, &second), list)
			require.Len(t, second.Items, 1, list)
			assert.NotEqual(t, first.Items[0].ID, second.Items[0].ID, list)
		}
		var chats struct {
			Items []struct{ ID string } `json:"items"`
			Next  string                `json:"next_cursor"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", lists[4]+"?limit=1", nil, &chats))
		require.Len(t, chats.Items, 1)
		first := chats.Items[0].ID
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", lists[4]+"?limit=1&cursor="+chats.Next, nil, &chats))
		require.Len(t, chats.Items, 1)
		assert.NotEqual(t, first, chats.Items[0].ID)
		assert.Empty(t, chats.Next, "two sessions make two pages of one")
	})
}
