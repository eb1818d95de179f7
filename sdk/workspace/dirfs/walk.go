package dirfs

import (
	"container/heap"
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

// entryHeap orders entries by path, byte-wise.
type entryHeap []entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].rel < h[j].rel }
func (h entryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
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
	// hash, when set, runs on the worker for every entry of a folder read
	// ahead and fills entry.sha ("" when it has none to give).
	hash func(e entry) string
}

// prefetchWorkers bounds the goroutines reading folders ahead. Reading a
// cached folder is CPU work in the kernel (getdents, one lstat per name),
// so more workers than CPUs gain nothing there; a few more than that keep
// a cold disk busy. 8 caps what one listing may take from a busy machine.
var prefetchWorkers = min(max(runtime.GOMAXPROCS(0), 2), 8)

// walk visits the entries under folder start ("" = root) in byte order of
// their full paths, which a plain depth-first walk does not give ("a.txt"
// sorts between "a" and "a/b"). A heap of discovered entries does: every
// path still undiscovered lies under a folder in the heap and so sorts after
// it. A listing can therefore stop at its limit having read only the folders
// it returned (plus, with opts.descend, those read ahead within
// opts.budget). visit says whether to descend into a folder; symlinks to
// folders are entries, never descended, so a walk never leaves the root.
// Returning errStop from visit ends the walk cleanly.
//
// Every folder is opened through r (openat beneath the root, no symlink
// followed), on whichever goroutine reads it; walk waits for its workers
// before it returns.
func walk(ctx context.Context, r *os.Root, start string, opts walkOptions, visit func(e entry) (bool, error)) error {
	w := &walker{r: r, opts: opts, pending: map[string]*dirJob{}}
	defer w.stop()
	h := &entryHeap{}
	push := func(list []entry) {
		for _, e := range list {
			heap.Push(h, e)
			w.found++
			if w.opts.descend != nil && w.found <= w.opts.budget && e.d.IsDir() && w.opts.descend(e) {
				w.ahead(ctx, e.rel)
			}
		}
	}
	list, err := w.read(start, false)
	if err != nil {
		return err
	}
	push(list)
	for h.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := heap.Pop(h).(entry)
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

// read lists folder dir through the root. Entries opened in an os.Root
// come with their lstat already done (relative to the folder's descriptor,
// never following a symlink). onWorker runs opts.hash on each entry.
func (w *walker) read(dir string, onWorker bool) ([]entry, error) {
	d, err := w.r.Open(rootName(dir))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	list, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]entry, len(list))
	for i, e := range list {
		// As path.Join: a listed name is never "", "." or ".." and has
		// no slash.
		rel := e.Name()
		if dir != "" {
			rel = dir + "/" + rel
		}
		out[i] = entry{rel: rel, d: e}
		if onWorker && w.opts.hash != nil {
			if w.stopped.Load() {
				onWorker = false // the walk is over; leave the rest unhashed
				continue
			}
			out[i].sha = w.opts.hash(out[i])
		}
	}
	return out, nil
}
