package dirfs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newFS makes a workspace inside a temp dir that also holds a "secret" file
// beside (outside) the workspace.
func newFS(t *testing.T) (*FS, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret"), []byte("top secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "a.txt"), []byte("a\nb\nc"), 0o644))
	fs, err := New(root, LocalExec(ExecLimits{}, &Groups{}))
	require.NoError(t, err)
	return fs, base
}

func TestClean(t *testing.T) {
	ok := map[string]string{"": "", ".": "", "a": "a", "a/b/../c": "a/c", "./a//b/": "a/b", "a/..": ""}
	for in, want := range ok {
		got, err := Clean(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"..", "../a", "a/../../b", "/etc", "a\x00b", `a\..\b`, "./../x"} {
		_, err := Clean(bad)
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "%q: %v", bad, err)
	}
}

func TestSymlinkEscapes(t *testing.T) {
	fs, base := newFS(t)
	ctx := context.Background()
	root := fs.Root()
	require.NoError(t, os.Symlink("/", filepath.Join(root, "rootlink")))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "abs-secret")))
	require.NoError(t, os.Symlink("../secret", filepath.Join(root, "rel-secret")))
	require.NoError(t, os.Symlink("../../..", filepath.Join(root, "src", "up")))
	require.NoError(t, os.Symlink("loop2", filepath.Join(root, "loop1")))
	require.NoError(t, os.Symlink("loop1", filepath.Join(root, "loop2")))
	require.NoError(t, os.Symlink("src", filepath.Join(root, "srclink")))
	require.NoError(t, os.Symlink(filepath.Join(root, "src", "a.txt"), filepath.Join(root, "abs-inside")))

	for _, p := range []string{"rootlink/etc/passwd", "abs-secret", "rel-secret", "src/up/secret", "loop1", "rootlink/proc/1/root/etc/shadow"} {
		_, _, err := fs.ReadFile(ctx, p, workspace.ReadOptions{})
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "read %q: %v", p, err)
		_, err = fs.WriteFile(ctx, p, []byte("owned"), 0)
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "write %q: %v", p, err)
		assert.True(t, plugin.HasCode(fs.Remove(ctx, p+"/x", true), plugin.CodePathDenied) || p == "loop1", "remove under %q", p)
	}
	b, err := os.ReadFile(filepath.Join(base, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "top secret", string(b), "nothing outside was written")

	for _, p := range []string{"srclink/a.txt", "abs-inside"} {
		data, _, err := fs.ReadFile(ctx, p, workspace.ReadOptions{})
		require.NoError(t, err, "symlinks inside the workspace work: %s", p)
		assert.Equal(t, "a\nb\nc", string(data))
	}
	_, err = fs.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}, Dir: "rootlink/tmp"})
	assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "exec dir through a link out: %v", err)
}

func TestLineRanges(t *testing.T) {
	cases := []struct {
		data       string
		start, end int
		want       string
	}{
		{"a\nb\nc", 2, 0, "b\nc"}, {"a\nb\nc", 1, 1, "a\n"}, {"a\nb\nc\n", 3, 3, "c\n"},
		{"a\nb", 5, 0, ""}, {"a\r\nb\r\n", 2, 2, "b\r\n"}, {"", 1, 1, ""},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, string(lineRange([]byte(tc.data), tc.start, tc.end)), "%q %d-%d", tc.data, tc.start, tc.end)
	}
}

func TestWriteIsAtomicAndListsAreOrdered(t *testing.T) {
	fs, _ := newFS(t)
	ctx := context.Background()
	_, err := fs.WriteFile(ctx, "z/y/x.txt", []byte("1"), 0o600)
	require.NoError(t, err)
	entries, _, err := fs.List(ctx, "", workspace.ListOptions{Recursive: true})
	require.NoError(t, err)
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
		assert.False(t, strings.Contains(e.Path, ".agenthost-write-"), "no temp file is left behind")
	}
	assert.Equal(t, []string{"src", "src/a.txt", "z", "z/y", "z/y/x.txt"}, paths)
	fi, err := fs.Stat(ctx, "z/y/x.txt")
	require.NoError(t, err)
	assert.Equal(t, uint32(0o600), fi.Mode)
}

func TestExecKillsTheWholeGroupOnTimeout(t *testing.T) {
	fs, _ := newFS(t)
	res, err := fs.Exec(context.Background(), workspace.ExecRequest{
		Argv: []string{"sh", "-c", "sleep 30 & echo $! > child; sleep 30"}, Timeout: 200e6,
	})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Equal(t, "SIGKILL", res.Signal)
	raw, err := os.ReadFile(filepath.Join(fs.Root(), "child"))
	require.NoError(t, err)
	pid := strings.TrimSpace(string(raw))
	assert.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	}, 5e9, 20e6, "the background child of a timed-out command survived")
}

func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{"a", "../x", "a/../../b", "/etc", "link/../x", "link/etc/passwd", "in/a.txt", "a\x00"} {
		f.Add(s)
	}
	base := f.TempDir()
	root := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(root, "in"), 0o755); err != nil {
		f.Fatal(err)
	}
	_ = os.Symlink("/", filepath.Join(root, "link"))
	_ = os.Symlink("..", filepath.Join(root, "in", "up"))
	_ = os.Symlink("in", filepath.Join(root, "inlink"))
	fs, err := New(root, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		full, err := fs.resolve(p)
		if err != nil {
			return
		}
		rel, err := filepath.Rel(fs.Root(), full)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("%q resolved outside the root: %s", p, full)
		}
	})
}
