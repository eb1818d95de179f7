package dirfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// errStop ends a walk early without being an error.
var errStop = errors.New("stop walking")

// entry is one name found in a folder. sha is the file's hash when a
// prefetch worker already computed it (walkOptions.hash), else "".
type entry struct {
	rel string
	d   fs.DirEntry
	sha string
}

// runHeap merges the entry lists of the folders a walk discovered, each
// sorted by path (read sorts them, on whichever goroutine reads the
// folder), into one sequence in path order. It is ordered by the first
// entry of each list, so it holds a list per folder being walked (a few),
// not an entry per name discovered.
type runHeap [][]entry

func (h *runHeap) push(list []entry) {
	if len(list) == 0 {
		return
	}
	*h = append(*h, list)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if s[parent][0].rel <= s[i][0].rel {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

// pop removes and returns the first entry in path order; h is not empty.
func (h *runHeap) pop() entry {
	s := *h
	top := s[0][0]
	if s[0] = s[0][1:]; len(s[0]) == 0 {
		last := len(s) - 1
		s[0] = s[last]
		s[last] = nil
		s = s[:last]
		*h = s
	}
	for i := 0; ; {
		least := i
		if l := 2*i + 1; l < len(s) && s[l][0].rel < s[least][0].rel {
			least = l
		}
		if r := 2*i + 2; r < len(s) && s[r][0].rel < s[least][0].rel {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	return top
}

// walkOptions let a walk read folders ahead of the ordered visit, on a
// few goroutines. The zero value reads each folder when it is visited.
type walkOptions struct {
	// descend says whether visit will descend into folder e; only such
	// folders are read ahead. nil: nothing is.
	descend func(e entry) bool
	// budget stops reading ahead once this many entries have been found:
	// a walk that will stop at a limit reads at most the folders found
	// before it, plus those it visits.
	budget int
	// hash, when set, runs on the worker for the entries of each folder
	// read ahead and fills in entry.sha where it can ("" where it has
	// none to give). stopped says the walk is over: the rest may be left.
	hash func(list []entry, stopped func() bool)
	// names, when set, keeps the names of folders read and gives them
	// back while a folder is unchanged (see nameCache).
	names *nameCache
	// found, when set, is told how many entries the walk has found each
	// time it adds a folder's: the visit will see no more than that
	// unless more are found.
	found func(n int)
}

// prefetchWorkers bounds the goroutines reading folders ahead. Reading a
// cached folder is CPU work in the kernel (getdents, one lstat per name),
// so more workers than CPUs gain nothing there; a few more than that keep
// a cold disk busy. 8 caps what one listing may take from a busy machine.
var prefetchWorkers = min(max(runtime.GOMAXPROCS(0), 2), 8)

// walk visits the entries under folder start ("" = root) in byte order of
// their full paths, which a plain depth-first walk does not give ("a.txt"
// sorts between "a" and "a/b"). Merging the sorted lists of the folders
// discovered does: every path still undiscovered lies under a folder in one
// of them and so sorts after it. A listing can therefore stop at its limit
// having read only the folders it returned (plus, with opts.descend, those
// read ahead within opts.budget). visit says whether to descend into a
// folder; symlinks to folders are entries, never descended, so a walk never
// leaves the root. Returning errStop from visit ends the walk cleanly.
//
// Every folder is opened through r (openat beneath the root, no symlink
// followed), on whichever goroutine reads it; walk waits for its workers
// before it returns.
func walk(ctx context.Context, r *os.Root, start string, opts walkOptions, visit func(e entry) (bool, error)) error {
	w := &walker{r: r, opts: opts, pending: map[string]*dirJob{}}
	defer w.stop()
	h := &runHeap{}
	push := func(list []entry) {
		h.push(list)
		for _, e := range list {
			w.found++
			if w.opts.descend != nil && w.found <= w.opts.budget && e.d.IsDir() && w.opts.descend(e) {
				w.ahead(ctx, e.rel)
			}
		}
		if w.opts.found != nil {
			w.opts.found(w.found)
		}
	}
	list, err := w.read(start, false)
	if err != nil {
		return err
	}
	push(list)
	for len(*h) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := h.pop()
		descend, err := visit(e)
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return err
		}
		if descend && e.d.IsDir() {
			list, err := w.take(e.rel)
			// A folder removed since it was listed is simply gone.
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			push(list)
		}
	}
	return nil
}

// dirJob is one folder read ahead. state goes from 0 (queued) to 1 when a
// worker or the walk itself claims it; done closes when a worker has
// filled list and err.
type dirJob struct {
	rel   string
	state atomic.Int32
	done  chan struct{}
	list  []entry
	err   error
}

// walker holds a walk's read-ahead: jobs are queued in the order the
// ordered visit found their folders, which is close to the order it will
// want them.
type walker struct {
	r       *os.Root
	opts    walkOptions
	found   int
	pending map[string]*dirJob
	jobs    chan *dirJob
	wg      sync.WaitGroup
	stopped atomic.Bool
}

// maxQueuedDirs bounds the read-ahead queue; a folder found while it is
// full is read when visited, as without read-ahead.
const maxQueuedDirs = 4096

// ahead queues folder rel to be read by a worker, starting the workers on
// first use.
func (w *walker) ahead(ctx context.Context, rel string) {
	if w.jobs == nil {
		w.jobs = make(chan *dirJob, maxQueuedDirs)
		for range prefetchWorkers {
			w.wg.Add(1)
			go w.work(ctx)
		}
	}
	j := &dirJob{rel: rel, done: make(chan struct{})}
	select {
	case w.jobs <- j:
		w.pending[rel] = j
	default:
	}
}

func (w *walker) work(ctx context.Context) {
	defer w.wg.Done()
	for j := range w.jobs {
		if w.stopped.Load() || ctx.Err() != nil || !j.state.CompareAndSwap(0, 1) {
			continue
		}
		j.list, j.err = w.read(j.rel, true)
		close(j.done)
	}
}

// take returns the entries of folder rel: those a worker read, waiting for
// it if it is reading them now, or read here if no worker has started.
func (w *walker) take(rel string) ([]entry, error) {
	j := w.pending[rel]
	if j == nil {
		return w.read(rel, false)
	}
	delete(w.pending, rel)
	if j.state.CompareAndSwap(0, 1) {
		return w.read(rel, false)
	}
	<-j.done
	return j.list, j.err
}

// stop ends the read-ahead and waits for the workers: a folder being read
// is finished, queued ones are dropped.
func (w *walker) stop() {
	if w.jobs == nil {
		return
	}
	w.stopped.Store(true)
	close(w.jobs)
	w.wg.Wait()
}

// read lists folder dir through the root, each entry with its lstat
// (readEntries), sorted by path. onWorker runs opts.hash on the entries.
func (w *walker) read(dir string, onWorker bool) ([]entry, error) {
	d, err := w.r.Open(rootName(dir))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	list, err := readEntries(d, dir, w.opts.names)
	if err != nil {
		return nil, err
	}
	if onWorker && w.opts.hash != nil && !w.stopped.Load() {
		w.opts.hash(list, w.stopped.Load)
	}
	return list, nil
}
