package dirfs

import (
	"io"
	"os"
	"sync"
	"syscall"
)

// Groups tracks the process groups a workspace's commands run in, so that
// stopping the workspace kills every process, including ones a command left
// in the background (a dev server, say), and the goroutines still draining
// their output. The zero value is ready to use.
type Groups struct {
	// RecordDir, when set, is a folder (created on demand) where each
	// tracked group leaves a file while it may have processes, so that a
	// plugin relaunched after a crash can kill what its predecessor's
	// commands left in the background (KillRecorded). Set it before the
	// first Exec.
	RecordDir string

	mu sync.Mutex
	// pgid → start time of the group leader (procStart; 0 when unknown,
	// as always off Linux), to tell our group from a reused pid number.
	pgids map[int]uint64
	// started counts the groups ever added (Started).
	started uint64
	closed  bool
	drains  sync.WaitGroup
	pipes   map[*drain]struct{}
}

// drain is output still being read (and dropped) after its command
// returned, because a background process holds the pipes open.
type drain struct{ pipes []io.Closer }

// add records a group started by Exec. It answers false once the Groups is
// closed: the caller must then kill the group it just started.
func (g *Groups) add(pgid int) bool {
	start, _ := procStart(pgid)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	if g.pgids == nil {
		g.pgids = map[int]uint64{}
	}
	// Forget groups that have ended so the map stays as small as what is
	// actually running.
	for id := range g.pgids {
		if syscall.Kill(-id, 0) == syscall.ESRCH {
			g.forgetLocked(id)
		}
	}
	g.pgids[pgid] = start
	g.started++
	if g.RecordDir != "" {
		// Best effort: a record that cannot be written costs only the
		// clean-up after a crash, which must not fail the command.
		_ = writeRecord(g.RecordDir, pgid, start)
	}
	return true
}

func (g *Groups) forgetLocked(pgid int) {
	delete(g.pgids, pgid)
	if g.RecordDir != "" {
		_ = os.Remove(recordPath(g.RecordDir, pgid))
	}
}

// adopt takes ownership of output pipes that outlive their command; done
// is closed when the copying goroutines have finished.
func (g *Groups) adopt(done <-chan struct{}, pipes ...io.Closer) {
	d := &drain{pipes: pipes}
	g.mu.Lock()
	if g.closed {
		// Stopping already: end the copy now (the copiers return at once
		// on a closed pipe) rather than Add to a WaitGroup being waited on.
		g.mu.Unlock()
		closeAll(pipes)
		return
	}
	if g.pipes == nil {
		g.pipes = map[*drain]struct{}{}
	}
	g.pipes[d] = struct{}{}
	g.drains.Add(1)
	g.mu.Unlock()
	go func() {
		defer g.drains.Done()
		<-done
		g.mu.Lock()
		delete(g.pipes, d)
		g.mu.Unlock()
	}()
}

// Started counts the groups ever tracked: while it stays the same, no
// command started a process.
func (g *Groups) Started() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started
}

// Running reports how many tracked groups may still have processes.
func (g *Groups) Running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for id := range g.pgids {
		if syscall.Kill(-id, 0) != syscall.ESRCH {
			n++
		}
	}
	return n
}

// KillAll sends SIGKILL to every tracked group that is still ours.
func (g *Groups) KillAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.killLocked()
}

func (g *Groups) killLocked() {
	for id, start := range g.pgids {
		// Linux does not reuse a pid number while a group of that id has
		// members, so if the number now belongs to another process, our
		// group is gone and the signal would hit a stranger's.
		if start != 0 {
			if now, ok := procStart(id); ok && now != start {
				g.forgetLocked(id)
				continue
			}
		}
		_ = syscall.Kill(-id, syscall.SIGKILL)
		g.forgetLocked(id)
	}
}

// Close kills every group, ends output drains and makes later Execs fail:
// the workspace is being stopped. It waits for the drain goroutines.
func (g *Groups) Close() {
	g.mu.Lock()
	g.closed = true
	g.killLocked()
	for d := range g.pipes {
		// Closing the read ends wakes the goroutines blocked on them.
		closeAll(d.pipes)
	}
	g.mu.Unlock()
	g.drains.Wait()
}

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// ProcStart reads a process's start time from /proc/<pid>/stat (field 22,
// clock ticks since boot). Together with the pid it names one process: a
// later process given the same pid started later. ok is false when no
// process has that pid (always, off Linux).
func ProcStart(pid int) (start uint64, ok bool) { return procStart(pid) }
