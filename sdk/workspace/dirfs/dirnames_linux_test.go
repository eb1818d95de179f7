package dirfs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onDisk is every path under root, in byte order, as a listing must give.
func onDisk(t *testing.T, root string) []string {
	t.Helper()
	var all []string
	require.NoError(t, filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		require.NoError(t, err)
		if rel, _ := filepath.Rel(root, p); rel != "." {
			all = append(all, filepath.ToSlash(rel))
		}
		return nil
	}))
	slices.Sort(all)
	return all
}

// TestNameCacheSeesEveryChange: a folder's names kept by a listing are
// used only while the folder is unchanged; a name added, removed or
// renamed shows in the next listing, also when the folder's modification
// time is put back, and so does a folder replaced by another.
func TestNameCacheSeesEveryChange(t *testing.T) {
	old := racyWindow
	racyWindow = 0 // keep even just-changed folders, to test invalidation
	t.Cleanup(func() { racyWindow = old })

	f, _ := newFS(t)
	root := f.Root()
	src := filepath.Join(root, "src")
	listed := func(why string) {
		t.Helper()
		all, _, err := f.List(t.Context(), "", workspace.ListOptions{Recursive: true, WithHashes: true})
		require.NoError(t, err)
		assert.Equal(t, onDisk(t, root), paths(all), why)
		for _, e := range all {
			if !e.IsDir {
				data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e.Path)))
				require.NoError(t, err)
				assert.Equal(t, hexSum(string(data)), e.SHA256, "%s: %s", why, e.Path)
			}
		}
	}
	write := func(p, data string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(root, filepath.FromSlash(p)), []byte(data), 0o644))
	}

	write("src/b.txt", "b")
	listed("first listing")
	_, kept := f.names.folders["src"]
	require.True(t, kept, "src's names are kept")
	listed("from the cache")

	write("src/c.txt", "c")
	listed("a name added")
	require.NoError(t, os.Remove(filepath.Join(src, "a.txt")))
	listed("a name removed")
	require.NoError(t, os.Rename(filepath.Join(src, "b.txt"), filepath.Join(src, "d.txt")))
	listed("a name renamed")

	fi, err := os.Stat(src)
	require.NoError(t, err)
	write("src/e.txt", "e")
	require.NoError(t, os.Chtimes(src, fi.ModTime(), fi.ModTime()))
	listed("a name added, the folder's mtime put back")

	require.NoError(t, os.MkdirAll(filepath.Join(root, "other"), 0o755))
	write("other/z.txt", "z")
	listed("before the swap")
	require.NoError(t, os.Rename(src, filepath.Join(root, "gone")))
	require.NoError(t, os.Rename(filepath.Join(root, "other"), src))
	listed("a folder replaced by another")
}

// TestNameCacheSkipsRacyFolders: with the real window a folder changed
// just now is read every time, never kept.
func TestNameCacheSkipsRacyFolders(t *testing.T) {
	f, _ := newFS(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.Root(), "src", "new.txt"), []byte("x"), 0o644))
	for range 2 {
		all, _, err := f.List(t.Context(), "", workspace.ListOptions{Recursive: true})
		require.NoError(t, err)
		assert.Equal(t, []string{"src", "src/a.txt", "src/new.txt"}, paths(all))
	}
	assert.Empty(t, f.names.folders)
}
