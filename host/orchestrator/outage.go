package orchestrator

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/core"
)

// While the database is unavailable the store holds a run's writes and
// retries them for its outage window; the engine blocks on emit meanwhile.
// Past the window a write fails with core.CodeStoreUnavailable: the run
// then fails closed with that code (never ENGINE_ERROR), and its end is
// written once the database takes writes again. Until then the run's real
// state is answered from memory, marked as not yet persisted.

// StepRetrier is a RunStore that can run a caller's multi-call step the
// way it runs its own writes while the database is unavailable (the
// store's Retry): again while the outage lasts less than its window, then
// failing with core.CodeStoreUnavailable. A run's result (its files
// streamed from the sandbox into the store, then the revision) is such a
// step.
type StepRetrier interface {
	Retry(ctx context.Context, what string, step func(ctx context.Context) error) error
}

// noteStoreUnavailable fails the run with core.CodeStoreUnavailable when
// err says the database did not take its write within the outage window;
// the caller holds ar.mu. The engine's context ends, so the run winds
// down, and finish records the failure once the database is back.
func noteStoreUnavailable(ar *activeRun, err error) {
	if core.CodeOf(err) != core.CodeStoreUnavailable {
		return
	}
	if ar.failCode == "" {
		ar.failCode, ar.failMsg = core.CodeStoreUnavailable, err.Error()
	}
	ar.cancel()
}

// storeFailureCode is the code a run fails with when a write for it
// failed with err: the store's own codes, or fallback.
func storeFailureCode(err error, fallback string) string {
	switch code := core.CodeOf(err); code {
	case core.CodeLeaseLost, core.CodeStoreUnavailable:
		return code
	}
	return fallback
}

// retryStep runs step through the store's Retry when it has one.
func (o *Orchestrator) retryStep(ctx context.Context, what string, step func(ctx context.Context) error) error {
	if r, ok := o.runs.(StepRetrier); ok {
		return r.Retry(ctx, what, step)
	}
	return step(ctx)
}

// endRetryBackoff bounds the wait between two tries of a run's end that
// the database did not take.
const endRetryBackoff = 2 * time.Second

// persistEnd writes a run's end again until the database takes it or the
// host shuts down; meanwhile Unpersisted answers the run's real state.
// finishOnce is one try (the store's FinishRun).
func (o *Orchestrator) persistEnd(ar *activeRun, end core.Run, finishOnce func() (*core.Run, error)) (*core.Run, error) {
	ar.mu.Lock()
	ar.unpersisted = &end
	ar.mu.Unlock()
	defer func() {
		ar.mu.Lock()
		ar.unpersisted = nil
		ar.mu.Unlock()
	}()
	o.log.Warn("the database did not take the run's end; it is kept in memory and written when the database is back", "run", end.ID, "status", end.Status)
	wait := 100 * time.Millisecond
	for {
		time.Sleep(wait)
		wait = min(2*wait, endRetryBackoff)
		updated, err := finishOnce()
		if core.CodeOf(err) != core.CodeStoreUnavailable {
			return updated, err
		}
		o.mu.Lock()
		closed := o.closed
		o.mu.Unlock()
		if closed {
			// The next host process (or another host) settles the run
			// from what the log holds.
			return nil, err
		}
	}
}

// Unpersisted returns the final state of a run this host holds whose end
// the database has not taken yet (see persistEnd).
func (o *Orchestrator) Unpersisted(runID string) (*core.Run, bool) {
	o.mu.Lock()
	ar := o.active[runID]
	o.mu.Unlock()
	if ar == nil {
		return nil, false
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.unpersisted == nil {
		return nil, false
	}
	r := *ar.unpersisted
	return &r, true
}
