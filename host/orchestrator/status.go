package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/core"
)

// A run's status changes. The orchestrator is the only writer of a run it
// executes: it keeps the run's row and writes each change from that copy,
// in the run's order on the event log when the log can (see emitqueue.go).

// nextRun is the run's row as a change to `to` writes it: the
// orchestrator's copy, changed by mutate (may be nil), with the timings so
// far.
func (ar *activeRun) nextRun(to core.RunStatus, mutate func(*core.Run)) core.Run {
	ar.mu.Lock()
	next := *ar.run
	ar.mu.Unlock()
	next.Status, next.UpdatedAt = to, time.Now().UTC()
	if mutate != nil {
		mutate(&next)
	}
	next.Context = ar.withTimings(next.Context)
	return next
}

// setStatusQueued is setStatus for a change the run need not wait for
// (running, once its sandbox is known): the change is queued with the run's
// events and the run goes on at once, its copy of the row already the one
// written. A refusal or failure reported later ends the run as setStatus's
// error would have (see abort). Without a QueuedTransitioner it is
// setStatus.
func (o *Orchestrator) setStatusQueued(ctx context.Context, ar *activeRun, to core.RunStatus, mutate func(*core.Run)) error {
	q, ok := o.events.(QueuedTransitioner)
	if !ok {
		return o.setStatus(ctx, ar, to, mutate)
	}
	next := ar.nextRun(to, mutate)
	ar.queued.reserve()
	if err := q.EnqueueTransition(context.WithoutCancel(ctx), &next, core.Sources(to), func(_ *core.Run, err error) {
		if err != nil {
			ar.abort(storeFailureCode(err, core.CodeInvalidRunTransition), fmt.Sprintf("record the run as %s: %v", to, err))
		}
		ar.queued.settle(core.Envelope{}, nil)
	}); err != nil {
		ar.queued.settle(core.Envelope{}, nil)
		return err
	}
	ar.mu.Lock()
	ar.run = &next
	ar.mu.Unlock()
	return nil
}

// setStatus records a state change, refusing illegal transitions. The run's
// row is written from the orchestrator's copy in one conditional statement
// (the stored status must allow the change): the orchestrator is the only
// writer of a run it executes, so there is nothing to read first.
func (o *Orchestrator) setStatus(ctx context.Context, ar *activeRun, to core.RunStatus, mutate func(*core.Run)) error {
	next := ar.nextRun(to, mutate)
	transition := o.runs.TransitionRun
	if ordered, ok := o.events.(OrderedTransitioner); ok {
		transition = ordered.TransitionInOrder
	}
	updated, err := transition(context.WithoutCancel(ctx), &next, core.Sources(to))
	if err != nil {
		ar.mu.Lock()
		noteLeaseLost(ar, err)
		noteStoreUnavailable(ar, err)
		ar.mu.Unlock()
		return err
	}
	ar.mu.Lock()
	ar.run = updated
	ar.mu.Unlock()
	return nil
}
