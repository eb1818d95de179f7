// Package heapfloor keeps the Go collector from running while the host's
// heap is small. The collector starts a cycle when the heap has grown by
// GOGC percent (100) over what the last cycle left live. The host's live
// heap is small (about 10 MB with 20 chats taking turns) and a busy host
// allocates fast, so it collected some 20 times a second, and the
// collector's work (marking, write barriers, assists, sweeping) took a
// sixth of the host's CPU. A floor raises the percentage while the live
// heap is small, so that a cycle starts no earlier than at floor bytes of
// heap; once the live heap is past half the floor the usual percentage
// applies. The price is memory: the heap the runtime keeps after a busy
// stretch is about the floor rather than twice what is live.
//
// The host holds a floor (AGENTHOST_GC_HEAP_FLOOR_MB) while it runs. GOGC
// in the environment turns it off: the operator's setting wins. Plugins do
// not hold one: their live heaps are a few MB, and with a floor their
// resident memory swung by a third from one quiet moment to the next (the
// soak test's check of their memory failed) for 3% more throughput.
package heapfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxGCPercent bounds the percentage a floor sets (a live heap of a few
// hundred KB would otherwise ask for hundreds of thousands).
const maxGCPercent = 10_000

// PercentFor is the GC percentage that makes a cycle start at floor bytes
// of heap when live bytes were left live by the last one, and never less
// than base.
func PercentFor(live, floor uint64, base int) int {
	if live == 0 || floor <= live {
		return base
	}
	p := floor*100/live - 100
	return max(base, int(min(p, maxGCPercent)))
}

// holds is the process's floor, shared by whoever holds one (a test
// process runs several hosts): the highest floor held applies until the
// last holder releases it, and then the percentage the process had comes
// back.
var holds struct {
	mu     sync.Mutex
	floors map[*hold]uint64
	base   int // the percentage before the first hold
	set    int // the percentage last set
	armed  bool
	live   []metrics.Sample
}

// hold is one holder's floor (Hold).
type hold struct{ _ byte }

// Hold keeps the process's heap to at least floor bytes before a
// collection, until release is called (release may be called more than
// once). It does nothing with floor 0, when GOGC is set in the
// environment, or when the collector is off.
func Hold(floor uint64) (release func()) {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	h := &hold{}
	holds.mu.Lock()
	if len(holds.floors) == 0 {
		base := currentPercent()
		if base <= 0 {
			holds.mu.Unlock()
			return func() {}
		}
		holds.floors = map[*hold]uint64{}
		holds.base, holds.set = base, base
		holds.live = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	}
	holds.floors[h] = floor
	arm := !holds.armed
	holds.armed = true
	tuneLocked()
	holds.mu.Unlock()
	if arm {
		armSentinel()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			holds.mu.Lock()
			defer holds.mu.Unlock()
			delete(holds.floors, h)
			if len(holds.floors) == 0 {
				debug.SetGCPercent(holds.base)
				holds.set = holds.base
			} else {
				tuneLocked()
			}
		})
	}
}

// currentPercent is the GC percentage in effect; 0 or less when the
// collector is off.
func currentPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int(s[0].Value.Uint64())
}

// sentinel is garbage whose finalizer runs after each collection that
// finds it: it retunes the floor and leaves a new sentinel, from the
// runtime's finalizer goroutine. It holds a pointer so that it is an
// object of its own (the runtime packs tiny pointer-free objects together,
// and their finalizers need not run).
type sentinel struct{ _ *int }

// armSentinel leaves a sentinel for the next collection; the chain stops
// once nothing holds a floor.
func armSentinel() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		holds.mu.Lock()
		held := len(holds.floors) > 0
		holds.armed = held
		if held {
			tuneLocked()
		}
		holds.mu.Unlock()
		if held {
			armSentinel()
		}
	})
}

// tuneLocked sets the percentage for the highest floor held and the live
// heap now, when it differs from the one set by more than an eighth
// (setting it is cheap, but not free). holds.mu is held.
func tuneLocked() {
	var floor uint64
	for _, f := range holds.floors {
		floor = max(floor, f)
	}
	if floor == 0 {
		return
	}
	metrics.Read(holds.live)
	var live uint64
	if holds.live[0].Value.Kind() == metrics.KindUint64 {
		live = holds.live[0].Value.Uint64()
	}
	want := PercentFor(live, floor, holds.base)
	if diff := want - holds.set; diff > holds.set/8 || -diff > holds.set/8 {
		debug.SetGCPercent(want)
		holds.set = want
	}
}

// Percent is the GC percentage a floor set last (the process's own when no
// floor is held): for tests and diagnostics.
func Percent() int {
	holds.mu.Lock()
	defer holds.mu.Unlock()
	if len(holds.floors) == 0 {
		return currentPercent()
	}
	return holds.set
}
