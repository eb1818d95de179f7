package sandboxtest

import (
	"context"
	"sort"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (k *kit) testCreate(t *testing.T) {
	ctx := context.Background()
	id, ws := k.create(t, fileSet())
	for _, f := range fileSet() {
		data, fi, err := ws.ReadFile(ctx, f.Path, workspace.ReadOptions{})
		require.NoError(t, err, f.Path)
		assert.Equal(t, sum(f.Data), sum(data), "%s comes back byte for byte", f.Path)
		assert.Equal(t, sum(f.Data), fi.SHA256, f.Path)
		assert.Equal(t, int64(len(f.Data)), fi.Size, f.Path)
	}
	st, err := ws.Stat(ctx, "bin/run.sh")
	require.NoError(t, err)
	assert.Equal(t, uint32(0o755), st.Mode&0o777, "modes are kept")
	st, err = ws.Stat(ctx, "README.md")
	require.NoError(t, err)
	assert.Equal(t, uint32(0o644), st.Mode&0o777, "mode 0 means 0644")

	got, err := k.c.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, id, got.ID)
	assert.Equal(t, sandbox.StatusRunning, got.Status)
	assert.Equal(t, "chat-kit", got.ScopeKey)
	assert.False(t, got.CreatedAt.IsZero())

	_, err = k.c.Create(ctx, sandbox.CreateSpec{ID: id})
	code(t, err, plugin.CodeAlreadyExists, "create twice")
	_, err = k.c.Get(ctx, newID(t))
	code(t, err, plugin.CodeNotFound, "get an unknown id")
	assert.NoError(t, k.c.Stop(ctx, newID(t)), "stopping an unknown id is not an error")
}

func (k *kit) testCreateRefusals(t *testing.T) {
	ctx := context.Background()
	for _, p := range []string{"../../x", "/etc/passwd", "a/../../x", "nul\x00byte"} {
		id := newID(t)
		_, err := k.c.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "ok.txt"}, {Path: p, Data: []byte("x")}}})
		code(t, err, plugin.CodePathDenied, "create with file %q", p)
		_, err = k.c.Get(ctx, id)
		code(t, err, plugin.CodeNotFound, "a refused create leaves no sandbox")
	}
	id := newID(t)
	_, err := k.c.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "../x"}}})
	require.Error(t, err)
	_, err = k.c.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "x"}}})
	require.NoError(t, err, "the id of a refused create is free")
	require.NoError(t, k.c.Stop(ctx, id))

	for _, bad := range []string{"", "../evil", "a/b", ".", ".."} {
		_, err := k.c.Create(ctx, sandbox.CreateSpec{ID: bad})
		assert.Error(t, err, "sandbox id %q", bad)
	}
}

func (k *kit) testFileOps(t *testing.T) {
	ctx := context.Background()
	_, ws := k.create(t, fileSet())

	fi, err := ws.WriteFile(ctx, "new/dir/file.txt", []byte("hi"), 0)
	require.NoError(t, err, "parents are created")
	assert.Equal(t, sum([]byte("hi")), fi.SHA256)
	assert.Equal(t, "new/dir/file.txt", fi.Path)
	fi, err = ws.WriteFile(ctx, "new/dir/file.txt", []byte("replaced"), 0o600)
	require.NoError(t, err, "an existing file is replaced")
	assert.Equal(t, int64(len("replaced")), fi.Size)
	st, err := ws.Stat(ctx, "new/dir")
	require.NoError(t, err)
	assert.True(t, st.IsDir)
	st, err = ws.Stat(ctx, "new/dir/file.txt")
	require.NoError(t, err)
	assert.Equal(t, sum([]byte("replaced")), st.SHA256)
	assert.Equal(t, uint32(0o600), st.Mode&0o777)
	_, err = ws.WriteFile(ctx, "src", []byte("x"), 0)
	code(t, err, plugin.CodeIsDirectory, "write over a folder")

	entries, truncated, err := ws.List(ctx, "", workspace.ListOptions{Recursive: true, WithHashes: true})
	require.NoError(t, err)
	assert.False(t, truncated)
	byPath := map[string]workspace.FileInfo{}
	var order []string
	for _, e := range entries {
		byPath[e.Path] = e
		order = append(order, e.Path)
	}
	assert.True(t, sort.StringsAreSorted(order), "listed in path order: %v", order)
	for _, want := range []string{"README.md", "src", "src/deep", "src/deep/nested", "src/deep/nested/x.json", "empty.txt", "new/dir/file.txt", "assets/blob.bin"} {
		assert.Contains(t, byPath, want)
	}
	assert.Equal(t, sum([]byte(`{"a":1}`)), byPath["src/deep/nested/x.json"].SHA256)
	assert.Equal(t, sum(bigFile()), byPath["assets/blob.bin"].SHA256)
	assert.True(t, byPath["src/deep"].IsDir)
	assert.False(t, byPath["README.md"].IsDir)

	top, _, err := ws.List(ctx, "", workspace.ListOptions{})
	require.NoError(t, err)
	for _, e := range top {
		assert.NotContains(t, e.Path, "/", "a flat listing has only top-level entries")
	}
	sub, _, err := ws.List(ctx, "src/deep", workspace.ListOptions{})
	require.NoError(t, err)
	require.Len(t, sub, 1)
	assert.Equal(t, "src/deep/nested", sub[0].Path, "paths are relative to the root, not the folder listed")
	limited, truncated, err := ws.List(ctx, "", workspace.ListOptions{Recursive: true, Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, order[:2], []string{limited[0].Path, limited[1].Path}, "a limit keeps the first entries")
	assert.True(t, truncated)
	_, _, err = ws.List(ctx, "missing", workspace.ListOptions{})
	code(t, err, plugin.CodeNotFound, "list a missing folder")
	skipping, _, err := ws.List(ctx, "", workspace.ListOptions{Recursive: true, SkipDirs: []string{"NESTED"}})
	require.NoError(t, err)
	var skippedPaths []string
	for _, e := range skipping {
		skippedPaths = append(skippedPaths, e.Path)
	}
	assert.Contains(t, skippedPaths, "src/deep/nested", "a skipped folder is itself listed")
	assert.NotContains(t, skippedPaths, "src/deep/nested/x.json", "its contents are not (names compared ignoring case)")
	assert.Contains(t, skippedPaths, "README.md")

	require.NoError(t, ws.Rename(ctx, "README.md", "docs/README.md"), "rename creates the target's parents")
	_, err = ws.Stat(ctx, "README.md")
	code(t, err, plugin.CodeNotFound, "the source is gone")
	data, _, err := ws.ReadFile(ctx, "docs/README.md", workspace.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "# app\n", string(data))
	code(t, ws.Rename(ctx, "docs/README.md", "src/main.ts"), plugin.CodeAlreadyExists, "rename onto a file")
	code(t, ws.Rename(ctx, "missing", "elsewhere"), plugin.CodeNotFound, "rename a missing file")
	require.NoError(t, ws.Rename(ctx, "src/deep", "deep2"), "folders move too")
	_, err = ws.Stat(ctx, "deep2/nested/x.json")
	require.NoError(t, err)

	require.NoError(t, ws.Remove(ctx, "empty.txt", false))
	assert.Error(t, ws.Remove(ctx, "src", false), "a non-empty folder needs recursive")
	require.NoError(t, ws.Remove(ctx, "src", true))
	_, _, err = ws.ReadFile(ctx, "src/main.ts", workspace.ReadOptions{})
	code(t, err, plugin.CodeNotFound, "read a removed file")
	code(t, ws.Remove(ctx, "missing", true), plugin.CodeNotFound, "remove a missing file")
	code(t, ws.Remove(ctx, "", true), plugin.CodePathDenied, "remove the root")
	_, _, err = ws.ReadFile(ctx, "new", workspace.ReadOptions{})
	code(t, err, plugin.CodeIsDirectory, "read a folder")
}

func (k *kit) testLineRanges(t *testing.T) {
	ctx := context.Background()
	text := "line 1\nline 2\nline 3\n"
	_, ws := k.create(t, []sandbox.File{{Path: "t.txt", Data: []byte(text)}, {Path: "crlf.txt", Data: []byte("a\r\nb\r\nc")}})
	cases := []struct {
		path       string
		start, end int
		want       string
	}{
		{"t.txt", 0, 0, text},
		{"t.txt", 1, 1, "line 1\n"},
		{"t.txt", 2, 3, "line 2\nline 3\n"},
		{"t.txt", 3, 0, "line 3\n"},
		{"t.txt", 2, 99, "line 2\nline 3\n"},
		{"t.txt", 9, 0, ""},
		{"crlf.txt", 2, 2, "b\r\n"},
		{"crlf.txt", 3, 0, "c"},
	}
	for _, tc := range cases {
		data, fi, err := ws.ReadFile(ctx, tc.path, workspace.ReadOptions{StartLine: tc.start, EndLine: tc.end})
		require.NoError(t, err, "%s %d-%d", tc.path, tc.start, tc.end)
		assert.Equal(t, tc.want, string(data), "%s %d-%d", tc.path, tc.start, tc.end)
		if tc.path == "t.txt" {
			assert.Equal(t, sum([]byte(text)), fi.SHA256, "the hash is of the whole file")
		}
	}
	_, _, err := ws.ReadFile(ctx, "t.txt", workspace.ReadOptions{StartLine: 3, EndLine: 2})
	code(t, err, plugin.CodeInvalidArgument, "an inverted range")
}

func (k *kit) testConfinement(t *testing.T) {
	ctx := context.Background()
	_, ws := k.create(t, fileSet())
	// Symlinks made by a command, then used through the file API.
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c",
		"ln -s / escape && ln -s /etc/hostname hostlink && ln -s /etc etcdir && ln -s src/main.ts inlink && ln -s src srclink"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))

	for _, p := range []string{
		"../escape", "a/../../escape", "/etc/passwd", "src/\x00x", `..\x`,
		"escape/etc/hostname", "hostlink", "etcdir/hostname", "srclink/../../x",
	} {
		_, _, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
		code(t, err, plugin.CodePathDenied, "read %q", p)
		_, err = ws.WriteFile(ctx, p, []byte("owned"), 0)
		code(t, err, plugin.CodePathDenied, "write %q", p)
		_, err = ws.Stat(ctx, p)
		code(t, err, plugin.CodePathDenied, "stat %q", p)
		code(t, ws.Remove(ctx, p+"/x", true), plugin.CodePathDenied, "remove under %q", p)
		code(t, ws.Rename(ctx, "src/main.ts", p+"/x"), plugin.CodePathDenied, "rename into %q", p)
	}
	for _, p := range []string{"escape", "escape/etc", "etcdir"} {
		_, _, err := ws.List(ctx, p, workspace.ListOptions{})
		code(t, err, plugin.CodePathDenied, "list %q", p)
		_, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}, Dir: p})
		code(t, err, plugin.CodePathDenied, "exec in %q", p)
	}

	data, fi, err := ws.ReadFile(ctx, "inlink", workspace.ReadOptions{})
	require.NoError(t, err, "a symlink inside the workspace is fine")
	assert.Equal(t, "line 1\nline 2\nline 3\n", string(data))
	assert.Equal(t, "src/main.ts", fi.Path, "reported under its real path")
	_, err = ws.Stat(ctx, "srclink/deep/nested/x.json")
	require.NoError(t, err, "a folder symlink inside the workspace is fine")

	require.NoError(t, ws.Remove(ctx, "hostlink", false), "a link pointing out can be removed")
	require.NoError(t, ws.Remove(ctx, "inlink", false))
	_, err = ws.Stat(ctx, "src/main.ts")
	require.NoError(t, err, "removing a link leaves its target")
	res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"cat", "/etc/hostname"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "the host file is untouched: %s", res.Stderr)
}

func (k *kit) testSnapshot(t *testing.T) {
	ctx := context.Background()
	files := append(fileSet(),
		sandbox.File{Path: "node_modules/pkg/index.js", Data: []byte("x")},
		sandbox.File{Path: "dist/app.js", Data: []byte("x")},
		sandbox.File{Path: "tsconfig.tsbuildinfo", Data: []byte("x")},
		sandbox.File{Path: "src/dist/nested-dist.js", Data: []byte("x")},
		sandbox.File{Path: "src/node_modules/x.js", Data: []byte("x")})
	id, ws := k.create(t, files)
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "ln -s / escape && ln -s README.md readme-link && echo made > made.txt"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))

	got, err := k.c.Snapshot(ctx, id, []string{"node_modules", "dist", "*.tsbuildinfo"})
	require.NoError(t, err)
	var paths []string
	byPath := map[string]sandbox.File{}
	for _, f := range got {
		paths = append(paths, f.Path)
		byPath[f.Path] = f
	}
	assert.Equal(t, []string{"README.md", "assets/blob.bin", "bin/run.sh", "empty.txt", "made.txt", "src/deep/nested/x.json", "src/main.ts"}, paths,
		"files only, in path order, without excluded paths or symlinks")
	assert.Equal(t, sum(bigFile()), sum(byPath["assets/blob.bin"].Data), "large files survive chunking")
	assert.Equal(t, "made\n", string(byPath["made.txt"].Data), "files made by commands are included")
	assert.Equal(t, uint32(0o755), byPath["bin/run.sh"].Mode&0o777, "modes are kept")
	assert.Empty(t, byPath["empty.txt"].Data)

	all, err := k.c.Snapshot(ctx, id, nil)
	require.NoError(t, err)
	assert.Len(t, all, len(paths)+5, "nothing is excluded without patterns")
	_, err = k.c.Snapshot(ctx, newID(t), nil)
	code(t, err, plugin.CodeNotFound, "snapshot an unknown id")
}

func (k *kit) testExposePort(t *testing.T) {
	ctx := context.Background()
	id, _ := k.create(t, nil)
	ep, err := k.c.ExposePort(ctx, id, 5173)
	if plugin.HasCode(err, plugin.CodeUnsupported) {
		t.Skip("the backend does not expose ports")
	}
	require.NoError(t, err)
	assert.NotEmpty(t, ep.Address)
	assert.NotEmpty(t, ep.URL)
	_, err = k.c.ExposePort(ctx, newID(t), 5173)
	code(t, err, plugin.CodeNotFound, "expose a port of an unknown sandbox")
}
