package soak_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
)

// How a quiescent point is measured.
//
// The resident memory of a Go process at rest says little by itself: it
// depends on where the heap stood in its GC cycle when the load stopped
// (anywhere between what is live and twice that), on what sync.Pools still
// hold (the store pools 4 MiB chunk buffers, one per blob being written at
// once, dropped only after two collections), and on how far the runtime's
// background scavenger has got in returning freed pages. Read that way, a
// host that was not growing swung by a third between consecutive rounds.
// So before it reads anything, measure brings the host to a state that
// does not depend on those:
//
//   - it makes the host collect idleGCs times. The host has no endpoint for
//     that, but each read of its /metrics allocates some 180 KB in it, so
//     measure reads /metrics until the host's own GC count (Prometheus'
//     go_gc_duration_seconds_count) has gone up by idleGCs: a few hundred
//     reads, one or two seconds;
//   - then it waits until the scavenger has returned what the runtime means
//     to return (awaitScavenger): 5 to 20 seconds on a 2-core machine with
//     both dialects at rest (soak_test.go keeps them in lockstep).
//
// Measured that way, a host's RSS at rest moves by a few percent between
// rounds, and what it holds on to after three collections is what it
// really keeps. Nothing public reaches the plugins' collectors, and read
// as they were their RSS swung by a third between rounds too (the mock
// engine: 24.5, then 32.8 MiB); but a plugin built on the SDK collects and
// returns its free memory once it has been idle a few seconds (sdk/plugin's
// idle release), so they are read after pluginSettle.
//
// Goroutines and descriptors need none of this, but are read at the same
// point: every session idle, every stream closed, the soak's own idle
// connections closed.

// pluginSettle is how long after the load stopped the plugins' RSS is
// read at rest: by then each has been idle long enough to have returned
// its free memory (plugin.IdleReleaseWithin), with a margin for the
// collection that does it.
const pluginSettle = plugin.IdleReleaseWithin + time.Second

// idleGCs is how many collections the host is made to run at rest: the
// first drops what the load left unreachable and moves the sync.Pools'
// contents aside, the second drops those; the third starts from a heap
// with nothing of the load in it, and the scavenger's target, which the
// runtime sets at each collection from the heap in use then, is small
// only after it.
const idleGCs = 3

// maxScrapes bounds the /metrics reads that wait for idleGCs collections:
// at 180 KB each, 5,000 reads allocate 900 MB, far more than any heap goal
// the soak's load sets.
const maxScrapes = 5000

// The scavenger counts as done when the heap retained is within
// retainedSlack of the heap in use, plus retainedMargin: the runtime's
// target is 10% over the heap in use at the last collection (mgcscavenge.go,
// gcPaceScavenger).
const (
	retainedSlack  = 1.15
	retainedMargin = 1 << 20
)

// nudgeAfter is how long the scavenger may return nothing before the host
// is made to collect once more (awaitScavenger).
const nudgeAfter = 3 * time.Second

// scavengeWait bounds the wait for the scavenger: it returns some 5-10 MB
// a second, and a host comes out of a round of 20 sessions holding 100 MB
// or more it no longer uses. A sample whose wait ran out says so in the
// round's log line and is left out of the RSS comparison.
const scavengeWait = 60 * time.Second

// procStats is what /proc says about a process, or a process and its
// descendants summed.
type procStats struct {
	RSS     int64 // resident bytes (VmRSS)
	FDs     int   // entries of /proc/<pid>/fd
	Threads int   // OS threads (Threads), for information: a Go program never gives them back
	Procs   int   // processes summed
}

func (s *procStats) add(o procStats) {
	s.RSS += o.RSS
	s.FDs += o.FDs
	s.Threads += o.Threads
	s.Procs += o.Procs
}

// sample is one measurement of a host and its plugins at a quiescent
// point: every session idle, the host collected and scavenged (settle).
type sample struct {
	At    time.Duration // since the load began
	Turns int64         // turns completed so far
	// RoundTurns and RoundLoad are the turns of the round before the
	// sample and how long it ran them.
	RoundTurns int64
	RoundLoad  time.Duration
	Host       procStats
	// Goroutines is the host's (go_goroutines). HeapGoal is its heap goal
	// at rest (go_memstats_next_gc_bytes: about twice what is live after
	// the idle collections), AllocPerTurn what it allocated during the
	// round's load over the round's turns.
	// HeapRetained is the part of the RSS that is Go heap (in use, and
	// free but not yet returned): the rest is the runtime's own, the
	// binary's pages and, on SQLite, the database's page caches.
	Goroutines   int
	HeapGoal     int64
	HeapRetained int64
	AllocPerTurn int64
	// AtRest says the host was settled before the sample (measure);
	// Settled, that its scavenger finished within scavengeWait (the RSS
	// was read anyway). MeasureTime is how long the measurement took.
	AtRest, Settled bool
	MeasureTime     time.Duration
	// Plugins are the host's child processes by binary name, each with
	// its own descendants (a sandbox's commands) summed in.
	Plugins map[string]procStats
}

// readProc reads one process's procStats.
func readProc(pid int) (procStats, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStats{}, err
	}
	st := procStats{Procs: 1}
	for line := range strings.SplitSeq(string(raw), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch name {
		case "VmRSS":
			kb, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			if err != nil {
				return procStats{}, fmt.Errorf("/proc/%d/status VmRSS %q: %w", pid, v, err)
			}
			st.RSS = kb << 10
		case "Threads":
			st.Threads, _ = strconv.Atoi(v)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return procStats{}, err
	}
	st.FDs = len(fds)
	return st, nil
}

// children maps each process's id to its children's, from every
// /proc/<pid>/stat.
func children() (map[int][]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		out[ppid] = append(out[ppid], pid)
	}
	return out, nil
}

// binaryName is the base name of a process's argv[0] (its comm is cut at
// 15 bytes, too short to tell agenthost-engine-mock from -native).
func binaryName(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(raw) == 0 {
		return strconv.Itoa(pid)
	}
	argv0, _, _ := bytes.Cut(raw, []byte{0})
	return filepath.Base(string(argv0))
}

// readPlugins sums each child process of hostPID with its descendants,
// keyed by the child's binary name.
func readPlugins(hostPID int) (map[string]procStats, error) {
	kids, err := children()
	if err != nil {
		return nil, err
	}
	out := map[string]procStats{}
	for _, child := range kids[hostPID] {
		var sum procStats
		stack := []int{child}
		for len(stack) > 0 {
			pid := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			st, err := readProc(pid)
			if err != nil {
				continue // a command that just exited
			}
			sum.add(st)
			stack = append(stack, kids[pid]...)
		}
		name := binaryName(child)
		prev := out[name]
		prev.add(sum)
		out[name] = prev
	}
	return out, nil
}

// The host's /metrics figures the soak reads (Prometheus' Go collector).
const (
	mGoroutines = "go_goroutines"
	mGCs        = "go_gc_duration_seconds_count"
	mAllocTotal = "go_memstats_alloc_bytes_total"
	mHeapGoal   = "go_memstats_next_gc_bytes"
	mHeapInuse  = "go_memstats_heap_inuse_bytes"
	mHeapIdle   = "go_memstats_heap_idle_bytes"
	mReleased   = "go_memstats_heap_released_bytes"
)

var metricNames = []string{mGoroutines, mGCs, mAllocTotal, mHeapGoal, mHeapInuse, mHeapIdle, mReleased}

// metrics reads the host's /metrics (Prometheus text; it needs no token).
func (h *hostProc) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", h.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(metricNames, name) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics %s %q: %w", name, v, err)
		}
		out[name] = f
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range metricNames {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
	}
	return out, nil
}

// measure samples the idle host; atRest first settles it (see the top of
// this file), which only the samples compared need. lastAlloc is the
// host's allocation total when the previous measurement ended; measure
// returns this one's, for the next.
func (h *hostProc) measure(ctx context.Context, lastAlloc float64, roundTurns int64, atRest bool) (sample, float64, error) {
	began := time.Now()
	h.client.CloseIdleConnections()
	m, err := h.metrics(ctx)
	if err != nil {
		return sample{}, 0, err
	}
	s := sample{AtRest: atRest}
	if roundTurns > 0 {
		s.AllocPerTurn = int64((m[mAllocTotal] - lastAlloc) / float64(roundTurns))
	}
	if atRest {
		if m, err = h.collect(ctx, m, idleGCs); err != nil {
			return sample{}, 0, err
		}
		if m, s.Settled, err = h.awaitScavenger(ctx, m); err != nil {
			return sample{}, 0, err
		}
	}
	s.Goroutines, s.HeapGoal = int(m[mGoroutines]), int64(m[mHeapGoal])
	s.HeapRetained = int64(m[mHeapInuse] + m[mHeapIdle] - m[mReleased])
	// The reads above kept one connection open (a goroutine and a
	// descriptor in the host, counted in go_goroutines in every sample
	// alike); it is closed before the descriptors are counted.
	h.client.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	if s.Host, err = readProc(h.pid()); err != nil {
		return sample{}, 0, fmt.Errorf("read the host's /proc: %w", err)
	}
	if atRest {
		// The plugins give their free memory back once idle for a while
		// (sdk/plugin's idle release); read before that, their RSS is
		// wherever the load left their collectors.
		time.Sleep(time.Until(began.Add(pluginSettle)))
	}
	if s.Plugins, err = readPlugins(h.pid()); err != nil {
		return sample{}, 0, fmt.Errorf("read the plugins' /proc: %w", err)
	}
	s.MeasureTime = time.Since(began)
	return s, m[mAllocTotal], nil
}

// collect reads /metrics until the host has collected n more times than
// it had in m, and returns the last reading.
func (h *hostProc) collect(ctx context.Context, m map[string]float64, n int) (map[string]float64, error) {
	want := m[mGCs] + float64(n)
	for reads := 0; m[mGCs] < want; reads++ {
		if reads == maxScrapes {
			return nil, fmt.Errorf("the host did not collect %d times in %d reads of /metrics", n, reads)
		}
		var err error
		if m, err = h.metrics(ctx); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// awaitScavenger waits until the host's scavenger has returned what the
// runtime means to return: until the heap it retains (in use, plus free
// but not released) is within the runtime's own target, 10% over the heap
// in use (retainedSlack, a little more to absorb what the reads themselves
// allocate), at most scavengeWait. The scavenger works at a paced 1% of a
// CPU, toward a target the runtime sets at each collection from the heap
// in use then; when it stalls for nudgeAfter, one more collection (with
// what is in use at rest by then) gives it a nearer target. It returns the
// last /metrics reading and whether the scavenger got there.
func (h *hostProc) awaitScavenger(ctx context.Context, m map[string]float64) (map[string]float64, bool, error) {
	deadline := time.Now().Add(scavengeWait)
	lastProgress, released := time.Now(), m[mReleased]
	for {
		retained := m[mHeapInuse] + m[mHeapIdle] - m[mReleased]
		if retained <= retainedSlack*m[mHeapInuse]+retainedMargin {
			return m, true, nil
		}
		if time.Now().After(deadline) {
			return m, false, nil
		}
		var err error
		if m[mReleased] > released {
			lastProgress, released = time.Now(), m[mReleased]
		} else if time.Since(lastProgress) > nudgeAfter {
			if m, err = h.collect(ctx, m, 1); err != nil {
				return nil, false, err
			}
			lastProgress = time.Now()
			continue
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if m, err = h.metrics(ctx); err != nil {
			return nil, false, err
		}
	}
}

// median of a sample's figure over samples (0 for none).
func median[T int | int64](samples []sample, f func(sample) T) T {
	if len(samples) == 0 {
		return 0
	}
	v := make([]T, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
