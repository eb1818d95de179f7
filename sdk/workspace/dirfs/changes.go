package dirfs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Change tracking for snapshots (sandbox.ChangeTracker). After each
// snapshot, and after a backend wrote a sandbox's files at create, the FS
// records what the host now holds: for each file its stat key (size, mode,
// mtime, ctime, inode, as the hash cache keys them) and its content's
// sha256, under a fresh generation token. A snapshot since that generation
// passes a file whose stat key is still the recorded one as Unchanged,
// without reading it.
//
// Racily clean entries (git's term): a file written again within the same
// timestamp tick as the stat that was recorded, at the same size and in
// place, would keep its stat key. So an entry is recorded only if the file's
// mtime and ctime are strictly older than a timestamp the filesystem itself
// gave just before the stat (a stamp file, StampDir), and any later write
// then moves them. Without a stamp folder the entry must be older than
// racyWindow by the wall clock.

// changeRecord is the file set of one generation.
type changeRecord struct {
	gen   string
	files map[string]recordEntry
	// leftOut are the paths the snapshot passed as LeftOut, and mark the
	// FS's write log number when it began (see quiet.go); a record that
	// did not come from a snapshot (RecordFiles) has neither, and is
	// never snapshotted from without a walk.
	leftOut  []sandbox.SnapshotEntry
	mark     uint64
	complete bool
	// passedWhole are the files the snapshot passed with their content
	// but could not record (see FilesSince): the caller holds them too,
	// so a snapshot of changes since must say when they are gone.
	passedWhole []string
	// settled: when the snapshot began, no command was in flight and the
	// backend vouched that none had left a process behind (Quiet).
	settled bool
}

// recordEntry is one file as the host holds it.
type recordEntry struct {
	hashEntry
	mode fs.FileMode
}

// changes holds the latest record of an FS. Only the latest is kept: a
// snapshot since an older generation sends everything, which is always
// correct.
type changes struct {
	mu       sync.Mutex
	last     *changeRecord
	stampDir string
}

// StampDir names a folder outside the workspace, on its filesystem, where
// snapshots create (and remove) a stamp file to read the filesystem's own
// clock: files modified no earlier than it are not recorded as clean (see
// FilesSince). Without it, the wall clock and racyWindow are used, and a
// file stays unrecorded for racyWindow after each change.
func StampDir(dir string) Option { return func(f *FS) { f.changes.stampDir = dir } }

// stamp is the time before which a modification is safely in the past:
// the filesystem's own clock, read as the mtime of a stamp file in the
// stamp folder (whose clock and granularity are the workspace's) just set
// to "now" by the kernel, or the wall clock less racyWindow.
//
// The file is made once and touched (utimensat with UTIME_NOW) on every
// stamp: creating a file per stamp costs close to a millisecond on some
// journaling filesystems, touching one a few microseconds. Two stamps may
// interleave: each reads a time set no earlier than its own start, and
// every stat of its walk comes after that read, which is all a stamp
// promises.
func (c *changes) stamp() int64 {
	if c.stampDir != "" {
		name := filepath.Join(c.stampDir, stampFile)
		err := touchNow(name)
		if errors.Is(err, fs.ErrNotExist) {
			if file, cerr := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o600); cerr == nil {
				file.Close()
				err = touchNow(name)
			}
		}
		if err == nil {
			if fi, serr := os.Lstat(name); serr == nil && fi.Mode().IsRegular() {
				return fi.ModTime().UnixNano()
			}
		}
	}
	return time.Now().Add(-racyWindow).UnixNano()
}

// stampFile is the stamp folder's file whose mtime stamp sets and reads.
const stampFile = ".snapshot-stamp"

// entryOf is the record of a regular file as of fi with content sha, and
// whether it may be recorded: it has a stat key, and was last modified
// before stamp.
func entryOf(fi fs.FileInfo, sha string, stamp int64) (recordEntry, bool) {
	mtime, ctime, ino, ok := statKey(fi)
	if !ok || mtime >= stamp || ctime >= stamp {
		return recordEntry{}, false
	}
	return recordEntry{hashEntry: hashEntry{size: fi.Size(), mtime: mtime, ctime: ctime, ino: ino, sha: sha}, mode: fi.Mode()}, true
}

// matches reports whether fi still has e's stat key.
func (e recordEntry) matches(fi fs.FileInfo) bool {
	mtime, ctime, ino, ok := statKey(fi)
	return ok && fi.Mode() == e.mode && fi.Size() == e.size && mtime == e.mtime && ctime == e.ctime && ino == e.ino
}

// record returns generation gen's record, nil when that is not the latest
// generation.
func (c *changes) record(gen string) *changeRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == "" || c.last == nil || c.last.gen != gen {
		return nil
	}
	return c.last
}

// commitRecord makes r, the file set a complete snapshot passed (whole:
// every file it passed is recorded, in files or by a mark of the write log
// after mark), the latest record, and returns its generation; the write
// log forgets the marks the record holds.
func (c *changes) commitRecord(r *changeRecord, mark uint64, w *writeLog) string {
	r.mark, r.complete = mark, true
	gen := c.commitWith(r)
	if gen != "" {
		w.forget(mark)
	}
	return gen
}

// commit makes files the latest record and returns its generation.
func (c *changes) commit(files map[string]recordEntry) string {
	return c.commitWith(&changeRecord{files: files})
}

// commitWith makes r the latest record under a new generation, which it
// returns ("" and no record when it is too big to keep).
func (c *changes) commitWith(r *changeRecord) string {
	if len(r.files) > maxHashCacheEntries {
		c.mu.Lock()
		c.last = nil
		c.mu.Unlock()
		return ""
	}
	r.gen = "g" + rand.Text()
	c.mu.Lock()
	c.last = r
	c.mu.Unlock()
	return r.gen
}

// FilesSince is Files for sandbox.ChangeTracker: a file whose stat key is
// the one recorded at generation since is passed as Unchanged, with the
// recorded sha256 and without being read. Every file passed is recorded
// under a new generation, which it returns once the walk completed; an
// empty or unknown since (only the latest generation is kept) passes every
// file's content.
func (f *FS) FilesSince(ctx context.Context, since string, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error) (string, error) {
	gen, _, err := f.filesSince(ctx, since, false, exclude, emit)
	return gen, err
}

// FilesChanged is FilesSince for sandbox.ChangeLister: when since is the
// latest generation (changesOnly is then true) it passes no Unchanged
// entries, only the files changed or added since (with content), every
// LeftOut entry, and a Removed entry for each file of since's record that
// the new one does not hold. Otherwise it passes what FilesSince would.
func (f *FS) FilesChanged(ctx context.Context, since string, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error) (generation string, changesOnly bool, err error) {
	return f.filesSince(ctx, since, true, exclude, emit)
}

func (f *FS) filesSince(ctx context.Context, since string, changesOnly bool, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error) (string, bool, error) {
	// The stamp comes before any stat of the walk (readEntries stats
	// each entry as it lists its folder).
	stamp := f.changes.stamp()
	// Marks after this number are changes the snapshot may not see.
	began := f.writes.now()
	rec := f.changes.record(since)
	// Only a snapshot's record says exactly which files the caller holds
	// (RecordFiles' may have left some of the backend's writes out).
	delta := changesOnly && rec != nil && rec.complete
	if delta {
		// The caller holds rec's files: what did not change stays unsaid.
		all := emit
		emit = func(e sandbox.SnapshotEntry) error {
			if e.Unchanged {
				return nil
			}
			return all(e)
		}
	}
	if rec != nil && rec.complete && rec.settled {
		if changed, ok := f.writes.changedSince(rec.mark); ok {
			gen, err := f.filesQuiet(ctx, rec, changed, began, stamp, exclude, emit, delta)
			return gen, delta, err
		}
	}
	// Asked after began: a command that starts from here on is loud
	// after the record's mark.
	settled := f.quiet != nil && f.writes.calm() && f.quiet()
	var prev map[string]recordEntry
	if rec != nil {
		prev = rec.files
	}
	next := &changeRecord{files: map[string]recordEntry{}, settled: settled}
	passed := func(e sandbox.SnapshotEntry) error {
		if e.LeftOut != "" {
			next.leftOut = append(next.leftOut, e)
		}
		return emit(e)
	}
	err := f.walkFiles(ctx, exclude, passed, func(rel string, d fs.DirEntry) (sandbox.SnapshotEntry, bool) {
		e, ok := prev[rel]
		if !ok {
			return sandbox.SnapshotEntry{}, false
		}
		fi, err := d.Info()
		if err != nil || !e.matches(fi) {
			return sandbox.SnapshotEntry{}, false
		}
		next.files[rel] = e
		return sandbox.SnapshotEntry{File: sandbox.File{Path: rel, Mode: uint32(fi.Mode().Perm())}, Size: fi.Size(), Unchanged: true, SHA256: e.sha}, true
	}, next.reader(stamp))
	if err != nil {
		return "", false, err
	}
	if delta {
		if err := passRemoved(rec, next, emit); err != nil {
			return "", false, err
		}
	}
	return f.commitPassed(next, began), delta, nil
}

// Settled reports whether generation gen is the latest record, made by a
// complete snapshot that began settled: no command was in flight and the
// backend vouched that none had left a process behind (Quiet). The files
// can then change only through the FS's own API (sandbox.Settler).
func (f *FS) Settled(gen string) bool {
	rec := f.changes.record(gen)
	return rec != nil && rec.complete && rec.settled
}

// reader records in r each file a snapshot read whole (its content data,
// as of fi), or, when it cannot be recorded (written within the stamp's
// tick, or it changed size while read: what was sent is not what fi
// describes), adds it to the files passed whole.
func (r *changeRecord) reader(stamp int64) func(rel string, fi fs.FileInfo, data []byte) {
	return func(rel string, fi fs.FileInfo, data []byte) {
		if int64(len(data)) == fi.Size() {
			sum := sha256.Sum256(data)
			if e, ok := entryOf(fi, hex.EncodeToString(sum[:]), stamp); ok {
				r.files[rel] = e
				return
			}
		}
		r.passedWhole = append(r.passedWhole, rel)
	}
}

// commitPassed makes next, a complete snapshot's record, the latest and
// returns its generation. A file it passed but could not record stays
// changed for the next snapshot (one without a walk would otherwise take
// it as deleted).
func (f *FS) commitPassed(next *changeRecord, began uint64) string {
	for _, p := range next.passedWhole {
		f.writes.touch(p)
	}
	return f.changes.commitRecord(next, began, &f.writes)
}

// passRemoved passes a Removed entry for each file the caller held at
// prev (its record and the files it passed whole) that the snapshot just
// taken (next, its files passed whole included) no longer holds as a
// file, in path order.
func passRemoved(prev, next *changeRecord, emit func(sandbox.SnapshotEntry) error) error {
	passed := make(map[string]bool, len(next.passedWhole)+len(next.leftOut))
	for _, p := range next.passedWhole {
		passed[p] = true
	}
	for _, lo := range next.leftOut {
		passed[lo.Path] = true
	}
	var gone []string
	held := func(p string) {
		if _, ok := next.files[p]; !ok && !passed[p] {
			gone = append(gone, p)
		}
	}
	for p := range prev.files {
		held(p)
	}
	for _, p := range prev.passedWhole {
		if _, recorded := prev.files[p]; !recorded {
			held(p)
		}
	}
	slices.Sort(gone)
	for _, p := range gone {
		if err := emit(sandbox.SnapshotEntry{File: sandbox.File{Path: p}, Removed: true}); err != nil {
			return err
		}
	}
	return nil
}

// RecordFiles records the files a backend has just written into the
// workspace, before any command ran in it, as the host holds them: known
// maps their paths to the sha256 of the content written. It returns the
// generation naming that file set (sandbox.Info.SnapshotGeneration), so
// that the sandbox's first snapshot sends only what changed. Files written
// within the filesystem's current timestamp tick would be racy: with a
// stamp folder it waits for the tick to pass (a few milliseconds at most,
// and nothing can write them meanwhile), without one they are left
// unrecorded, so that snapshot sends them.
func (f *FS) RecordFiles(ctx context.Context, known map[string]string) (string, error) {
	stamp := f.changes.stamp()
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	files := make(map[string]recordEntry, len(known))
	racy := map[string]recordEntry{}
	newest := int64(0)
	err = walk(ctx, r, "", walkOptions{}, func(e entry) (bool, error) {
		rel, d := e.rel, e.d
		if d.IsDir() {
			return true, nil
		}
		sha, ok := known[rel]
		if !ok || !d.Type().IsRegular() || !utf8.ValidString(rel) {
			return false, nil
		}
		fi, err := d.Info()
		if err != nil {
			return false, nil // gone: nothing to record
		}
		if e, ok := entryOf(fi, sha, stamp); ok {
			files[rel] = e
		} else if e, ok := entryOf(fi, sha, math.MaxInt64); ok {
			racy[rel] = e
			newest = max(newest, e.mtime, e.ctime)
		}
		return false, nil
	})
	if err != nil {
		return "", mapErr("", err)
	}
	if len(racy) > 0 && f.changes.stampDir != "" && f.changes.waitPast(ctx, newest) {
		for rel, e := range racy {
			if fi, err := r.Lstat(rel); err == nil && e.matches(fi) {
				files[rel] = e
			}
		}
	}
	return f.changes.commit(files), nil
}

// maxTickWait bounds how long RecordFiles waits for the filesystem's clock
// to pass the files it wrote: a timestamp tick is a few milliseconds (a
// jiffy); a filesystem with coarser times is not worth waiting for.
const maxTickWait = 50 * time.Millisecond

// waitPast waits until a stamp is later than t, and says whether one was.
func (c *changes) waitPast(ctx context.Context, t int64) bool {
	deadline := time.Now().Add(maxTickWait)
	for c.stamp() <= t {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Millisecond) // polling the filesystem's clock: nothing to wait on
	}
	return true
}
