package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stored is how a revision's manifest is stored: its base ("" whole), its
// own manifest rows and its dropped paths.
type stored struct {
	base        string
	rows, drops int
}

func storedAs(t *testing.T, s *Store, id string) stored {
	t.Helper()
	var base sql.NullString
	require.NoError(t, s.r.Get(&base, s.rebind(`SELECT manifest_base FROM revisions WHERE id = ?`), id))
	var st stored
	st.base = base.String
	require.NoError(t, s.r.Get(&st.rows, s.rebind(`SELECT COUNT(*) FROM revision_files WHERE revision_id = ?`), id))
	require.NoError(t, s.r.Get(&st.drops, s.rebind(`SELECT COUNT(*) FROM revision_drops WHERE revision_id = ?`), id))
	return st
}

// deltaFixture is an app of 40 files and helpers to write and read its
// revisions, each checked against the same files written whole.
type deltaFixture struct {
	t   *testing.T
	s   *Store
	ctx context.Context
	n   int
}

func (f *deltaFixture) read(id string) []ManifestEntry {
	f.t.Helper()
	_, m, err := f.s.GetRevision(f.ctx, id)
	require.NoError(f.t, err)
	return m
}

// write stores nr as id, a child of parent, and checks that every read of
// it (manifest, cached manifest, materialised files, one file, one file as
// a stream) is what the same files written whole with no parent read.
func (f *deltaFixture) write(id, parent string, nr NewRevision) []ManifestEntry {
	f.t.Helper()
	nr.ID, nr.AppID, nr.Source, nr.ParentID = id, "app1", "run", parent
	_, _, err := f.s.CreateRevision(f.ctx, nr)
	require.NoError(f.t, err)
	f.n++
	whole := fmt.Sprintf("whole_%d", f.n)
	nr.ID, nr.ParentID = whole, ""
	_, _, err = f.s.CreateRevision(f.ctx, nr)
	require.NoError(f.t, err)
	require.Empty(f.t, storedAs(f.t, f.s, whole).base)

	got, want := f.read(id), f.read(whole)
	require.Equal(f.t, want, got, "%s reads as its files written whole", id)
	cached, err := f.s.RevisionManifest(f.ctx, id)
	require.NoError(f.t, err)
	assert.Equal(f.t, want, cached, "%s: the manifest kept in memory is the one stored", id)
	files, err := f.s.RevisionFiles(f.ctx, id)
	require.NoError(f.t, err)
	wholeFiles, err := f.s.RevisionFiles(f.ctx, whole)
	require.NoError(f.t, err)
	assert.Equal(f.t, wholeFiles, files)
	for _, file := range wholeFiles {
		data, err := f.s.ReadRevisionFile(f.ctx, id, file.Path)
		require.NoError(f.t, err)
		assert.Equal(f.t, file.Data, data, "%s %s", id, file.Path)
		r, size, err := f.s.OpenRevisionFile(f.ctx, id, file.Path)
		require.NoError(f.t, err)
		streamed, err := io.ReadAll(r)
		require.NoError(f.t, err)
		assert.Equal(f.t, file.Data, streamed)
		assert.Equal(f.t, int64(len(file.Data)), size)
	}
	return got
}

// absent checks that id has no file at path, by every way of reading one.
func (f *deltaFixture) absent(id, path string) {
	f.t.Helper()
	_, err := f.s.ReadRevisionFile(f.ctx, id, path)
	assert.True(f.t, errors.Is(err, ErrNotFound), "%s %s: %v", id, path, err)
	_, _, err = f.s.OpenRevisionFile(f.ctx, id, path)
	assert.True(f.t, errors.Is(err, ErrNotFound), "%s %s: %v", id, path, err)
}

// like is e with other's content.
func like(e, other ManifestEntry) ManifestEntry {
	e.SHA256, e.Size = other.SHA256, other.Size
	return e
}

func deltaFiles(n int) []sandbox.File {
	var files []sandbox.File
	for i := range n {
		files = append(files, sandbox.File{Path: fmt.Sprintf("src/f%02d.ts", i), Data: []byte(fmt.Sprintf("file %d\n", i)), Mode: 0o644})
	}
	return files
}

// TestDeltaManifests: a revision that differs little from its parent's
// whole manifest stores only what changed (changed rows and dropped
// paths), its children store their difference from that same base (never
// a chain), one that drifted too far is stored whole and becomes the next
// base; every read of each is what its files written whole read.
func TestDeltaManifests(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		f := &deltaFixture{t: t, s: s, ctx: ctx}
		base := deltaFiles(40)
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "rev_base", AppID: "app1", Source: "upload", Files: base})
		require.NoError(t, err)
		assert.Equal(t, stored{rows: 40}, storedAs(t, s, "rev_base"))

		child := slices.Clone(base)
		child[3].Data = []byte("changed\n")                                               // changed content
		child[7].Mode = 0o755                                                             // changed mode
		child = slices.Delete(child, 10, 11)                                              // dropped
		child = append(child, sandbox.File{Path: "src/new.ts", Data: []byte("file 2\n")}) // new, content already stored
		m := f.write("rev_child", "rev_base", NewRevision{Files: child})
		assert.Len(t, m, 40)
		assert.Equal(t, stored{base: "rev_base", rows: 3, drops: 1}, storedAs(t, s, "rev_child"))
		f.absent("rev_child", "src/f10.ts")

		// A result's manifest on top: its delta is against the same base,
		// and the dropped file coming back as it was is neither a row nor
		// a drop.
		next := slices.Clone(m)
		next[0] = like(next[0], next[1])
		next = append(next, ManifestEntry{Path: "src/f10.ts", SHA256: digest([]byte("file 10\n")), Size: 8, Mode: 0o644})
		slices.SortFunc(next, func(a, b ManifestEntry) int { return strings.Compare(a.Path, b.Path) })
		m = f.write("rev_result", "rev_child", NewRevision{Manifest: next})
		assert.Equal(t, stored{base: "rev_base", rows: 4}, storedAs(t, s, "rev_result"))

		// Drifting: each revision changes one more file; once more than a
		// quarter differ from the base, the revision is stored whole and
		// its child is a delta against it.
		parent := "rev_result"
		for i := 0; ; i++ {
			id := fmt.Sprintf("rev_drift%d", i)
			m = slices.Clone(m)
			sha, err := s.PutBlob(ctx, []byte(id))
			require.NoError(t, err)
			m[20+i%20].SHA256, m[20+i%20].Size = sha, int64(len(id))
			f.write(id, parent, NewRevision{Manifest: m})
			parent = id
			if storedAs(t, s, id).base == "" {
				assert.Equal(t, 41, storedAs(t, s, id).rows)
				require.Greater(t, i, 3, "a small delta is not rebased")
				break
			}
			require.Less(t, i, 20, "never stored whole")
		}
		m[0] = like(m[0], m[2])
		f.write("rev_after", parent, NewRevision{Manifest: m})
		assert.Equal(t, stored{base: parent, rows: 1}, storedAs(t, s, "rev_after"))

		// Another host (nothing in memory): written whole, read the same.
		s.manifests = manifestCache{}
		m[1] = like(m[1], m[2])
		f.write("rev_cold", "rev_after", NewRevision{Manifest: m})
		assert.Empty(t, storedAs(t, s, "rev_cold").base)
		// Its manifest read back knows its base: the next is a delta.
		m[2] = like(m[2], m[3])
		f.write("rev_warm", "rev_cold", NewRevision{Manifest: m})
		assert.Equal(t, "rev_cold", storedAs(t, s, "rev_warm").base)

		// Content that is not stored is still refused.
		bad := slices.Clone(m)
		bad[2].SHA256 = strings.Repeat("0", 64)
		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev_bad", AppID: "app1", Source: "run", ParentID: "rev_warm", Manifest: bad})
		assert.ErrorContains(t, err, "not stored")
	})
}

// TestDeltaManifestsMigrateDown: going below schema 7 writes every delta
// manifest out whole first, so an older host reads the same files.
func TestDeltaManifestsMigrateDown(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		base := deltaFiles(12)
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "rev_base", AppID: "app1", Source: "upload", Files: base})
		require.NoError(t, err)
		child := slices.Clone(base)
		child[1].Data = []byte("changed\n")
		child = slices.Delete(child, 5, 6)
		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev_child", AppID: "app1", Source: "run", ParentID: "rev_base", Files: child})
		require.NoError(t, err)
		require.Equal(t, stored{base: "rev_base", rows: 1, drops: 1}, storedAs(t, s, "rev_child"))
		_, want, err := s.GetRevision(ctx, "rev_child")
		require.NoError(t, err)

		latest, err := LatestVersion(s.Dialect())
		require.NoError(t, err)
		require.GreaterOrEqual(t, latest, uint(7))
		for v := latest; v > 6; v-- { // down through schema 7's migration
			require.NoError(t, s.MigrateDown())
		}
		var rows []ManifestEntry
		require.NoError(t, s.r.Select(&rows, s.rebind(`SELECT f.path, f.blob_sha256, b.size, f.mode FROM revision_files f
 JOIN blobs b ON b.sha256 = f.blob_sha256 WHERE f.revision_id = ? ORDER BY f.path`), "rev_child"))
		assert.Equal(t, want, rows)
		require.NoError(t, s.MigrateUp())
		s.manifests = manifestCache{}
		_, got, err := s.GetRevision(ctx, "rev_child")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
}
