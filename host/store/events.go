package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// maxBatch caps one group commit: big enough that 50 busy runs share a
// transaction, small enough to stay far below both dialects' parameter
// limits (6 parameters a row: 3000 < SQLite's 32766 and PostgreSQL's 65535).
const maxBatch = 500

// errLogClosed is returned by Append after Close.
var errLogClosed = errors.New("event log is closed")

type appendReq struct {
	run *core.Run
	// ev is the event to log; with no Type, the request is its tail alone,
	// written in the run's order (TransitionInOrder).
	ev core.EventInput
	// done is called once with the outcome, from the writer's goroutine,
	// after the event's transaction ended.
	done func(appendResult)
	// tail, when set, runs in the same transaction as the event, after
	// it: what must be durable exactly when the event is (FinishRun). An
	// error from it fails the whole batch; a refusal it can live with
	// goes into its result instead.
	tail func(ctx context.Context, q sqlx.ExtContext, env core.Envelope) (any, error)
	// change, on PostgreSQL, is the tail as data: a run's status change
	// that the writer can put in one statement with the batch's events and
	// other runs' changes (writeChanges) instead of running tail in a
	// transaction.
	change *runChange
	// reread, with a tail, gives the tail's outcome from what is stored:
	// for a batch whose commit was reported failed but happened.
	reread func(ctx context.Context) (any, error)
	// retried is set while the writer tries the request's batch again
	// after a try whose outcome it could not learn: a tail refused then
	// may be refused because that try did commit.
	retried bool
}

type appendResult struct {
	env  core.Envelope
	err  error
	tail any
}

// errEarlierLost is what an event fails with when an event of the same run
// queued before it did not reach the log: logging it would leave a hole in
// what the run said, under a seq that looks gap-free.
var errEarlierLost = errors.New("an earlier event of this run was not logged")

// eventWriter is one lane of the event log's group commit: one goroutine
// takes every pending append of its runs and writes them in one
// transaction, so token-level deltas from many runs do not cost a
// transaction each. Per run,
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

	// broken holds, per run, why an event of it failed to commit: later
	// events of that run queued behind it fail too (errEarlierLost), until
	// a terminal event, which its caller sends after learning of the
	// failure, clears it. Touched by the writer's goroutine only.
	broken map[string]error

	// folded counts the batches written as one statement (writeChanges),
	// for the tests that check a turn's batches take that path.
	folded atomic.Int64

	// loseAnswer, set by tests only, makes a committed batch look failed
	// the way a connection lost right after COMMIT does (true: lose this
	// one's answer). Touched by the writer's goroutine only.
	loseAnswer func() bool
}

func newEventWriter(s *Store) *eventWriter {
	w := &eventWriter{s: s, reqs: make(chan *appendReq, maxBatch), quit: make(chan struct{}), done: make(chan struct{}), next: map[string]int64{}, seeded: map[string]int64{}, broken: map[string]error{}}
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
	batch = w.dropBroken(batch)
	if len(batch) == 0 {
		return
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	envs := make([]core.Envelope, len(batch))
	tails := make([]any, len(batch))
	var lost map[string]bool
	assigned, tries := false, 0
	// While the database is unavailable the batch is tried again (store
	// retry), with the same seqs and times: the writer takes nothing else
	// meanwhile, so the lanes' queues fill and emitters wait.
	err := w.s.retry(context.Background(), "append events", func(context.Context) error {
		tries++
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !assigned {
			if err := w.assign(ctx, batch, envs, now); err != nil {
				w.forgetSeqs(batch)
				return err
			}
			assigned = true
		}
		lost = map[string]bool{}
		clear(tails)
		for _, r := range batch {
			r.retried = tries > 1
		}
		err := w.write(ctx, batch, envs, tails, lost)
		if err == nil && w.loseAnswer != nil && w.loseAnswer() {
			err = driver.ErrBadConn
		}
		if err != nil && tries > 1 && errors.Is(err, ErrConflict) {
			// An earlier try may have committed with its answer lost on
			// the way (the connection dropped after COMMIT): then the
			// batch is in the log already.
			if ok, verr := w.committedBefore(ctx, batch, envs, tails, lost); verr != nil || ok {
				return verr
			}
		}
		return err
	})
	if err != nil {
		// Nothing of this batch is in the log: forget cached seqs so the
		// next append re-reads the truth, and hold back what each run
		// queued behind it.
		w.forgetSeqs(batch)
		for _, r := range batch {
			if r.ev.Type != "" && !r.ev.Type.Terminal() {
				w.broken[r.run.ID] = err
			}
		}
		for _, r := range batch {
			what := "append " + string(r.ev.Type)
			if r.ev.Type == "" {
				what = "write"
			}
			r.done(appendResult{err: fmt.Errorf("%s to run %s: %w", what, r.run.ID, err)})
		}
		return
	}
	for i, r := range batch {
		if lost[r.run.ID] {
			// Another host owns the run now: nothing of it was written,
			// and nothing this host queues for it will be.
			delete(w.next, r.run.ID)
			envs[i] = core.Envelope{}
			r.done(appendResult{err: leaseLost(r.run.ID, "")})
			continue
		}
		if r.ev.Type.Terminal() {
			delete(w.next, r.run.ID)
		}
		r.done(appendResult{env: envs[i], tail: tails[i]})
	}
	w.mu.Lock()
	ls := w.listeners
	w.mu.Unlock()
	for _, fn := range ls {
		for _, e := range envs {
			if e.Event != "" {
				fn(e)
			}
		}
	}
}

// forgetSeqs drops the cached next seqs of the batch's runs: they are read
// from the log again.
func (w *eventWriter) forgetSeqs(batch []*appendReq) {
	for _, r := range batch {
		delete(w.next, r.run.ID)
	}
}

// committedBefore tells whether an earlier try of the batch committed
// although it reported a failure. The batch commits whole or not at all,
// so each run's first event of it is either in the log as this batch
// wrote it, or (on PostgreSQL) the run was fenced off and goes into lost.
// When the batch is found committed, each request with a tail gets its
// outcome read back (reread), since the earlier try's was lost.
func (w *eventWriter) committedBefore(ctx context.Context, batch []*appendReq, envs []core.Envelope, tails []any, lost map[string]bool) (bool, error) {
	first := map[string]core.Envelope{}
	for _, e := range envs {
		if _, seen := first[e.RunID]; e.Event != "" && !seen {
			first[e.RunID] = e
		}
	}
	found := map[string]bool{}
	for run, e := range first {
		ok, err := w.s.logs(ctx, w.s.lanes(), e)
		if err != nil {
			return false, err
		}
		if ok {
			found[run] = true
		}
	}
	if len(found) == 0 {
		return false, nil
	}
	clear(lost)
	for run := range first {
		if !found[run] {
			lost[run] = true
		}
	}
	for i, r := range batch {
		if r.tail != nil && r.reread != nil && !lost[r.run.ID] {
			out, err := r.reread(ctx)
			if err != nil {
				return false, err
			}
			tails[i] = out
		}
	}
	return true, nil
}

// logs tells whether the log holds e as it was written: its run's event
// at its seq with its type, time and payload (the run's new owner may have
// logged its own under that seq).
func (s *Store) logs(ctx context.Context, q sqlx.QueryerContext, e core.Envelope) (bool, error) {
	var rows []eventRow
	if err := sqlx.SelectContext(ctx, q, &rows, s.rebind(`SELECT run_id, seq, type, payload, diagnostics, ts FROM run_events WHERE run_id = ? AND seq = ?`), e.RunID, e.Seq); err != nil {
		return false, translate(err)
	}
	return len(rows) == 1 && rows[0].Type == string(e.Event) && rows[0].TS == e.TS.UnixMilli() && rows[0].Payload == string(e.Payload), nil
}

// dropBroken fails the requests of runs whose earlier event did not
// commit, and returns the rest. A terminal event goes through: its caller
// has learnt of the failure (it waited for every earlier event first).
func (w *eventWriter) dropBroken(batch []*appendReq) []*appendReq {
	if len(w.broken) == 0 {
		return batch
	}
	kept := batch[:0]
	for _, r := range batch {
		cause, ok := w.broken[r.run.ID]
		switch {
		case !ok || r.ev.Type == "":
			kept = append(kept, r)
		case r.ev.Type.Terminal():
			delete(w.broken, r.run.ID)
			kept = append(kept, r)
		default:
			r.done(appendResult{err: fmt.Errorf("append %s to run %s: %w: %w", r.ev.Type, r.run.ID, errEarlierLost, cause)})
		}
	}
	return kept
}

// write inserts the batch, in one transaction with the tails when any
// request has one. On PostgreSQL, runs this host no longer owns get
// nothing written and are added to lost.
func (w *eventWriter) write(ctx context.Context, batch []*appendReq, envs []core.Envelope, tails []any, lost map[string]bool) error {
	withTail := false
	events := envs[:0:0]
	for i, r := range batch {
		withTail = withTail || r.tail != nil
		if r.ev.Type != "" {
			events = append(events, envs[i])
		}
	}
	per := w.s.rowsPerInsert(6)
	if w.s.dialect == Postgres {
		return w.writeShared(ctx, batch, envs, events, tails, withTail, lost)
	}
	if !withTail && len(events) <= per {
		_, err := w.s.lanes().ExecContext(ctx, w.s.rebind(insertEvents(len(events))), eventArgs(events)...)
		return translate(err)
	}
	return txOn(ctx, w.s.lanes(), func(tx *sqlx.Tx) error {
		for start := 0; start < len(events); start += per {
			chunk := events[start:min(start+per, len(events))]
			if _, err := tx.ExecContext(ctx, tx.Rebind(insertEvents(len(chunk))), eventArgs(chunk)...); err != nil {
				return translate(err)
			}
		}
		for i, r := range batch {
			if r.tail == nil {
				continue
			}
			out, err := r.tail(ctx, tx, envs[i])
			if err != nil {
				return err
			}
			tails[i] = out
		}
		return nil
	})
}

// assign gives each event its run's next seq.
func (w *eventWriter) assign(ctx context.Context, batch []*appendReq, envs []core.Envelope, now time.Time) error {
	for i, r := range batch {
		if r.ev.Type == "" {
			continue // a write in the run's order, not an event
		}
		n, ok := w.next[r.run.ID]
		if !ok {
			w.mu.Lock()
			n, ok = w.seeded[r.run.ID]
			delete(w.seeded, r.run.ID)
			w.mu.Unlock()
		}
		if !ok {
			var last sql.NullInt64
			if err := w.s.lanes().GetContext(ctx, &last, w.s.rebind(`SELECT MAX(seq) FROM run_events WHERE run_id = ?`), r.run.ID); err != nil {
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

// insertEvents is a multi-row INSERT of n events.
// rowsPerInsert is how many rows of params columns one multi-row INSERT
// takes. The SQLite driver (modernc) finds each parameter's argument by
// scanning the argument list from the start, so a statement's binding costs
// the square of its parameters: 500 events in one statement (3,000
// parameters) took a third of the host's CPU while 50 runs streamed. About
// 200 parameters a statement keeps that small beside the statement's own
// cost. PostgreSQL binds in one pass and takes up to 65,535.
func (s *Store) rowsPerInsert(params int) int {
	if s.dialect == SQLite {
		return max(1, sqliteParamsPerStatement/params)
	}
	return max(1, 65535/params)
}

// sqliteParamsPerStatement bounds the parameters of one SQLite statement
// that carries many rows (see rowsPerInsert).
const sqliteParamsPerStatement = 200

func insertEvents(n int) string {
	var q strings.Builder
	q.Grow(90 + n*20)
	q.WriteString(`INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts) VALUES `)
	for i := 0; i < n; i++ {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?)")
	}
	return q.String()
}

// eventArgs are insertEvents' arguments for envs.
func eventArgs(envs []core.Envelope) []any {
	args := make([]any, 0, len(envs)*6)
	for _, e := range envs {
		var diag any
		if len(e.Diagnostics) > 0 {
			diag = string(e.Diagnostics)
		}
		args = append(args, e.RunID, e.Seq, string(e.Event), string(e.Payload), diag, e.TS.UnixMilli())
	}
	return args
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
	res, err := s.appendWait(ctx, &appendReq{run: run, ev: ev})
	return res.env, err
}

// Enqueue queues an event for a run's log and returns at once; done is
// called with the logged event (or why it was not logged) once its
// transaction ended, from the log's writer: it must not block. Per run,
// events are logged in the order they were queued, each with the next seq;
// when one fails, the run's events queued after it fail too, until a
// terminal event. Only committed events reach OnAppend's listeners, so a
// reader never sees what the engine said ahead of the log. It blocks only
// while the log's queue is full (backpressure), until ctx ends.
func (s *Store) Enqueue(ctx context.Context, run *core.Run, ev core.EventInput, done func(core.Envelope, error)) error {
	return s.enqueue(ctx, &appendReq{run: run, ev: ev, done: func(r appendResult) { done(r.env, r.err) }})
}

func (s *Store) enqueue(ctx context.Context, req *appendReq) error {
	w := s.lane(req.run.ID)
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return errLogClosed
	}
	select {
	case w.reqs <- req:
		return nil
	case <-w.quit:
		return errLogClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// appendWait queues req and waits for its outcome.
func (s *Store) appendWait(ctx context.Context, req *appendReq) (appendResult, error) {
	ch := make(chan appendResult, 1)
	req.done = func(r appendResult) { ch <- r }
	if err := s.enqueue(ctx, req); err != nil {
		return appendResult{}, err
	}
	// Once queued the append completes either way; waiting for it keeps the
	// caller's view and the log the same.
	res := <-ch
	return res, res.err
}

// OnAppend registers fn to see every committed event (the stream fan-out
// hangs off this): a run's in commit order, but different runs' possibly at
// the same time, from different lanes. fn must not block.
func (s *Store) OnAppend(fn func(core.Envelope)) {
	for _, w := range s.events {
		w.mu.Lock()
		w.listeners = append(w.listeners, fn)
		w.mu.Unlock()
	}
}
