package orchestrator

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agenthost/agenthost/core"
)

// EventQueue is an EventSink that also takes a run's events without waiting
// for each one's commit (the store's Enqueue): the engine runs ahead of the
// log, and a run's pending events share the log's next group commit. Per
// run, events are logged in queue order; when one fails, the run's later
// ones fail too until a terminal event; readers only ever see committed
// events.
type EventQueue interface {
	EventSink
	Enqueue(ctx context.Context, run *core.Run, ev NewEvent, done func(core.Envelope, error)) error
}

// RunFinisher is an EventSink that ends a run in one transaction: its
// terminal event, the chat's assistant turn (when turn is not nil) and the
// run's final row, written only from one of the from states (the store's
// FinishRun). A refused transition leaves the event logged and says so.
type RunFinisher interface {
	FinishRun(ctx context.Context, r *core.Run, from []core.RunStatus, terminal NewEvent, turn *core.ChatTurn) (core.Envelope, *core.Run, error)
}

// OrderedTransitioner is an EventSink that writes a run's status change
// in the run's order on the log, in one transaction with the run's events
// still pending (the store's TransitionInOrder): a status change and the
// events around it cost one commit.
type OrderedTransitioner interface {
	TransitionInOrder(ctx context.Context, r *core.Run, from []core.RunStatus) (*core.Run, error)
}

// QueuedTransitioner is an OrderedTransitioner that can also queue a status
// change without waiting for its commit (the store's EnqueueTransition):
// it joins the run's queued events in the log's next transaction, and done
// reports its outcome from the log's writer.
type QueuedTransitioner interface {
	EnqueueTransition(ctx context.Context, r *core.Run, from []core.RunStatus, done func(*core.Run, error)) error
}

// maxEventsAhead bounds how far one run's engine may run ahead of the log:
// past it, emitting waits for the oldest pending event's commit. Big enough
// that a token stream never waits on a healthy database, small enough that
// a stalled one holds little in memory per run.
const maxEventsAhead = 256

// pendingEvents tracks a run's events queued to the log and not yet
// committed. Its callbacks run on the log's writer and never take the
// run's lock, so waiting on it with the run's lock held cannot deadlock.
type pendingEvents struct {
	slots    chan struct{} // one per event in flight
	inFlight sync.WaitGroup

	mu  sync.Mutex
	err error // the first event that failed to commit
}

func newPendingEvents() *pendingEvents {
	return &pendingEvents{slots: make(chan struct{}, maxEventsAhead)}
}

// reserve takes a slot for one more event, waiting while the run has
// maxEventsAhead in flight (backpressure to the engine).
func (p *pendingEvents) reserve() {
	p.slots <- struct{}{}
	p.inFlight.Add(1)
}

// settle records one event's outcome and frees its slot.
func (p *pendingEvents) settle(_ core.Envelope, err error) {
	if err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
	}
	<-p.slots
	p.inFlight.Done()
}

// failed is the first commit failure of the run's queued events, if any.
func (p *pendingEvents) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// flush waits until every queued event's transaction has ended, and
// returns the first failure among all of them.
func (p *pendingEvents) flush() error {
	p.inFlight.Wait()
	return p.failed()
}

// appendLocked logs ev for the run; the caller holds ar.mu, so events get
// seqs in the order emitters decided them. With an EventQueue only
// terminal and pause events wait for their commit, after every event
// before them (a client that sees the run end or pause can read all it
// said); the rest return once queued, failing if an earlier one of the run
// did not commit.
func (o *Orchestrator) appendLocked(ctx context.Context, ar *activeRun, ev NewEvent) error {
	err := o.appendLockedOnce(ctx, ar, ev)
	if err != nil {
		noteLeaseLost(ar, err)
		noteStoreUnavailable(ar, err)
	}
	return err
}

func (o *Orchestrator) appendLockedOnce(ctx context.Context, ar *activeRun, ev NewEvent) error {
	ctx = context.WithoutCancel(ctx)
	q, async := o.events.(EventQueue)
	if !async {
		_, err := o.events.Append(ctx, ar.run, ev)
		return err
	}
	// Whatever comes next, a held tool.started goes first.
	if err := o.releaseHeldLocked(ctx, ar, q); err != nil {
		return err
	}
	if ev.Type == core.EventToolStarted {
		o.holdToolStarted(ar, q, ev)
		return nil
	}
	return o.enqueueLocked(ctx, ar, q, ev)
}

// toolStartedLinger is how long a tool.started may wait for its call's
// closing event before it is queued alone.
const toolStartedLinger = 20 * time.Millisecond

// holdToolStarted holds a tool.started back, the caller holding ar.mu: a
// quick call's closing event (or anything else the run emits first) then
// queues it, right before itself, so that the two share the log's commit:
// one commit per tool call instead of two. A call still running after
// toolStartedLinger has its tool.started queued then, alone. Clients see
// only committed events, so they see it no later than they would anyway
// once the call ends, and a long call's start at most the linger late.
func (o *Orchestrator) holdToolStarted(ar *activeRun, q EventQueue, ev NewEvent) {
	held := &ev
	ar.held = held
	ar.heldTimer = time.AfterFunc(toolStartedLinger, func() {
		ar.mu.Lock()
		defer ar.mu.Unlock()
		if ar.held == held {
			if err := o.releaseHeldLocked(context.Background(), ar, q); err != nil {
				o.log.Warn("queue tool.started", "run", ar.run.ID, "error", err)
			}
		}
	})
}

// releaseHeldLocked queues the held tool.started, if any; the caller holds
// ar.mu.
func (o *Orchestrator) releaseHeldLocked(ctx context.Context, ar *activeRun, q EventQueue) error {
	if ar.held == nil {
		return nil
	}
	ev := *ar.held
	ar.held = nil
	ar.heldTimer.Stop()
	return o.enqueueLocked(ctx, ar, q, ev)
}

// enqueueLocked queues ev for the log; the caller holds ar.mu.
func (o *Orchestrator) enqueueLocked(ctx context.Context, ar *activeRun, q EventQueue, ev NewEvent) error {
	if ev.Type.Terminal() || ev.Type == core.EventRunPaused {
		earlier := ar.queued.flush()
		if earlier != nil && !ev.Type.Terminal() {
			return earlier
		}
		_, err := o.events.Append(ctx, ar.run, ev)
		return err
	}
	if err := ar.queued.failed(); err != nil {
		return err
	}
	ar.queued.reserve()
	if err := q.Enqueue(ctx, ar.run, ev, ar.queued.settle); err != nil {
		ar.queued.settle(core.Envelope{}, err)
		return err
	}
	return nil
}

// recordEnd writes a run's end: its terminal event, the chat's assistant
// turn and its final state. With a RunFinisher the three are one
// transaction; otherwise the event goes to the log first (the log is the
// source of truth: a host that dies between the writes is repaired at
// start-up from the event, never the reverse), then the finish hook (a
// client that sees the run finished must find its turn recorded), then the
// row.
func (o *Orchestrator) recordEnd(ctx context.Context, ar *activeRun, ev NewEvent, payload any, to core.RunStatus, final func(*core.Run)) {
	runID := ar.run.ID
	b, err := json.Marshal(payload)
	if err != nil {
		o.log.Error("encode terminal event", "run", runID, "error", err)
		return
	}
	ev.Payload = b
	done := ar.nextRun(to, final)

	finisher, oneStep := o.events.(RunFinisher)
	if !oneStep {
		if err := o.emitWith(ctx, ar, ev, nil); err != nil {
			o.log.Error("emit terminal event", "run", runID, "error", err)
		}
		if o.opts.OnFinished != nil {
			o.opts.OnFinished(ctx, &done)
		}
		if err := o.setStatus(ctx, ar, to, final); err != nil {
			o.log.Error("record final state", "run", runID, "error", err)
		}
		return
	}
	var turn *core.ChatTurn
	if o.opts.AssistantTurn != nil {
		turn = o.opts.AssistantTurn(&done)
	}
	ar.mu.Lock()
	if ar.finished {
		// Something ended the run's log already; only the row is left.
		ar.mu.Unlock()
		if err := o.setStatus(ctx, ar, to, final); err != nil {
			o.log.Error("record final state", "run", runID, "error", err)
		}
		return
	}
	ar.finished = true
	if q, ok := o.events.(EventQueue); ok {
		if err := o.releaseHeldLocked(ctx, ar, q); err != nil {
			o.log.Error("queue tool.started", "run", runID, "error", err)
		}
	}
	// The terminal event is the run's last: the log's writer takes it after
	// every event the run queued before, usually in the same transaction
	// (one commit for the run's last events and its end). Should that
	// transaction fail, the earlier events are lost with it, and the end
	// goes again alone, after them.
	finishCtx := context.WithoutCancel(ctx)
	_, updated, err := finisher.FinishRun(finishCtx, &done, core.Sources(to), ev, turn)
	if err != nil && ar.queued.flush() != nil {
		o.log.Warn("the run's last events were not logged; recording its end alone", "run", runID, "error", err)
		_, updated, err = finisher.FinishRun(finishCtx, &done, core.Sources(to), ev, turn)
	}
	ar.mu.Unlock()
	if core.CodeOf(err) == core.CodeStoreUnavailable {
		updated, err = o.persistEnd(ar, done, func() (*core.Run, error) {
			_, updated, err := finisher.FinishRun(finishCtx, &done, core.Sources(to), ev, turn)
			return updated, err
		})
	}
	if updated != nil {
		ar.mu.Lock()
		ar.run = updated
		ar.mu.Unlock()
	}
	if err != nil {
		o.log.Error("record the run's end", "run", runID, "error", err)
	}
	if o.opts.OnFinished != nil {
		o.opts.OnFinished(ctx, &done)
	}
}
