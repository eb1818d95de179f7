package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/core"
)

// maxBatch caps one group commit: big enough that 50 busy runs share a
// transaction, small enough to stay far below both dialects' parameter
// limits (6 parameters a row: 3000 < SQLite's 32766 and PostgreSQL's 65535).
const maxBatch = 500

// errLogClosed is returned by Append after Close.
var errLogClosed = errors.New("event log is closed")

type appendReq struct {
	run  *core.Run
	ev   core.EventInput
	done chan appendResult
}

type appendResult struct {
	env core.Envelope
	err error
}

// eventWriter is the event log's group commit: one goroutine takes every
// pending append, from every run, and writes them in one transaction, so
// token-level deltas from many runs do not cost a transaction each. Per run,
// seqs are handed out in call order with no gap: a seq is only kept once its
// transaction committed.
type eventWriter struct {
	s    *Store
	reqs chan *appendReq
	quit chan struct{}
	done chan struct{}

	// next is the next seq per run, cached after the first append so it
	// costs no query; dropped at a run's terminal event and after any
	// failed commit (it is then re-read from the log).
	next map[string]int64

	mu        sync.Mutex
	closed    bool
	listeners []func(core.Envelope)
	// seeded are next seqs of runs whose first events were logged outside
	// the writer (StartRun), taken into next at the run's first append so
	// that it costs no query either.
	seeded map[string]int64
}

func newEventWriter(s *Store) *eventWriter {
	w := &eventWriter{s: s, reqs: make(chan *appendReq, maxBatch), quit: make(chan struct{}), done: make(chan struct{}), next: map[string]int64{}, seeded: map[string]int64{}}
	go w.loop()
	return w
}

func (w *eventWriter) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.quit)
	<-w.done
}

func (w *eventWriter) loop() {
	defer close(w.done)
	for {
		var first *appendReq
		select {
		case first = <-w.reqs:
		case <-w.quit:
			// Flush what is queued, then refuse.
			for {
				select {
				case r := <-w.reqs:
					w.commit([]*appendReq{r})
				default:
					return
				}
			}
		}
		batch := []*appendReq{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-w.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

func (w *eventWriter) commit(batch []*appendReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	envs := make([]core.Envelope, len(batch))
	err := w.assign(ctx, batch, envs, now)
	if err == nil {
		err = w.insert(ctx, envs)
	}
	if err != nil {
		// Nothing of this batch is in the log: forget cached seqs so the
		// next append re-reads the truth.
		for _, r := range batch {
			delete(w.next, r.run.ID)
		}
		for _, r := range batch {
			r.done <- appendResult{err: fmt.Errorf("append %s to run %s: %w", r.ev.Type, r.run.ID, err)}
		}
		return
	}
	for i, r := range batch {
		if r.ev.Type.Terminal() {
			delete(w.next, r.run.ID)
		}
		r.done <- appendResult{env: envs[i]}
	}
	w.mu.Lock()
	ls := w.listeners
	w.mu.Unlock()
	for _, fn := range ls {
		for _, e := range envs {
			fn(e)
		}
	}
}

// assign gives each event its run's next seq.
func (w *eventWriter) assign(ctx context.Context, batch []*appendReq, envs []core.Envelope, now time.Time) error {
	for i, r := range batch {
		n, ok := w.next[r.run.ID]
		if !ok {
			w.mu.Lock()
			n, ok = w.seeded[r.run.ID]
			delete(w.seeded, r.run.ID)
			w.mu.Unlock()
		}
		if !ok {
			var last sql.NullInt64
			if err := w.s.w.GetContext(ctx, &last, w.s.rebind(`SELECT MAX(seq) FROM run_events WHERE run_id = ?`), r.run.ID); err != nil {
				return translate(err)
			}
			n = last.Int64 + 1
		}
		w.next[r.run.ID] = n + 1
		payload := r.ev.Payload
		if len(payload) == 0 {
			payload = []byte("{}")
		}
		envs[i] = core.Envelope{Event: r.ev.Type, RunID: r.run.ID, AppID: r.run.AppID, Seq: n, TS: now, Payload: payload, Diagnostics: r.ev.Diagnostics}
	}
	return nil
}

// insert writes the batch as one multi-row INSERT in one transaction.
func (w *eventWriter) insert(ctx context.Context, envs []core.Envelope) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts) VALUES `)
	args := make([]any, 0, len(envs)*6)
	for i, e := range envs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?)")
		var diag any
		if len(e.Diagnostics) > 0 {
			diag = string(e.Diagnostics)
		}
		args = append(args, e.RunID, e.Seq, string(e.Event), string(e.Payload), diag, e.TS.UnixMilli())
	}
	_, err := w.s.w.ExecContext(ctx, w.s.rebind(q.String()), args...)
	return translate(err)
}

// logged takes note of an event committed outside the writer: its run's
// next append follows it, and listeners see it now.
func (w *eventWriter) logged(env core.Envelope) {
	w.mu.Lock()
	w.seeded[env.RunID] = env.Seq + 1
	ls := w.listeners
	w.mu.Unlock()
	for _, fn := range ls {
		fn(env)
	}
}

// Append adds an event to a run's log and returns it with its seq. It
// returns once the event is committed. Per run, callers must not append
// concurrently if they need call order to be seq order (the orchestrator
// holds the run's lock).
func (s *Store) Append(ctx context.Context, run *core.Run, ev core.EventInput) (core.Envelope, error) {
	w := s.events
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return core.Envelope{}, errLogClosed
	}
	req := &appendReq{run: run, ev: ev, done: make(chan appendResult, 1)}
	select {
	case w.reqs <- req:
	case <-w.quit:
		return core.Envelope{}, errLogClosed
	case <-ctx.Done():
		return core.Envelope{}, ctx.Err()
	}
	// Once queued the append completes either way; waiting for it keeps the
	// caller's view and the log the same.
	res := <-req.done
	return res.env, res.err
}

// OnAppend registers fn to see every committed event, in commit order (the
// stream fan-out hangs off this). fn must not block.
func (s *Store) OnAppend(fn func(core.Envelope)) {
	s.events.mu.Lock()
	s.events.listeners = append(s.events.listeners, fn)
	s.events.mu.Unlock()
}

type eventRow struct {
	RunID       string         `db:"run_id"`
	Seq         int64          `db:"seq"`
	Type        string         `db:"type"`
	Payload     string         `db:"payload"`
	Diagnostics sql.NullString `db:"diagnostics"`
	TS          int64          `db:"ts"`
}

// ListEvents returns up to limit events of a run with seq > afterSeq, in
// order. appID fills the envelopes (events are stored per run).
func (s *Store) ListEvents(ctx context.Context, runID, appID string, afterSeq int64, limit int) ([]core.Envelope, error) {
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	var rows []eventRow
	err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT run_id, seq, type, payload, diagnostics, ts FROM run_events
 WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`), runID, afterSeq, limit)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]core.Envelope, len(rows))
	for i, r := range rows {
		out[i] = core.Envelope{Event: core.EventType(r.Type), RunID: r.RunID, AppID: appID, Seq: r.Seq, TS: fromMS(r.TS), Payload: []byte(r.Payload)}
		if r.Diagnostics.Valid {
			out[i].Diagnostics = []byte(r.Diagnostics.String)
		}
	}
	return out, nil
}

// LastEvent returns a run's newest event, or nil when its log is empty.
func (s *Store) LastEvent(ctx context.Context, runID, appID string) (*core.Envelope, error) {
	var rows []eventRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT run_id, seq, type, payload, diagnostics, ts FROM run_events
 WHERE run_id = ? ORDER BY seq DESC LIMIT 1`), runID); err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	e := core.Envelope{Event: core.EventType(r.Type), RunID: r.RunID, AppID: appID, Seq: r.Seq, TS: fromMS(r.TS), Payload: []byte(r.Payload)}
	if r.Diagnostics.Valid {
		e.Diagnostics = []byte(r.Diagnostics.String)
	}
	return &e, nil
}
