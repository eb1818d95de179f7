package dirfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A listing read ahead by workers gives the entries, order, hashes and
// truncation a sequential walk gives, at every limit, never descends into
// a skipped folder or a symlink (one leading out of the root included).
func TestListReadAhead(t *testing.T) {
	f, base := newFS(t)
	ctx := context.Background()
	var want []string // every path, in byte order, as the walk must give it
	for d := range 12 {
		for _, name := range []string{fmt.Sprintf("d%02d", d), fmt.Sprintf("d%02d.txt", d), fmt.Sprintf("d%02d-x", d)} {
			for i := range 4 {
				p := fmt.Sprintf("%s/f%d", name, i)
				if d%3 == 0 {
					p = fmt.Sprintf("%s/sub/f%d", name, i)
				}
				_, err := f.WriteFile(ctx, p, []byte(p), 0)
				require.NoError(t, err)
			}
		}
	}
	_, err := f.WriteFile(ctx, "node_modules/pkg/index.js", []byte("x"), 0)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(f.Root(), "out")))
	require.NoError(t, os.Symlink("d01", filepath.Join(f.Root(), "in")))
	require.NoError(t, filepath.WalkDir(f.Root(), func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(f.Root(), p)
		if rel == "." {
			return nil
		}
		want = append(want, filepath.ToSlash(rel))
		if d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		return nil
	}))
	slices.Sort(want)

	opts := workspace.ListOptions{Recursive: true, WithHashes: true, SkipDirs: []string{"NODE_MODULES"}}
	all, truncated, err := f.List(ctx, "", opts)
	require.NoError(t, err)
	require.False(t, truncated)
	require.Equal(t, want, paths(all))
	for _, e := range all {
		switch {
		case e.IsDir || e.Path == "out" || e.Path == "in":
			assert.Empty(t, e.SHA256, e.Path)
		case e.Path == "src/a.txt": // newFS's
			assert.Equal(t, hexSum("a\nb\nc"), e.SHA256)
		default:
			assert.Equal(t, hexSum(e.Path), e.SHA256, e.Path)
		}
	}
	for limit := 1; limit <= len(all); limit++ {
		opts.Limit = limit
		got, truncated, err := f.List(ctx, "", opts)
		require.NoError(t, err)
		require.Equal(t, all[:limit], got, "limit %d", limit)
		require.Equal(t, limit < len(all), truncated, "limit %d", limit)
	}
	sub, _, err := f.List(ctx, "d03", workspace.ListOptions{Recursive: true, WithHashes: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"d03/sub", "d03/sub/f0", "d03/sub/f1", "d03/sub/f2", "d03/sub/f3"}, paths(sub))
}

// A cancelled listing ends with the context's error, its workers stopped.
func TestListCancelled(t *testing.T) {
	f, _ := newFS(t)
	for d := range 50 {
		_, err := f.WriteFile(context.Background(), fmt.Sprintf("d%02d/f", d), []byte("x"), 0)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := f.List(ctx, "", workspace.ListOptions{Recursive: true, WithHashes: true})
	assert.ErrorIs(t, err, context.Canceled)
}

// A listing sorts each folder's entries and merges them into path order,
// where names with bytes below '/' come between a folder and its
// contents.
func TestListMergesFoldersInPathOrder(t *testing.T) {
	f, _ := newFS(t)
	names := []string{"a/x", "a!/x", "a-b", "a.txt", "a/b/c", "a/b!", "a/b.d/e", "a0/z", "b", "A", "_", "~"}
	for _, p := range names {
		_, err := f.WriteFile(t.Context(), p, []byte(p), 0)
		require.NoError(t, err)
	}
	var want []string
	require.NoError(t, filepath.WalkDir(f.Root(), func(p string, _ os.DirEntry, err error) error {
		require.NoError(t, err)
		if rel, _ := filepath.Rel(f.Root(), p); rel != "." {
			want = append(want, filepath.ToSlash(rel))
		}
		return nil
	}))
	slices.Sort(want)
	for _, hashes := range []bool{false, true} {
		all, _, err := f.List(t.Context(), "", workspace.ListOptions{Recursive: true, WithHashes: hashes})
		require.NoError(t, err)
		assert.Equal(t, want, paths(all), "hashes %v", hashes)
	}
}
