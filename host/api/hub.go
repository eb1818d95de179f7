package api

import (
	"sync"

	"github.com/agenthost/agenthost/core"
)

// tailSize is how many recent events the hub keeps per watched run. A live
// stream is normally a few events behind at most; one further behind reads
// the log instead.
const tailSize = 512

// Hub wakes the streams of a run when its log grows, and keeps the newest
// events of watched runs so live streams need no database read per event.
// The durable log stays the source of truth: a stream reads it whenever the
// tail does not continue exactly where the stream is, so a slow client can
// never lose an event. (A PostgreSQL LISTEN/NOTIFY hub can replace this one
// when several hosts share a database.)
type Hub struct {
	mu   sync.Mutex
	runs map[string]*watched
	// early holds the first events of runs nobody watches yet, for the
	// newest earlyRuns runs: a client streams a run right after creating
	// it, and finds what it missed here rather than in the database.
	early      map[string][]core.Envelope
	earlyOrder []string // oldest first
}

// earlyRuns and earlyEvents bound the hub's early tails (about 1 MB at
// most): runs that nobody streams cost no more than that.
const (
	earlyRuns   = 64
	earlyEvents = 64
)

type watched struct {
	subs map[chan struct{}]struct{}
	// tail holds consecutive events of the run, oldest first.
	tail []core.Envelope
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{runs: map[string]*watched{}, early: map[string][]core.Envelope{}}
}

// Subscribe returns a channel that receives a wake-up after the run's log
// grows, and a function to stop.
func (h *Hub) Subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	w := h.runs[runID]
	if w == nil {
		// The run's early events, if the hub kept them, become its tail.
		w = &watched{subs: map[chan struct{}]struct{}{}, tail: h.early[runID]}
		delete(h.early, runID)
		h.runs[runID] = w
	}
	w.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(w.subs, ch)
		if len(w.subs) == 0 && h.runs[runID] == w {
			delete(h.runs, runID)
		}
		h.mu.Unlock()
	}
}

// Publish records a committed event of a watched run and wakes its
// subscribers without blocking (a pending wake-up already covers this one).
// Of runs nobody watches, only the first few events of the newest runs are
// kept.
func (h *Hub) Publish(e core.Envelope) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.runs[e.RunID]
	if w == nil {
		h.keepEarly(e)
		return
	}
	h.appendTail(w, e)
	w.wake()
}

// appendTail adds e to a watched run's tail; the caller holds h.mu. An
// event the tail holds already is left out; one that does not follow the
// tail's newest starts it over.
func (h *Hub) appendTail(w *watched, e core.Envelope) {
	n := len(w.tail)
	switch {
	case n > 0 && e.Seq <= w.tail[n-1].Seq:
		return
	case n > 0 && w.tail[n-1].Seq+1 != e.Seq:
		w.tail = w.tail[:0] // not consecutive: start over
	}
	if len(w.tail) == tailSize {
		copy(w.tail, w.tail[1:])
		w.tail = w.tail[:tailSize-1]
	}
	w.tail = append(w.tail, e)
}

// Since returns up to max events of the run after seq `after` from the
// tail. ok is false when the tail cannot prove it holds everything after
// `after` (the caller then reads the log).
func (h *Hub) Since(runID string, after int64, max int) ([]core.Envelope, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.runs[runID]
	if w == nil || len(w.tail) == 0 {
		return nil, false
	}
	first, last := w.tail[0].Seq, w.tail[len(w.tail)-1].Seq
	switch {
	case after >= last:
		return nil, true
	case after+1 < first:
		return nil, false
	}
	from := int(after + 1 - first)
	to := min(len(w.tail), from+max)
	return append([]core.Envelope(nil), w.tail[from:to]...), true
}

// keepEarly keeps e if it continues its run's early tail from seq 1; the
// oldest run's tail goes when there are too many. A tail that would pass
// earlyEvents (or miss an event) is dropped whole: a tail must hold every
// event up to the newest, or a stream would take it for caught up.
func (h *Hub) keepEarly(e core.Envelope) {
	tail, ok := h.early[e.RunID]
	switch {
	case !ok && e.Seq == 1:
		if len(h.earlyOrder) >= earlyRuns {
			delete(h.early, h.earlyOrder[0])
			h.earlyOrder = h.earlyOrder[1:]
		}
		// Pruned lazily: a run's id stays in the order after a stream
		// took its tail, and counts until it falls off the front.
		h.earlyOrder = append(h.earlyOrder, e.RunID)
		h.early[e.RunID] = []core.Envelope{e}
	case ok && len(tail) < earlyEvents && tail[len(tail)-1].Seq+1 == e.Seq:
		h.early[e.RunID] = append(tail, e)
	case ok:
		delete(h.early, e.RunID)
	}
}

// Notify takes another host's commit of run runID's events up to seq.
// events, when not nil, are that commit's events in order: a watched run's
// tail takes them (a stream needs no read of the log for them). Without
// them, unless the tail already holds seq, the run's tails are dropped —
// they no longer reach the newest event — and its streams woken to read
// the log.
func (h *Hub) Notify(runID string, seq int64, events []core.Envelope) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.runs[runID]
	if w != nil && len(events) > 0 && events[len(events)-1].Seq == seq {
		for _, e := range events {
			h.appendTail(w, e)
		}
		w.wake()
		return
	}
	if w == nil {
		if tail, ok := h.early[runID]; ok && tail[len(tail)-1].Seq < seq {
			delete(h.early, runID)
		}
		return
	}
	if n := len(w.tail); n > 0 && w.tail[n-1].Seq >= seq {
		return
	}
	w.tail = w.tail[:0]
	w.wake()
}

// Resync drops every tail and wakes every stream: hints may have been
// missed (the listening connection dropped), so each stream reads the log.
func (h *Hub) Resync() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.early)
	h.earlyOrder = h.earlyOrder[:0]
	for _, w := range h.runs {
		w.tail = w.tail[:0]
		w.wake()
	}
}

// wake signals every subscriber without blocking; the caller holds h.mu.
func (w *watched) wake() {
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
