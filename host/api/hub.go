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
}

type watched struct {
	subs map[chan struct{}]struct{}
	// tail holds consecutive events of the run, oldest first.
	tail []core.Envelope
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{runs: map[string]*watched{}} }

// Subscribe returns a channel that receives a wake-up after the run's log
// grows, and a function to stop.
func (h *Hub) Subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	w := h.runs[runID]
	if w == nil {
		w = &watched{subs: map[chan struct{}]struct{}{}}
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
// Events of runs nobody watches are not kept.
func (h *Hub) Publish(e core.Envelope) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.runs[e.RunID]
	if w == nil {
		return
	}
	if n := len(w.tail); n > 0 && w.tail[n-1].Seq+1 != e.Seq {
		w.tail = w.tail[:0] // not consecutive: start over
	}
	if len(w.tail) == tailSize {
		copy(w.tail, w.tail[1:])
		w.tail = w.tail[:tailSize-1]
	}
	w.tail = append(w.tail, e)
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
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
