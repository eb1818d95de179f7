package toolpacktest

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestWS(t *testing.T) *memWorkspace {
	t.Helper()
	ws, err := newMemWorkspace(map[string]string{
		"src/main.ts":   "one\ntwo\nthree\n",
		"src/lib/a.ts":  "a",
		"README.md":     "# hi",
		"./docs//x.txt": "x",
	})
	require.NoError(t, err)
	return ws
}

func TestMemWorkspaceConfinesPaths(t *testing.T) {
	ws := newTestWS(t)
	ctx := t.Context()
	for _, p := range []string{"/etc/passwd", "../x", "a/../../x", "..", "x\x00y", `a\b`} {
		_, _, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "ReadFile(%q): %v", p, err)
		_, err = ws.WriteFile(ctx, p, nil, 0)
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "WriteFile(%q): %v", p, err)
		_, err = ws.Stat(ctx, p)
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "Stat(%q): %v", p, err)
	}
	data, _, err := ws.ReadFile(ctx, "src/lib/../main.ts", workspace.ReadOptions{})
	require.NoError(t, err, "a .. that stays inside is fine")
	assert.Equal(t, "one\ntwo\nthree\n", string(data))
}

func TestMemWorkspaceReadFile(t *testing.T) {
	ws := newTestWS(t)
	ctx := t.Context()
	cases := []struct {
		path       string
		start, end int
		want, code string
	}{
		{path: "src/main.ts", want: "one\ntwo\nthree\n"},
		{path: "src/main.ts", start: 2, want: "two\nthree\n"},
		{path: "src/main.ts", start: 2, end: 2, want: "two\n"},
		{path: "src/main.ts", end: 9, want: "one\ntwo\nthree\n"},
		{path: "src/main.ts", start: 4, want: ""},
		{path: "src/main.ts", start: 3, end: 2, code: plugin.CodeInvalidArgument},
		{path: "docs/x.txt", want: "x"},
		{path: "nope", code: plugin.CodeNotFound},
		{path: "src", code: plugin.CodeIsDirectory},
		{path: "", code: plugin.CodeIsDirectory},
	}
	for _, tc := range cases {
		data, fi, err := ws.ReadFile(ctx, tc.path, workspace.ReadOptions{StartLine: tc.start, EndLine: tc.end})
		if tc.code != "" {
			assert.True(t, plugin.HasCode(err, tc.code), "%+v: %v", tc, err)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.want, string(data), "%+v", tc)
		assert.Equal(t, hashOf([]byte(mustRead(t, ws, tc.path))), fi.SHA256, "FileInfo describes the whole file")
	}
}

func mustRead(t *testing.T, ws workspace.Workspace, p string) string {
	t.Helper()
	data, _, err := ws.ReadFile(context.Background(), p, workspace.ReadOptions{})
	require.NoError(t, err)
	return string(data)
}

func TestMemWorkspaceWriteStatListRemoveRename(t *testing.T) {
	ws := newTestWS(t)
	ctx := t.Context()

	fi, err := ws.WriteFile(ctx, "new/deep/f.sh", []byte("run"), 0o755)
	require.NoError(t, err)
	assert.Equal(t, uint32(0o755), fi.Mode)
	st, err := ws.Stat(ctx, "new/deep/f.sh")
	require.NoError(t, err)
	assert.Equal(t, fi, st)
	st, err = ws.Stat(ctx, "new")
	require.NoError(t, err)
	assert.True(t, st.IsDir)

	_, err = ws.WriteFile(ctx, "README.md/x", nil, 0)
	assert.True(t, plugin.HasCode(err, plugin.CodeAlreadyExists), "a file cannot hold a file: %v", err)
	_, err = ws.WriteFile(ctx, "src", nil, 0)
	assert.True(t, plugin.HasCode(err, plugin.CodeIsDirectory), "%v", err)

	entries, truncated, err := ws.List(ctx, "src", workspace.ListOptions{})
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.Equal(t, []string{"src/lib", "src/main.ts"}, paths(entries))
	entries, _, err = ws.List(ctx, "", workspace.ListOptions{Recursive: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "docs", "docs/x.txt", "new", "new/deep", "new/deep/f.sh", "src", "src/lib", "src/lib/a.ts", "src/main.ts"}, paths(entries))
	entries, truncated, err = ws.List(ctx, "", workspace.ListOptions{Limit: 2})
	require.NoError(t, err)
	assert.True(t, truncated)
	assert.Len(t, entries, 2)
	_, _, err = ws.List(ctx, "README.md", workspace.ListOptions{})
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "%v", err)
	_, _, err = ws.List(ctx, "nope", workspace.ListOptions{})
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)

	require.NoError(t, ws.Rename(ctx, "src", "app"))
	assert.Equal(t, "a", mustRead(t, ws, "app/lib/a.ts"))
	assert.True(t, plugin.HasCode(ws.Rename(ctx, "app", "app/inner"), plugin.CodeInvalidArgument))
	assert.True(t, plugin.HasCode(ws.Rename(ctx, "README.md", "docs/x.txt"), plugin.CodeAlreadyExists))
	assert.True(t, plugin.HasCode(ws.Rename(ctx, "gone", "x"), plugin.CodeNotFound))
	require.NoError(t, ws.Rename(ctx, "README.md", "docs/README.md"))

	assert.True(t, plugin.HasCode(ws.Remove(ctx, "app", false), plugin.CodeInvalidArgument))
	require.NoError(t, ws.Remove(ctx, "app", true))
	require.NoError(t, ws.Remove(ctx, "docs/README.md", false))
	assert.True(t, plugin.HasCode(ws.Remove(ctx, "docs/README.md", false), plugin.CodeNotFound))
	assert.True(t, plugin.HasCode(ws.Remove(ctx, "", true), plugin.CodePathDenied))
	entries, _, err = ws.List(ctx, "", workspace.ListOptions{Recursive: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"docs", "docs/x.txt", "new", "new/deep", "new/deep/f.sh"}, paths(entries))
}

func TestMemWorkspaceRefusesExecAndCancelledCalls(t *testing.T) {
	ws := newTestWS(t)
	_, err := ws.Exec(t.Context(), workspace.ExecRequest{Argv: []string{"true"}})
	assert.True(t, plugin.HasCode(err, plugin.CodeUnsupported), "%v", err)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = ws.ReadFile(ctx, "README.md", workspace.ReadOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = ws.WriteFile(ctx, "x", nil, 0)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestSpacesResolve(t *testing.T) {
	s := newSpaces()
	id, ws, err := s.lend(map[string]string{"a": "1"})
	require.NoError(t, err)
	got, err := s.resolve(t.Context(), id)
	require.NoError(t, err)
	assert.Same(t, ws, got)
	id2, _, err := s.lend(nil)
	require.NoError(t, err)
	assert.NotEqual(t, id, id2, "every lend is a fresh workspace")
	_, err = s.resolve(t.Context(), "nope")
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
	_, _, err = s.lend(map[string]string{"/abs": ""})
	assert.Error(t, err)
}

func paths(entries []workspace.FileInfo) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Path
	}
	return out
}
