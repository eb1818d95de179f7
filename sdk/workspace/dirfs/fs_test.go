package dirfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func hexSum(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

func TestReadFileLineRanges(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the read buffer
	cases := []struct {
		name       string
		data       string
		start, end int
		want       string
	}{
		{"whole", "a\nb\nc", 0, 0, "a\nb\nc"},
		{"from line 2", "a\nb\nc", 2, 0, "b\nc"},
		{"one line", "a\nb\nc", 1, 1, "a\n"},
		{"last line with newline", "a\nb\nc\n", 3, 3, "c\n"},
		{"end past the end", "a\nb\nc\n", 2, 10, "b\nc\n"},
		{"start past the end", "a\nb", 5, 0, ""},
		{"start just past a final newline", "a\n", 2, 0, ""},
		{"CRLF kept", "a\r\nb\r\n", 2, 2, "b\r\n"},
		{"empty file", "", 1, 1, ""},
		{"no newline at all", "only", 1, 1, "only"},
		{"a line longer than the buffer", "a\n" + long + "\nz\n", 2, 2, long + "\n"},
		{"after a long line", "a\n" + long + "\nz\n", 3, 0, "z\n"},
	}
	f, _ := newFS(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.WriteFile(ctx, "lines.txt", []byte(tc.data), 0)
			require.NoError(t, err)
			got, fi, err := f.ReadFile(ctx, "lines.txt", workspace.ReadOptions{StartLine: tc.start, EndLine: tc.end})
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			assert.Equal(t, hexSum(tc.data), fi.SHA256, "the hash covers the whole file")
			assert.Equal(t, int64(len(tc.data)), fi.Size)
		})
	}
	for _, r := range []workspace.ReadOptions{{StartLine: -1}, {EndLine: -2}, {StartLine: 3, EndLine: 2}} {
		_, _, err := f.ReadFile(ctx, "lines.txt", r)
		assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "%+v: %v", r, err)
	}
}

func TestReadFileErrors(t *testing.T) {
	f, _ := newFS(t, MaxFileBytes(10))
	ctx := context.Background()
	require.NoError(t, unix.Mkfifo(filepath.Join(f.Root(), "fifo"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.Root(), "big"), []byte("0123456789\nabc\n"), 0o644))
	cases := []struct {
		path string
		opts workspace.ReadOptions
		code string
	}{
		{"missing.txt", workspace.ReadOptions{}, plugin.CodeNotFound},
		{"src/missing/deeper.txt", workspace.ReadOptions{}, plugin.CodeNotFound},
		{"src", workspace.ReadOptions{}, plugin.CodeIsDirectory},
		{"", workspace.ReadOptions{}, plugin.CodeIsDirectory},
		{"src/a.txt/x", workspace.ReadOptions{}, plugin.CodeInvalidArgument},
		{"fifo", workspace.ReadOptions{}, plugin.CodeInvalidArgument}, // and must not hang
		{"big", workspace.ReadOptions{}, plugin.CodeTooLarge},
	}
	for _, tc := range cases {
		_, _, err := f.ReadFile(ctx, tc.path, tc.opts)
		assert.True(t, plugin.HasCode(err, tc.code), "%q: %v, want %s", tc.path, err, tc.code)
	}
	got, _, err := f.ReadFile(ctx, "big", workspace.ReadOptions{StartLine: 2})
	require.NoError(t, err, "a range within the limit of a larger file is fine")
	assert.Equal(t, "abc\n", string(got))
}

func TestWriteFile(t *testing.T) {
	f, _ := newFS(t, MaxFileBytes(1<<20))
	ctx := context.Background()
	root := f.Root()

	fi, err := f.WriteFile(ctx, "z/y/x.txt", []byte("one"), 0)
	require.NoError(t, err, "parents are created")
	assert.Equal(t, "z/y/x.txt", fi.Path)
	assert.Equal(t, uint32(0o644), fi.Mode, "mode 0 means 0644")
	assert.Equal(t, hexSum("one"), fi.SHA256)
	assert.Equal(t, int64(3), fi.Size)

	fi, err = f.WriteFile(ctx, "run.sh", []byte("#!/bin/sh\n"), 0o4755)
	require.NoError(t, err)
	assert.Equal(t, uint32(0o755), fi.Mode, "only permission bits are kept")

	// Atomic replacement: a reader holding the old file keeps reading the
	// old content in full; the new content is a new file renamed in place.
	old, err := os.Open(filepath.Join(root, "z/y/x.txt"))
	require.NoError(t, err)
	defer old.Close()
	_, err = f.WriteFile(ctx, "z/y/x.txt", []byte("two, longer"), 0o600)
	require.NoError(t, err)
	oldData, err := io.ReadAll(old)
	require.NoError(t, err)
	assert.Equal(t, "one", string(oldData), "the old file was replaced, not rewritten in place")
	data, fi, err := f.ReadFile(ctx, "z/y/x.txt", workspace.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "two, longer", string(data))
	assert.Equal(t, uint32(0o600), fi.Mode)
	entries, err := os.ReadDir(filepath.Join(root, "z/y"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file is left behind")

	// Through a symlink inside the workspace: the target changes, the link stays.
	require.NoError(t, os.Symlink("src/a.txt", filepath.Join(root, "alink")))
	fi, err = f.WriteFile(ctx, "alink", []byte("via link"), 0)
	require.NoError(t, err)
	assert.Equal(t, "src/a.txt", fi.Path)
	target, err := os.Readlink(filepath.Join(root, "alink"))
	require.NoError(t, err)
	assert.Equal(t, "src/a.txt", target)

	errCases := []struct {
		path string
		data []byte
		code string
	}{
		{"", []byte("x"), plugin.CodePathDenied},
		{"src", []byte("x"), plugin.CodeIsDirectory},
		{"src/a.txt/under", []byte("x"), plugin.CodeInvalidArgument},
		{"huge.bin", make([]byte, 1<<20+1), plugin.CodeTooLarge},
	}
	for _, tc := range errCases {
		_, err := f.WriteFile(ctx, tc.path, tc.data, 0)
		assert.True(t, plugin.HasCode(err, tc.code), "%q: %v, want %s", tc.path, err, tc.code)
	}
}

func paths(entries []workspace.FileInfo) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Path)
	}
	return out
}

func TestList(t *testing.T) {
	f, _ := newFS(t)
	ctx := context.Background()
	for _, p := range []string{"a/b", "a.txt", "a/c/d", "b", "a-b/x", ".hidden"} {
		_, err := f.WriteFile(ctx, p, []byte(p), 0)
		require.NoError(t, err)
	}
	require.NoError(t, os.Symlink("a", filepath.Join(f.Root(), "zlink")))
	all := []string{".hidden", "a", "a-b", "a-b/x", "a.txt", "a/b", "a/c", "a/c/d", "b", "src", "src/a.txt", "zlink"}

	cases := []struct {
		name      string
		path      string
		opts      workspace.ListOptions
		want      []string
		truncated bool
	}{
		{"recursive, byte order of whole paths", "", workspace.ListOptions{Recursive: true}, all, false},
		{"flat", "", workspace.ListOptions{}, []string{".hidden", "a", "a-b", "a.txt", "b", "src", "zlink"}, false},
		{"a folder", "a", workspace.ListOptions{Recursive: true}, []string{"a/b", "a/c", "a/c/d"}, false},
		{"through an in-root link", "zlink", workspace.ListOptions{}, []string{"a/b", "a/c"}, false},
		{"limit keeps the first entries in order", "", workspace.ListOptions{Recursive: true, Limit: 5}, all[:5], true},
		{"limit equal to the count", "", workspace.ListOptions{Recursive: true, Limit: len(all)}, all, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated, err := f.List(ctx, tc.path, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, paths(got))
			assert.Equal(t, tc.truncated, truncated)
		})
	}

	got, _, err := f.List(ctx, "", workspace.ListOptions{Recursive: true, WithHashes: true})
	require.NoError(t, err)
	for _, e := range got {
		switch {
		case e.IsDir, e.Path == "zlink":
			assert.Empty(t, e.SHA256, "%s: folders and links have no hash", e.Path)
		case e.Path == "src/a.txt":
			assert.Equal(t, hexSum("a\nb\nc"), e.SHA256)
		default:
			assert.Equal(t, hexSum(e.Path), e.SHA256, e.Path)
		}
	}
	got, _, err = f.List(ctx, "", workspace.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, got[0].SHA256, "no hashes unless asked")

	_, _, err = f.List(ctx, "a.txt", workspace.ListOptions{})
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "%v", err)
	_, _, err = f.List(ctx, "nope", workspace.ListOptions{})
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
}

func TestStatRemoveRename(t *testing.T) {
	f, base := newFS(t)
	ctx := context.Background()
	root := f.Root()
	require.NoError(t, os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "out")))

	fi, err := f.Stat(ctx, "src/a.txt")
	require.NoError(t, err)
	assert.Equal(t, workspace.FileInfo{Path: "src/a.txt", Size: 5, SHA256: hexSum("a\nb\nc"), Mode: 0o644, ModTime: fi.ModTime}, fi)
	fi, err = f.Stat(ctx, "")
	require.NoError(t, err)
	assert.True(t, fi.IsDir)
	_, err = f.Stat(ctx, "nope")
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)

	// Rename.
	require.NoError(t, f.Rename(ctx, "src/a.txt", "new/place/b.txt"), "target parents are created")
	assert.NoFileExists(t, filepath.Join(root, "src/a.txt"))
	assert.FileExists(t, filepath.Join(root, "new/place/b.txt"))
	_, err = f.WriteFile(ctx, "other.txt", []byte("x"), 0)
	require.NoError(t, err)
	renameErrs := []struct{ from, to, code string }{
		{"other.txt", "new/place/b.txt", plugin.CodeAlreadyExists},
		{"other.txt", "new", plugin.CodeAlreadyExists},
		{"missing", "x", plugin.CodeNotFound},
		{"new", "new/place/inside", plugin.CodeInvalidArgument},
		{"", "x", plugin.CodePathDenied},
		{"other.txt", "", plugin.CodePathDenied},
		{"other.txt", "other.txt/x", plugin.CodeInvalidArgument},
	}
	for _, tc := range renameErrs {
		err := f.Rename(ctx, tc.from, tc.to)
		assert.True(t, plugin.HasCode(err, tc.code), "%q→%q: %v, want %s", tc.from, tc.to, err, tc.code)
	}
	require.NoError(t, f.Rename(ctx, "out", "moved-link"), "a link is moved as itself, even one pointing out")
	target, err := os.Readlink(filepath.Join(root, "moved-link"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(base, "secret"), target)

	// Remove.
	require.NoError(t, f.Remove(ctx, "moved-link", false), "removing a link removes the link")
	assert.FileExists(t, filepath.Join(base, "secret"), "not what it points to")
	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	require.NoError(t, f.Remove(ctx, "empty", false))
	err = f.Remove(ctx, "new", false)
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "a non-empty folder needs recursive: %v", err)
	require.NoError(t, f.Remove(ctx, "new", true))
	assert.NoDirExists(t, filepath.Join(root, "new"))
	for _, tc := range []struct{ path, code string }{
		{"", plugin.CodePathDenied}, {".", plugin.CodePathDenied}, {"src/..", plugin.CodePathDenied}, {"gone", plugin.CodeNotFound},
	} {
		err := f.Remove(ctx, tc.path, true)
		assert.True(t, plugin.HasCode(err, tc.code), "%q: %v, want %s", tc.path, err, tc.code)
	}
	assert.DirExists(t, root)
}

func TestFilesSnapshot(t *testing.T) {
	f, base := newFS(t)
	ctx := context.Background()
	for _, p := range []string{"node_modules/x/index.js", "a/b.ts", "a.ts", "dist/out.js", "a/c.tsbuildinfo"} {
		_, err := f.WriteFile(ctx, p, []byte(p), 0)
		require.NoError(t, err)
	}
	_, err := f.WriteFile(ctx, "bin/run", []byte("#!/bin/sh\n"), 0o755)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(base, filepath.Join(f.Root(), "outlink")))
	require.NoError(t, os.Symlink("a.ts", filepath.Join(f.Root(), "inlink")))
	require.NoError(t, unix.Mkfifo(filepath.Join(f.Root(), "fifo"), 0o644))

	// A command may name files with any bytes: they are reported, quoted,
	// not sent as proto strings that cannot carry them.
	require.NoError(t, os.WriteFile(filepath.Join(f.Root(), "bad\xff.txt"), []byte("x"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(f.Root(), "dir\xfe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.Root(), "dir\xfe", "inside.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.Root(), `back\slash`), []byte("x"), 0o644))

	var files []sandbox.File
	leftOut := map[string]string{}
	err = f.Files(ctx, func(rel string) bool {
		return strings.HasPrefix(rel, "node_modules") || rel == "dist" || strings.HasSuffix(rel, ".tsbuildinfo")
	}, func(e sandbox.SnapshotEntry) error {
		if e.LeftOut != "" {
			assert.True(t, utf8.ValidString(e.Path), "%q", e.Path)
			leftOut[e.Path] = e.LeftOut
			return nil
		}
		assert.Equal(t, int64(len(e.Data)), e.Size)
		files = append(files, e.File)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"outlink": "symlink", "inlink": "symlink", "fifo": "not a regular file",
		`"bad\xff.txt"`: "the name is not valid UTF-8", `"dir\xfe"`: "the name is not valid UTF-8",
	}, withoutKey(leftOut, `back\slash`))
	assert.Contains(t, leftOut[`back\slash`], "backslash")
	var got []string
	for _, file := range files {
		got = append(got, file.Path)
		if file.Path == "bin/run" {
			assert.Equal(t, uint32(0o755), file.Mode)
		}
	}
	assert.Equal(t, []string{"a.ts", "a/b.ts", "bin/run", "src/a.txt"}, got, "sorted; no links, FIFOs or excluded paths")

	stop := errors.New("enough")
	n := 0
	err = f.Files(ctx, nil, func(sandbox.SnapshotEntry) error { n++; return stop })
	assert.ErrorIs(t, err, stop, "an error from emit ends the walk")
	assert.Equal(t, 1, n)
}

func withoutKey(m map[string]string, k string) map[string]string {
	out := map[string]string{}
	for key, v := range m {
		if key != k {
			out[key] = v
		}
	}
	return out
}
