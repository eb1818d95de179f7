package patch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/outline"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var indexedApp = map[string]string{
	"package.json":        `{"name":"demo","scripts":{"build":"vite build"}}` + "\n",
	"index.html":          "<div id=\"root\"></div>\n",
	"src/App.tsx":         "export function App() {\n  return <LoginButton />\n}\n",
	"src/Login.tsx":       "export const LoginButton = () => {\n  const handleLogin = () => {}\n  return <button onClick={handleLogin}>Log in</button>\n}\n",
	"src/styles.css":      ".btn { color: red }\n",
	"assets/logo.png":     "\x89PNG\x00\x00",
	"node_modules/x/i.js": "module.exports = 1\n",
	"dist/index.js":       "built\n",
	"src/.git/hidden":     "x\n",
	"server/main.go":      "package main\n\nfunc main() {}\n",
	"scripts/tool.py":     "def run():\n    pass\n",
}

func TestWorkspaceIndex(t *testing.T) {
	ws, _ := realWorkspace(t, indexedApp)
	var out workspaceIndexOutput
	res := callOn(t, ws, "coding_agent_workspace_index", `{}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	byPath := map[string]indexedFile{}
	var paths []string
	for _, f := range out.Files {
		byPath[f.Path] = f
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"assets/logo.png", "index.html", "package.json", "scripts/tool.py", "server/main.go", "src/App.tsx", "src/Login.tsx", "src/styles.css"}, paths,
		"blocked folders are not walked")
	assert.ElementsMatch(t, []string{"dist", "node_modules", "src/.git"}, out.SkippedFolders)
	assert.False(t, out.Truncated)

	app := byPath["src/App.tsx"]
	assert.Equal(t, sha(indexedApp["src/App.tsx"]), app.SHA256)
	assert.Equal(t, int64(len(indexedApp["src/App.tsx"])), app.Size)
	assert.Equal(t, "tsx", app.Language)
	require.NotEmpty(t, app.Symbols)
	assert.Equal(t, outline.Symbol{Name: "App", Kind: "component", Line: 1}, app.Symbols[0], "a capitalised function in TSX is a component")
	assert.NotEmpty(t, byPath["src/Login.tsx"].Symbols)
	assert.NotEmpty(t, byPath["server/main.go"].Symbols)
	assert.NotEmpty(t, byPath["scripts/tool.py"].Symbols)
	assert.NotEmpty(t, byPath["src/styles.css"].Symbols)
	logo := byPath["assets/logo.png"]
	assert.True(t, logo.Binary)
	assert.Empty(t, logo.Symbols)
	assert.Equal(t, sha(indexedApp["assets/logo.png"]), logo.SHA256)

	// Without outlines the workspace supplies the hashes.
	res = callOn(t, ws, "coding_agent_workspace_index", `{"outline":false,"path":"src","max_files":2}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	require.Len(t, out.Files, 2)
	assert.True(t, out.Truncated)
	assert.Equal(t, "src/App.tsx", out.Files[0].Path)
	assert.Equal(t, sha(indexedApp["src/App.tsx"]), out.Files[0].SHA256)
	assert.Empty(t, out.Files[0].Symbols)

	requireFailure(t, callOn(t, ws, "coding_agent_workspace_index", `{"path":"node_modules"}`, nil), CodePolicyViolation, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_workspace_index", `{"path":"../"}`, nil), CodePolicyViolation, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_workspace_index", `{"max_files":0}`, nil), CodeInputInvalid, "max_files")
}

func TestCollectContext(t *testing.T) {
	ws, _ := realWorkspace(t, indexedApp)
	var out collectContextOutput
	res := callOn(t, ws, "coding_agent_collect_context", `{"query":"login button handler","budget_bytes":2048}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	require.NotEmpty(t, out.Windows)
	assert.Equal(t, "src/Login.tsx", out.Windows[0].Path, "the handler's file ranks first")
	assert.Contains(t, out.Windows[0].Content, "handleLogin")
	assert.LessOrEqual(t, out.UsedBytes, 2048)
	require.NotEmpty(t, out.Index)
	hitFirst := out.Index[0].Path == out.Windows[0].Path || out.Index[0].Path == "src/App.tsx"
	assert.True(t, hitFirst, "files with windows lead the index: %+v", out.Index)
	for _, f := range out.Index {
		assert.NotContains(t, f.Path, "node_modules")
	}

	res = callOn(t, ws, "coding_agent_collect_context", `{"query":"zzzqqq nothing matches"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Empty(t, out.Windows)
	assert.NotEmpty(t, out.Index, "the index still helps")

	requireFailure(t, callOn(t, ws, "coding_agent_collect_context", `{"query":"x","budget_bytes":10}`, nil), CodeInputInvalid, "budget_bytes")
	requireFailure(t, callOn(t, ws, "coding_agent_collect_context", `{}`, nil), CodeInputInvalid, "query")
}

// indexEntry indexes ws and returns the entry of path p.
func indexEntry(t *testing.T, ws *dirfs.FS, p string) indexedFile {
	t.Helper()
	var out workspaceIndexOutput
	res := callOn(t, ws, "coding_agent_workspace_index", `{}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	for _, f := range out.Files {
		if f.Path == p {
			return f
		}
	}
	t.Fatalf("%s is not in the index", p)
	return indexedFile{}
}

// TestWorkspaceIndexSeesChangedFile: a file rewritten with the same size
// and its modification time put back shows its new hash and outline, even
// once both layers of cache (the workspace's hashes, the toolpack's
// outlines) hold the old ones.
func TestWorkspaceIndexSeesChangedFile(t *testing.T) {
	before, after := "export function Alpha() {}\n", "export function Bravo() {}\n"
	require.Len(t, after, len(before))
	ws, dir := realWorkspace(t, map[string]string{"src/a.ts": before, "src/b.ts": "export const B = 1\n"})
	full := filepath.Join(dir, "src", "a.ts")
	fi, err := os.Stat(full)
	require.NoError(t, err)
	// dirfs caches no hash of a file changed within the last 2 s (its
	// racy window); wait it out so that the cached path is the one tested.
	time.Sleep(2100 * time.Millisecond)

	for range 2 { // the second call is served from the caches
		a := indexEntry(t, ws, "src/a.ts")
		assert.Equal(t, sha(before), a.SHA256)
		require.NotEmpty(t, a.Symbols)
		assert.Equal(t, "Alpha", a.Symbols[0].Name)
	}

	require.NoError(t, os.WriteFile(full, []byte(after), 0o644))
	require.NoError(t, os.Chtimes(full, fi.ModTime(), fi.ModTime()))
	a := indexEntry(t, ws, "src/a.ts")
	assert.Equal(t, int64(len(after)), a.Size)
	assert.Equal(t, sha(after), a.SHA256, "a changed file never shows its old hash")
	require.NotEmpty(t, a.Symbols)
	assert.Equal(t, "Bravo", a.Symbols[0].Name, "nor its old outline")

	// And back: the old content's cached outline is right for it again.
	require.NoError(t, os.WriteFile(full, []byte(before), 0o644))
	a = indexEntry(t, ws, "src/a.ts")
	assert.Equal(t, sha(before), a.SHA256)
	assert.Equal(t, "Alpha", a.Symbols[0].Name)
}

// TestWorkspaceIndexWorkspacesApart: one toolpack indexing two workspaces
// that hold different content at the same path gives each its own.
func TestWorkspaceIndexWorkspacesApart(t *testing.T) {
	one, _ := realWorkspace(t, map[string]string{"src/a.ts": "export function One() {}\n"})
	two, _ := realWorkspace(t, map[string]string{"src/a.ts": "export function Two() {}\n"})
	for range 2 {
		a, b := indexEntry(t, one, "src/a.ts"), indexEntry(t, two, "src/a.ts")
		assert.Equal(t, sha("export function One() {}\n"), a.SHA256)
		assert.Equal(t, "One", a.Symbols[0].Name)
		assert.Equal(t, sha("export function Two() {}\n"), b.SHA256)
		assert.Equal(t, "Two", b.Symbols[0].Name)
	}
}

func TestOutlineCacheBounded(t *testing.T) {
	c := newOutlineCache(3)
	key := func(i int) outlineKey { return outlineKey{sha: fmt.Sprint(i), language: "ts", maxSymbols: 50} }
	for i := range 3 {
		c.put(key(i), outlineEntry{symbols: []outline.Symbol{{Name: fmt.Sprint(i)}}})
	}
	_, ok := c.get(key(0))
	require.True(t, ok)
	for i := 3; i < 100; i++ {
		c.put(key(i), outlineEntry{})
		assert.LessOrEqual(t, c.len(), 2*3, "two generations at most")
	}
	_, ok = c.get(key(0))
	assert.False(t, ok, "an entry unused for two generations is dropped")
	e, ok := c.get(key(99))
	assert.True(t, ok, "the newest entry is kept")
	assert.Empty(t, e.symbols)
	_, ok = c.get(outlineKey{sha: "99", language: "ts", maxSymbols: 10})
	assert.False(t, ok, "another symbol cap is another outline")
}
