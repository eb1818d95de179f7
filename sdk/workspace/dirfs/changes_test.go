package dirfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snap is what one FilesSince passed: content by path for files sent,
// digest by path for files passed unchanged.
type snap struct {
	gen       string
	sent      map[string]string
	unchanged map[string]string
}

func filesSince(t *testing.T, f *FS, since string) snap {
	t.Helper()
	s := snap{sent: map[string]string{}, unchanged: map[string]string{}}
	gen, err := f.FilesSince(t.Context(), since, nil, func(e sandbox.SnapshotEntry) error {
		switch {
		case e.Unchanged:
			assert.Nil(t, e.Data)
			s.unchanged[e.Path] = e.SHA256
		case e.LeftOut == "":
			s.sent[e.Path] = string(e.Data)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, gen)
	s.gen = gen
	return s
}

// trackedFS is an FS over a folder holding files, with a stamp folder
// beside it, whose files are already a tick in the past.
func trackedFS(t *testing.T, files map[string]string) (*FS, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	for p, c := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644))
	}
	f, err := New(ws, nil, StampDir(base))
	require.NoError(t, err)
	pastTick(t, ws)
	return f, ws
}

// pastTick waits until a file made now in dir gets a later mtime than
// dir's files have: the next stamp is then past them.
func pastTick(t testing.TB, dir string) {
	t.Helper()
	var newest time.Time
	require.NoError(t, filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		return err
	}))
	require.Eventually(t, func() bool {
		p := filepath.Join(t.TempDir(), "tick")
		_ = os.WriteFile(p, nil, 0o644)
		fi, err := os.Stat(p)
		return err == nil && fi.ModTime().After(newest)
	}, 5*time.Second, time.Millisecond)
}

func TestFilesSinceSendsOnlyWhatChanged(t *testing.T) {
	f, ws := trackedFS(t, map[string]string{"a.txt": "one", "b/c.txt": "two", "d.txt": "three"})
	full := filesSince(t, f, "")
	assert.Equal(t, map[string]string{"a.txt": "one", "b/c.txt": "two", "d.txt": "three"}, full.sent)
	assert.Empty(t, full.unchanged)

	same := filesSince(t, f, full.gen)
	assert.Empty(t, same.sent, "nothing changed")
	assert.Equal(t, map[string]string{"a.txt": hexSum("one"), "b/c.txt": hexSum("two"), "d.txt": hexSum("three")}, same.unchanged)
	assert.NotEqual(t, full.gen, same.gen)

	require.NoError(t, os.WriteFile(filepath.Join(ws, "b/c.txt"), []byte("TWO!"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(ws, "d.txt")))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "e.txt"), []byte("new"), 0o644))
	changed := filesSince(t, f, same.gen)
	assert.Equal(t, map[string]string{"b/c.txt": "TWO!", "e.txt": "new"}, changed.sent)
	assert.Equal(t, map[string]string{"a.txt": hexSum("one")}, changed.unchanged, "d.txt deleted: not passed at all")

	stale := filesSince(t, f, same.gen)
	assert.Len(t, stale.sent, 3, "an older generation than the latest sends everything")
	unknown := filesSince(t, f, "g-unknown")
	assert.Len(t, unknown.sent, 3, "an unknown generation sends everything")
}

// TestFilesSinceSameSizeRewrite: a rewrite in place at the same size with
// the old mtime put back (what a size+mtime check misses) is sent.
func TestFilesSinceSameSizeRewrite(t *testing.T) {
	f, ws := trackedFS(t, map[string]string{"a.txt": "1111"})
	p := filepath.Join(ws, "a.txt")
	before, err := os.Stat(p)
	require.NoError(t, err)
	first := filesSince(t, f, "")
	file, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = file.WriteAt([]byte("2222"), 0)
	require.NoError(t, err)
	require.NoError(t, file.Close())
	require.NoError(t, os.Chtimes(p, before.ModTime(), before.ModTime()))
	after := filesSince(t, f, first.gen)
	assert.Equal(t, map[string]string{"a.txt": "2222"}, after.sent)
}

// TestFilesSinceRacyEntries: a file modified no earlier than the stamp
// taken before its stat is not recorded, so the next snapshot reads it
// again even though its stat key has not moved: a write later in the same
// tick would not have moved it either.
func TestFilesSinceRacyEntries(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x"), 0o644))
	f, err := New(dir, nil) // no stamp folder: the wall clock less racyWindow
	require.NoError(t, err)
	old := racyWindow
	racyWindow = time.Hour // the file is "just written"
	t.Cleanup(func() { racyWindow = old })
	first := filesSince(t, f, "")
	second := filesSince(t, f, first.gen)
	assert.Equal(t, map[string]string{"a.txt": "x"}, second.sent, "a racy entry is read again")

	racyWindow = 0
	third := filesSince(t, f, second.gen)
	assert.Equal(t, map[string]string{"a.txt": "x"}, third.sent, "still unrecorded from the racy snapshot")
	fourth := filesSince(t, f, third.gen)
	assert.Empty(t, fourth.sent, "recorded once out of the racy window")
}

// TestRecordFiles: files a backend wrote at create are known from the
// first snapshot on; files it did not declare, or that changed, are sent.
func TestRecordFiles(t *testing.T) {
	f, ws := trackedFS(t, map[string]string{"a.txt": "one", "b.txt": "two", "other.txt": "?"})
	gen, err := f.RecordFiles(t.Context(), map[string]string{"a.txt": hexSum("one"), "b.txt": hexSum("two"), "gone.txt": hexSum("")})
	require.NoError(t, err)
	require.NotEmpty(t, gen)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "b.txt"), []byte("TWO"), 0o644))
	s := filesSince(t, f, gen)
	assert.Equal(t, map[string]string{"b.txt": "TWO", "other.txt": "?"}, s.sent)
	assert.Equal(t, map[string]string{"a.txt": hexSum("one")}, s.unchanged)
}

// TestRecordFilesWaitsOutTheTick: files written just before RecordFiles,
// within the filesystem's current tick, are recorded all the same once
// the tick has passed, so the first snapshot sends nothing.
func TestRecordFilesWaitsOutTheTick(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	f, err := New(ws, nil, StampDir(base))
	require.NoError(t, err)
	known := map[string]string{}
	for i := range 50 {
		fi, err := f.WriteFile(t.Context(), filepath.Join("d", string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0)
		require.NoError(t, err)
		known[fi.Path] = fi.SHA256
	}
	gen, err := f.RecordFiles(t.Context(), known)
	require.NoError(t, err)
	s := filesSince(t, f, gen)
	assert.Empty(t, s.sent)
	assert.Len(t, s.unchanged, 50)
}

// TestStampReadsTheFilesystemClock: a stamp is no later than the mtime of a
// file written after it, and stamps touch one file in the stamp folder
// rather than leaving (or making) a file each.
func TestStampReadsTheFilesystemClock(t *testing.T) {
	f, ws := trackedFS(t, map[string]string{"a.txt": "one"})
	stampDir := filepath.Dir(ws)
	for i := 0; i < 3; i++ {
		stamp := f.changes.stamp()
		p := filepath.Join(ws, "after.txt")
		require.NoError(t, os.WriteFile(p, []byte{byte(i)}, 0o644))
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.LessOrEqual(t, stamp, fi.ModTime().UnixNano(), "a write after the stamp is not older than it")
		assert.Greater(t, stamp, time.Now().Add(-racyWindow/2).UnixNano(), "the filesystem's clock, not the wall clock less racyWindow")
	}
	entries, err := os.ReadDir(stampDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"ws", stampFile}, names)
}

// BenchmarkFilesSinceUnchanged: the snapshot of a warm one-file sandbox
// whose file did not change (a chat turn that only talked): a stamp and a
// one-entry walk.
func BenchmarkFilesSinceUnchanged(b *testing.B) {
	base := b.TempDir()
	ws := filepath.Join(base, "ws")
	require.NoError(b, os.Mkdir(ws, 0o755))
	p := filepath.Join(ws, "index.html")
	require.NoError(b, os.WriteFile(p, []byte("<html></html>"), 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(b, os.Chtimes(p, old, old))
	f, err := New(ws, nil, StampDir(base))
	require.NoError(b, err)
	ctx := context.Background()
	none := func(string) bool { return false }
	gen, err := f.FilesSince(ctx, "", none, func(sandbox.SnapshotEntry) error { return nil })
	require.NoError(b, err)
	// Settled: the file's ctime (set by Chtimes) may fall in the first
	// snapshot's timestamp tick, and then the next one sends it again.
	require.Eventually(b, func() bool {
		sent := 0
		gen, err = f.FilesSince(ctx, gen, none, func(e sandbox.SnapshotEntry) error {
			if !e.Unchanged {
				sent++
			}
			return nil
		})
		return err == nil && sent == 0
	}, 5*time.Second, time.Millisecond)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sent := 0
		if gen, err = f.FilesSince(ctx, gen, none, func(e sandbox.SnapshotEntry) error {
			if !e.Unchanged {
				sent++
			}
			return nil
		}); err != nil || sent != 0 {
			b.Fatalf("sent %d: %v", sent, err)
		}
	}
}
