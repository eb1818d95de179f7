package dirfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newFS makes a workspace "ws" inside a temp dir that also holds, outside
// the workspace, a file "secret" and a folder "outside".
func newFS(t *testing.T, opts ...Option) (*FS, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(base, "outside"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret"), []byte("top secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(base, "outside", "secret"), []byte("top secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "src", "a.txt"), []byte("a\nb\nc"), 0o644))
	groups := &Groups{}
	t.Cleanup(groups.Close)
	f, err := New(root, LocalExec(ExecLimits{}, groups), opts...)
	require.NoError(t, err)
	return f, base
}

// links adds the symlinks the confinement tests try to escape through.
func links(t *testing.T, f *FS, base string) {
	t.Helper()
	root := f.Root()
	for link, target := range map[string]string{
		"rootlink":     "/",
		"abs-secret":   filepath.Join(base, "secret"),
		"rel-secret":   "../secret",
		"src/up":       "../..",
		"dirout":       filepath.Join(base, "outside"),
		"dangling-out": "/nonexistent-agenthost/x",
		"loop1":        "loop2",
		"loop2":        "loop1",
		"srclink":      "src",
		"abs-inside":   filepath.Join(root, "src", "a.txt"),
		"src/self":     ".",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))))
	}
}

func TestClean(t *testing.T) {
	ok := []struct{ in, want string }{
		{"", ""}, {".", ""}, {"a", "a"}, {"a/b/../c", "a/c"}, {"./a//b/", "a/b"}, {"a/..", ""}, {"a/./b", "a/b"},
	}
	for _, tc := range ok {
		got, err := Clean(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"..", "../a", "a/../../b", "/etc", "/", "a\x00b", `a\..\b`, "./../x", "a/b/../../.."} {
		_, err := Clean(bad)
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "%q: %v", bad, err)
		var pe *plugin.Error
		require.True(t, errors.As(err, &pe))
		assert.Equal(t, bad, pe.Field, "the error names the path")
	}
}

func TestConfinement(t *testing.T) {
	f, base := newFS(t)
	links(t, f, base)
	ctx := context.Background()
	cases := []struct {
		name string
		path string
	}{
		{"parent", "../x"},
		{"climb after descent", "a/../../x"},
		{"deep climb", "src/../../secret"},
		{"absolute", "/etc/passwd"},
		{"NUL byte", "src/a.txt\x00"},
		{"backslash", `..\secret`},
		{"symlink to / then a path", "rootlink/etc/passwd"},
		{"symlink to / itself", "rootlink"},
		{"absolute symlink file out", "abs-secret"},
		{"relative symlink file out", "rel-secret"},
		{"relative symlink folder up", "src/up/secret"},
		{"in-root link then out", "src/self/up/secret"},
		{"symlink folder out", "dirout/secret"},
		{"dangling symlink out", "dangling-out"},
		{"symlink loop", "loop1"},
		{"proc magic link", "rootlink/proc/self/root/etc/passwd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			denied := func(op string, err error) {
				t.Helper()
				assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "%s %q: %v", op, tc.path, err)
			}
			_, _, err := f.ReadFile(ctx, tc.path, workspace.ReadOptions{})
			denied("read", err)
			_, err = f.WriteFile(ctx, tc.path, []byte("owned"), 0)
			denied("write", err)
			_, err = f.Stat(ctx, tc.path)
			denied("stat", err)
			_, _, err = f.List(ctx, tc.path, workspace.ListOptions{})
			denied("list", err)
			denied("remove under", f.Remove(ctx, tc.path+"/x", true))
			denied("rename into", f.Rename(ctx, "src/a.txt", tc.path+"/x"))
			_, err = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}, Dir: tc.path})
			denied("exec in", err)
		})
	}
	for _, p := range []string{"secret", "outside/secret"} {
		b, err := os.ReadFile(filepath.Join(base, p))
		require.NoError(t, err)
		assert.Equal(t, "top secret", string(b), "nothing outside was written")
	}
	_, err := os.Lstat("/nonexistent-agenthost")
	assert.True(t, errors.Is(err, fs.ErrNotExist), "a dangling link out was not written through")
	assert.FileExists(t, filepath.Join(f.Root(), "src", "a.txt"), "src/a.txt was not moved")

	for _, p := range []string{"srclink/a.txt", "abs-inside", "src/self/a.txt", "srclink/self/a.txt"} {
		data, fi, err := f.ReadFile(ctx, p, workspace.ReadOptions{})
		require.NoError(t, err, "symlinks inside the workspace work: %s", p)
		assert.Equal(t, "a\nb\nc", string(data))
		assert.Equal(t, "src/a.txt", fi.Path, "the path is reported as resolved")
	}
}

// TestRootLayerRefusesEscapes checks the second layer on its own: os.Root
// refuses a path through a symlink out, and isEscape recognises its error (os
// does not export it, so a changed message must fail here, not silently).
func TestRootLayerRefusesEscapes(t *testing.T) {
	f, base := newFS(t)
	links(t, f, base)
	r, err := f.open()
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Open("rootlink/etc/passwd")
	require.Error(t, err)
	assert.True(t, isEscape(err), "%v", err)
	assert.True(t, plugin.HasCode(mapErr("rootlink/etc/passwd", err), plugin.CodePathDenied))
}

func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{
		"", "a", "../x", "a/../../b", "/etc", "link/../x", "link/etc/passwd", "in/a.txt", "a\x00",
		"in/up/ws/in", "inlink/../inlink/a.txt", "in/self/self/up", "abs/a.txt", "./in//a.txt", "in/a.txt/x",
		"out/ws/in", "in/self/up/out", strings.Repeat("0", 300),
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	base := f.TempDir()
	root := filepath.Join(base, "ws")
	if err := os.MkdirAll(filepath.Join(root, "in"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "in", "a.txt"), []byte("x"), 0o644); err != nil {
		f.Fatal(err)
	}
	for link, target := range map[string]string{
		"link": "/", "in/up": "..", "inlink": "in", "in/self": ".", "abs": filepath.Join(root, "in"), "out": base,
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			f.Fatal(err)
		}
	}
	fsys, err := New(root, nil)
	if err != nil {
		f.Fatal(err)
	}
	realRoot := fsys.Root()
	f.Fuzz(func(t *testing.T, p string, followLast bool) {
		rel, err := fsys.resolve(p, followLast)
		if err != nil {
			// Refusals carry a code (denied, or a name the OS rejects).
			if plugin.CodeOf(err) == "" {
				t.Fatalf("%q: refused with an uncoded error: %v", p, err)
			}
			return
		}
		if strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/../") {
			t.Fatalf("%q resolved to %q", p, rel)
		}
		// Independent check: the deepest existing ancestor of the result,
		// with the kernel's own symlink resolution, lies under the root.
		// Without followLast the last component may be a link to anywhere:
		// the operation acts on the link, so check its folder.
		full := filepath.Join(realRoot, filepath.FromSlash(rel))
		if !followLast && rel != "" {
			full = filepath.Dir(full)
		}
		for {
			if _, err := os.Lstat(full); err == nil {
				break
			}
			full = filepath.Dir(full)
		}
		real, err := filepath.EvalSymlinks(full)
		if err != nil {
			t.Fatalf("%q: eval %s: %v", p, full, err)
		}
		if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
			t.Fatalf("%q resolved to %q, which is really %s, outside %s", p, rel, real, realRoot)
		}
	})
}
