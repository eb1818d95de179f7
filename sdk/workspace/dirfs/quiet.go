package dirfs

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Snapshots without a walk. A snapshot since a generation normally walks
// the whole workspace and stats every file (FilesSince), because commands
// may have written anything. When nothing but the FS's own writes can have
// changed the workspace since that generation's record — when the record
// was made, the backend vouched that no process it started was left
// (Quiet), and since then no command ran and no service was started, so
// none can have — the files the FS wrote, removed or renamed since are the
// only ones that changed: the snapshot reads those and passes the rest
// from the record, without a single stat. A warm chat turn that patched
// one file of a big app then snapshots one file.
//
// "No process was left" must hold when the record is made, not only when
// the next snapshot asks: a process still running then may write and exit
// before the next snapshot.

// Quiet lets snapshots skip the walk when the FS's own writes are all that
// changed (see above). quiet reports whether no process the backend
// started for the sandbox can still be running (one that left its process
// group, say, or escaped to another session): it is asked before every
// such snapshot, so it must be cheap, and must answer false when in doubt.
func Quiet(quiet func() bool) Option { return func(f *FS) { f.quiet = quiet } }

// writeLog follows what the FS's own API changed: a mark per path written,
// removed or renamed, and when something it cannot follow (a command, a
// service) may have written. Marks are numbered; a change record keeps the
// number current when its snapshot began, so the marks after it are the
// paths changed since.
type writeLog struct {
	mu    sync.Mutex
	seq   uint64
	marks map[string]uint64 // workspace path → number of its last mark
	// loud is the number of the last moment a command or service may have
	// written; running counts commands in flight; services is set once a
	// service was started (they run on their own, so the FS stays loud).
	loud     uint64
	running  int
	services bool
}

// touch marks rel (a file or a folder and everything under it) changed.
func (w *writeLog) touch(rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	if w.marks == nil {
		w.marks = map[string]uint64{}
	}
	w.marks[rel] = w.seq
}

// execStart and execEnd bracket a command: anything may change meanwhile.
func (w *writeLog) execStart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.loud = w.seq
	w.running++
}

func (w *writeLog) execEnd() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.loud = w.seq
	w.running--
}

// serviceStarted makes the FS loud for good.
func (w *writeLog) serviceStarted() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.loud = w.seq
	w.services = true
}

// now is the current mark number.
func (w *writeLog) now() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// calm reports whether no command is in flight and no service was ever
// started: the backend may then be asked whether anything lingers.
func (w *writeLog) calm() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running == 0 && !w.services
}

// changedSince returns the paths marked after mark n, sorted, and whether
// only those can have changed since (nothing loud since n, nothing loud
// in flight).
func (w *writeLog) changedSince(n uint64) ([]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running > 0 || w.services || w.loud > n {
		return nil, false
	}
	var paths []string
	for p, m := range w.marks {
		if m > n {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, true
}

// forget drops the marks at or before n (a record made since holds them).
func (w *writeLog) forget(n uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, m := range w.marks {
		if m <= n {
			delete(w.marks, p)
		}
	}
}

// under reports whether p is root or lies under it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// topmost keeps of sorted paths those not under another of them.
func topmost(sorted []string) []string {
	var out []string
	for _, p := range sorted {
		if len(out) == 0 || !under(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// excluder reports whether exclude drops a path or a folder above it, as
// a walk would have left it out, asking about each folder once.
func excluder(exclude func(rel string) bool) func(p string) bool {
	if exclude == nil {
		return func(string) bool { return false }
	}
	dirs := map[string]bool{}
	return func(p string) bool {
		for i := range p {
			if p[i] != '/' {
				continue
			}
			dir := p[:i]
			out, seen := dirs[dir]
			if !seen {
				out = exclude(dir)
				dirs[dir] = out
			}
			if out {
				return true
			}
		}
		return exclude(p)
	}
}

// filesQuiet is FilesSince when only the paths in changed (sorted) can
// differ from rec: every other file of rec is passed from it, unchanged,
// and the changed paths (files, or folders read whole) are read, all in
// the walk's order (byte order of paths). It records the new file set
// under a new generation, as FilesSince does, and returns it. With delta
// (a snapshot of changes) it is changesQuiet.
func (f *FS) filesQuiet(ctx context.Context, rec *changeRecord, changed []string, began uint64, stamp int64,
	exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error, delta bool) (string, error) {
	r, err := f.open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	excluded := excluder(exclude)
	roots := topmost(changed)
	isRoot := make(map[string]bool, len(roots))
	for _, p := range roots {
		isRoot[p] = true
	}
	isChanged := func(p string) bool {
		if isRoot[p] {
			return true
		}
		for i := range p {
			if p[i] == '/' && isRoot[p[:i]] {
				return true
			}
		}
		return false
	}
	if delta {
		return f.changesQuiet(ctx, r, rec, roots, isChanged, began, stamp, exclude, emit)
	}
	// What the record holds outside the changed paths, in order.
	type held struct {
		path    string
		entry   recordEntry
		leftOut string
	}
	kept := make([]held, 0, len(rec.files))
	for p, e := range rec.files {
		if !isChanged(p) && !excluded(p) {
			kept = append(kept, held{path: p, entry: e})
		}
	}
	for _, lo := range rec.leftOut {
		p := lo.Path
		if q, err := strconv.Unquote(p); err == nil && strings.HasPrefix(p, `"`) {
			p = q // a name that is not UTF-8, passed quoted
		}
		if !isChanged(p) && !excluded(p) {
			kept = append(kept, held{path: lo.Path, leftOut: lo.LeftOut})
		}
	}
	slices.SortFunc(kept, func(a, b held) int { return strings.Compare(a.path, b.path) })

	// Nothing was left when rec was made and nothing started since:
	// nothing is left now either.
	next := &changeRecord{files: make(map[string]recordEntry, len(rec.files)), settled: true}
	pass := func(e sandbox.SnapshotEntry) error {
		if e.LeftOut != "" {
			next.leftOut = append(next.leftOut, e)
		}
		return emit(e)
	}
	read := next.reader(stamp)
	k := 0
	// passKept passes the held entries that sort before limit ("": all).
	passKept := func(limit string) error {
		for ; k < len(kept) && (limit == "" || kept[k].path < limit); k++ {
			h := kept[k]
			if h.leftOut != "" {
				if err := pass(sandbox.SnapshotEntry{File: sandbox.File{Path: h.path}, LeftOut: h.leftOut}); err != nil {
					return err
				}
				continue
			}
			next.files[h.path] = h.entry
			e := sandbox.SnapshotEntry{File: sandbox.File{Path: h.path, Mode: uint32(h.entry.mode.Perm())}, Size: h.entry.size, Unchanged: true, SHA256: h.entry.sha}
			if err := emit(e); err != nil {
				return err
			}
		}
		return nil
	}
	// A changed folder's files sort from its name and a slash on (after
	// the names that extend its own: "a.txt" before "a/b"), a changed
	// file where its name does; no other path sorts among a folder's
	// files, since the roots are topmost and kept has none under them.
	type unit struct{ root, key string }
	units := make([]unit, 0, len(roots))
	for _, root := range roots {
		key := root
		if fi, err := r.Lstat(root); err == nil && fi.IsDir() {
			key = root + "/"
		}
		units = append(units, unit{root, key})
	}
	slices.SortFunc(units, func(a, b unit) int { return strings.Compare(a.key, b.key) })
	for _, u := range units {
		if err := passKept(u.key); err != nil {
			return "", err
		}
		if excluded(u.root) {
			continue
		}
		if err := f.walkFilesAt(ctx, r, u.root, exclude, pass, nil, read); err != nil {
			return "", err
		}
	}
	if err := passKept(""); err != nil {
		return "", err
	}
	f.quietSnapshots.Add(1)
	return f.commitPassed(next, began), nil
}

// changesQuiet is filesQuiet for a snapshot of changes (FilesChanged): the
// record's files outside the changed paths are the caller's already and
// are not passed, so nothing needs putting in order; the changed paths are
// read, every path left out is passed again, and the files gone are
// passed as Removed.
func (f *FS) changesQuiet(ctx context.Context, r *os.Root, rec *changeRecord, roots []string, isChanged func(string) bool, began uint64, stamp int64,
	exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error) (string, error) {
	excluded := excluder(exclude)
	next := &changeRecord{files: make(map[string]recordEntry, len(rec.files)), settled: true}
	for p, e := range rec.files {
		if !isChanged(p) && !excluded(p) {
			next.files[p] = e
		}
	}
	pass := func(e sandbox.SnapshotEntry) error {
		if e.LeftOut != "" {
			next.leftOut = append(next.leftOut, e)
		}
		return emit(e)
	}
	for _, lo := range rec.leftOut {
		p := lo.Path
		if q, err := strconv.Unquote(p); err == nil && strings.HasPrefix(p, `"`) {
			p = q // a name that is not UTF-8, passed quoted
		}
		if !isChanged(p) && !excluded(p) {
			if err := pass(sandbox.SnapshotEntry{File: sandbox.File{Path: lo.Path}, LeftOut: lo.LeftOut}); err != nil {
				return "", err
			}
		}
	}
	for _, root := range roots {
		if excluded(root) {
			continue
		}
		if err := f.walkFilesAt(ctx, r, root, exclude, pass, nil, next.reader(stamp)); err != nil {
			return "", err
		}
	}
	if err := passRemoved(rec, next, emit); err != nil {
		return "", err
	}
	f.quietSnapshots.Add(1)
	return f.commitPassed(next, began), nil
}
