package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seedApp(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.EnsureTenant(ctx, "t1", "Tenant"))
	require.NoError(t, s.EnsureTenant(ctx, "t1", "Tenant"), "ensure is idempotent")
	require.NoError(t, s.CreateApp(ctx, App{ID: "app1", TenantID: "t1", Name: "demo"}))
}

func TestRevisionsAreContentAddressed(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		app, err := s.GetApp(ctx, "app1")
		require.NoError(t, err)
		assert.Equal(t, "t1", app.TenantID)
		_, err = s.GetApp(ctx, "nope")
		assert.True(t, errors.Is(err, ErrNotFound))

		files := []sandbox.File{
			{Path: "src/b.ts", Data: []byte("b")}, {Path: "a.txt", Data: []byte("same")},
			{Path: "copy.txt", Data: []byte("same")}, {Path: "empty", Data: nil}, {Path: "bin", Data: []byte{0, 255}, Mode: 0o755},
		}
		r1, st, err := s.CreateRevision(ctx, NewRevision{ID: "rev1", AppID: "app1", Source: "upload", Files: files})
		require.NoError(t, err)
		assert.Equal(t, 4, st.BlobsWritten, "identical content is stored once")
		assert.Equal(t, int64(1+4+0+2), st.BlobBytes)
		assert.Equal(t, 5, r1.FileCount)

		changed := append([]sandbox.File(nil), files...)
		changed[0] = sandbox.File{Path: "src/b.ts", Data: []byte("b2")}
		r2, st, err := s.CreateRevision(ctx, NewRevision{ID: "rev2", AppID: "app1", ParentID: "rev1", Source: "run", RunID: "run_1", Files: changed})
		require.NoError(t, err)
		assert.Equal(t, 1, st.BlobsWritten, "only the changed file costs bytes")
		assert.Equal(t, int64(2), st.BlobBytes)
		assert.Equal(t, "rev1", r2.ParentID)

		got, manifest, err := s.GetRevision(ctx, "rev2")
		require.NoError(t, err)
		assert.Equal(t, "run", got.Source)
		assert.Equal(t, "run_1", got.RunID)
		assert.True(t, got.Applied)
		var paths []string
		for _, m := range manifest {
			paths = append(paths, m.Path)
		}
		assert.Equal(t, []string{"a.txt", "bin", "copy.txt", "empty", "src/b.ts"}, paths)
		assert.Equal(t, uint32(0o755), manifest[1].Mode)
		assert.Equal(t, manifest[0].SHA256, manifest[2].SHA256)

		data, err := s.ReadRevisionFile(ctx, "rev1", "src/b.ts")
		require.NoError(t, err)
		assert.Equal(t, "b", string(data))
		data, err = s.ReadRevisionFile(ctx, "rev1", "empty")
		require.NoError(t, err)
		assert.Equal(t, []byte{}, data)
		_, err = s.ReadRevisionFile(ctx, "rev1", "nope")
		assert.True(t, errors.Is(err, ErrNotFound))

		all, err := s.RevisionFiles(ctx, "rev2")
		require.NoError(t, err)
		require.Len(t, all, 5)
		assert.Equal(t, "b2", string(all[4].Data))

		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev1", AppID: "app1", Source: "upload"})
		assert.True(t, errors.Is(err, ErrConflict), "duplicate revision id: %v", err)
		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev3", AppID: "app1", Source: "upload",
			Files: []sandbox.File{{Path: "x"}, {Path: "x"}}})
		assert.Error(t, err, "duplicate paths")
		_, _, err = s.GetRevision(ctx, "rev3")
		assert.True(t, errors.Is(err, ErrNotFound), "a failed revision leaves nothing behind")
	})
}

func TestLargeRevision(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		seedApp(t, s)
		files := app500(0)
		_, st, err := s.CreateRevision(context.Background(), NewRevision{ID: "big", AppID: "app1", Source: "upload", Files: files})
		require.NoError(t, err)
		assert.Equal(t, 500, st.BlobsWritten)
		got, err := s.RevisionFiles(context.Background(), "big")
		require.NoError(t, err)
		require.Len(t, got, 500)
	})
}

// app500 is a 500-file, ~5 MB app; variant changes the content of 3 files.
func app500(variant int) []sandbox.File {
	files := make([]sandbox.File, 500)
	for i := range files {
		body := make([]byte, 10_000)
		for j := range body {
			body[j] = byte('a' + (i+j)%26)
		}
		copy(body, fmt.Sprintf("// file %d\n", i))
		if variant > 0 && i < 3 {
			copy(body[20:], fmt.Sprintf("changed %d", variant))
		}
		files[i] = sandbox.File{Path: fmt.Sprintf("src/dir%d/file%d.ts", i%20, i), Data: body}
	}
	return files
}

// TestRevisionManifestCached: RevisionManifest answers what GetRevision
// does, from memory after the first read, and a caller changing what it
// got cannot change what the next caller gets.
func TestRevisionManifestCached(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		files := []sandbox.File{{Path: "b.txt", Data: []byte("b")}, {Path: "a.txt", Data: []byte("a")}}
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "rev1", AppID: "app1", Source: "upload", Files: files})
		require.NoError(t, err)
		_, want, err := s.GetRevision(ctx, "rev1")
		require.NoError(t, err)
		first, err := s.RevisionManifest(ctx, "rev1")
		require.NoError(t, err)
		assert.Equal(t, want, first)
		first[0].Path = "changed by a caller"
		_, cached := s.manifests.get("rev1")
		require.True(t, cached, "the first read is kept")
		second, err := s.RevisionManifest(ctx, "rev1")
		require.NoError(t, err)
		assert.Equal(t, want, second)
		_, err = s.RevisionManifest(ctx, "rev_missing")
		assert.True(t, errors.Is(err, ErrNotFound))
		_, cached = s.manifests.get("rev_missing")
		assert.False(t, cached, "a miss is not kept")
	})
}

// TestManifestCacheBound: the cache stays within its entry bound, oldest
// out first, and skips a manifest too big to share it.
func TestManifestCacheBound(t *testing.T) {
	var c manifestCache
	m := make([]ManifestEntry, manifestCacheEntries/5)
	for i := range 6 {
		c.put(fmt.Sprintf("rev%d", i), m, "")
	}
	assert.LessOrEqual(t, c.entries, manifestCacheEntries)
	_, ok := c.get("rev0")
	assert.False(t, ok, "the oldest went first")
	_, ok = c.get("rev5")
	assert.True(t, ok)
	c.put("huge", make([]ManifestEntry, manifestCacheEntries/4+1), "")
	_, ok = c.get("huge")
	assert.False(t, ok)
}
