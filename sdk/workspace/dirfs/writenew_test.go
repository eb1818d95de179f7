package dirfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sumOf(data string) string {
	s := sha256.Sum256([]byte(data))
	return hex.EncodeToString(s[:])
}

// TestWriteNew: a new tree gets every file with its content and mode, in
// folders made as needed, and the sums WriteFile would report; a later
// file of the same path wins.
func TestWriteNew(t *testing.T) {
	ctx := context.Background()
	f, err := New(t.TempDir(), nil)
	require.NoError(t, err)
	sums, err := f.WriteNew(ctx, []sandbox.File{
		{Path: "README.md", Data: []byte("# hi\n")},
		{Path: "./src/a/b/run.sh", Data: []byte("#!/bin/sh\n"), Mode: 0o755},
		{Path: "src/a/x.txt", Data: []byte("first"), Mode: 0o600},
		{Path: "src/a/x.txt", Data: []byte("second"), Mode: 0o640},
		{Path: "src//c.txt", Data: nil},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"README.md": sumOf("# hi\n"), "src/a/b/run.sh": sumOf("#!/bin/sh\n"),
		"src/a/x.txt": sumOf("second"), "src/c.txt": sumOf(""),
	}, sums)
	for rel, want := range map[string]struct {
		data string
		mode os.FileMode
	}{"README.md": {"# hi\n", 0o644}, "src/a/b/run.sh": {"#!/bin/sh\n", 0o755}, "src/a/x.txt": {"second", 0o640}, "src/c.txt": {"", 0o644}} {
		got, err := os.ReadFile(filepath.Join(f.Root(), rel))
		require.NoError(t, err, rel)
		assert.Equal(t, want.data, string(got), rel)
		fi, err := os.Stat(filepath.Join(f.Root(), rel))
		require.NoError(t, err)
		assert.Equal(t, want.mode, fi.Mode().Perm(), rel)
	}
	entries, err := os.ReadDir(filepath.Join(f.Root(), "src", "a"))
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), ".agenthost-tmp-"), "no temporary file is left: %s", e.Name())
	}

	// The same files through WriteFile report the same sums.
	g, err := New(t.TempDir(), nil)
	require.NoError(t, err)
	for _, p := range []string{"README.md", "src/a/b/run.sh", "src/c.txt"} {
		data, err := os.ReadFile(filepath.Join(f.Root(), p))
		require.NoError(t, err)
		fi, err := g.WriteFile(ctx, p, data, 0)
		require.NoError(t, err)
		assert.Equal(t, sums[p], fi.SHA256, p)
	}
}

// TestWriteNewRefuses: paths WriteFile refuses, a file where a folder must
// go and the other way round, and a file over the limit are refused with
// WriteFile's codes, and nothing is written outside the workspace.
func TestWriteNewRefuses(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	for name, tc := range map[string]struct {
		files []sandbox.File
		code  string
	}{
		"climbs out":       {[]sandbox.File{{Path: "../" + filepath.Base(outside) + "/x", Data: []byte("x")}}, plugin.CodePathDenied},
		"absolute":         {[]sandbox.File{{Path: filepath.Join(outside, "x"), Data: []byte("x")}}, plugin.CodePathDenied},
		"root":             {[]sandbox.File{{Path: ".", Data: []byte("x")}}, plugin.CodePathDenied},
		"NUL":              {[]sandbox.File{{Path: "a\x00b", Data: []byte("x")}}, plugin.CodePathDenied},
		"file then folder": {[]sandbox.File{{Path: "a", Data: []byte("x")}, {Path: "a/b", Data: []byte("y")}}, plugin.CodeInvalidArgument},
		"folder then file": {[]sandbox.File{{Path: "a/b", Data: []byte("x")}, {Path: "a", Data: []byte("y")}}, plugin.CodeIsDirectory},
		"too large":        {[]sandbox.File{{Path: "big", Data: make([]byte, 11)}}, plugin.CodeTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := New(t.TempDir(), nil, MaxFileBytes(10))
			require.NoError(t, err)
			_, err = f.WriteNew(ctx, tc.files)
			require.Error(t, err)
			assert.Equal(t, tc.code, plugin.CodeOf(err), "%v", err)
			left, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Empty(t, left)
		})
	}
}

// BenchmarkCreateTree: a sandbox's 500 files of 10 kB in 20 folders
// written into a new tree, file by file through WriteFile (what sandbox
// creation did) and at once through WriteNew.
func BenchmarkCreateTree(b *testing.B) {
	files := make([]sandbox.File, 500)
	data := []byte(strings.Repeat("x", 10_000))
	for i := range files {
		files[i] = sandbox.File{Path: fmt.Sprintf("src/dir%d/file%d.ts", i%20, i), Data: data}
	}
	ctx := context.Background()
	for _, how := range []string{"WriteFile", "WriteNew"} {
		b.Run(how, func(b *testing.B) {
			base := b.TempDir()
			n := 0
			for b.Loop() {
				n++
				dir := filepath.Join(base, fmt.Sprint(n))
				require.NoError(b, os.Mkdir(dir, 0o755))
				f, err := New(dir, nil)
				require.NoError(b, err)
				if how == "WriteNew" {
					_, err = f.WriteNew(ctx, files)
					require.NoError(b, err)
					continue
				}
				for _, nf := range files {
					_, err := f.WriteFile(ctx, nf.Path, nf.Data, nf.Mode)
					require.NoError(b, err)
				}
			}
		})
	}
}
