package dirfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func listedHash(t *testing.T, f *FS, p string) string {
	t.Helper()
	entries, _, err := f.List(t.Context(), "", workspace.ListOptions{Recursive: true, WithHashes: true})
	require.NoError(t, err)
	for _, e := range entries {
		if e.Path == p {
			return e.SHA256
		}
	}
	t.Fatalf("%s not listed", p)
	return ""
}

// TestHashCacheSeesEveryChange: a cached hash is reused only for an
// unchanged file; a same-size rewrite with its old mtime put back (the
// change a size+mtime cache misses) still shows.
func TestHashCacheSeesEveryChange(t *testing.T) {
	old := racyWindow
	racyWindow = 0 // cache even just-written files, to test invalidation
	t.Cleanup(func() { racyWindow = old })

	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o644))
	f, err := New(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, hexSum("one"), listedHash(t, f, "a.txt"))
	assert.Len(t, f.hashes.entries, 1, "cached")
	assert.Equal(t, hexSum("one"), listedHash(t, f, "a.txt"), "served from the cache")

	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("two"), 0o644))
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	assert.Equal(t, hexSum("two"), listedHash(t, f, "a.txt"), "same size and mtime, new content")

	require.NoError(t, os.Remove(p))
	require.NoError(t, os.WriteFile(p, []byte("six"), 0o644))
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	assert.Equal(t, hexSum("six"), listedHash(t, f, "a.txt"), "replaced by a new file")
}

// TestHashCacheSkipsRacyFiles: with the real window a file written just now
// is hashed every time, never cached.
func TestHashCacheSkipsRacyFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644))
	f, err := New(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, hexSum("x"), listedHash(t, f, "a.txt"))
	assert.Empty(t, f.hashes.entries)
}
