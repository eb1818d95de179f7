package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/core"
)

// PauseInterrupted is the pause reason of a run whose host stopped while it
// was active: its engine had saved its state, so resume continues it from
// there in a new sandbox holding the files saved with that state.
const PauseInterrupted = "interrupted"

// Held reports whether this process is executing (or holds paused) the run.
// A stored paused run it does not hold was paused by an earlier host
// process; Reattach continues it.
func (o *Orchestrator) Held(runID string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.active[runID]
	return ok
}

// HeldScope returns the tenant and app of a run this process holds (they
// never change), so a request about it needs no read of the run; ok is
// false for a run it does not hold.
func (o *Orchestrator) HeldScope(runID string) (tenantID, appID string, ok bool) {
	o.mu.Lock()
	ar := o.active[runID]
	o.mu.Unlock()
	if ar == nil {
		return "", "", false
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.run.TenantID, ar.run.AppID, true
}

// AwaitFinished waits, until ctx ends, for a run this host holds to leave
// it (its final state recorded); it returns at once for a run it does not
// hold. A reader that saw the run's terminal event in the log uses it to
// answer with the complete final record rather than a half-written one.
func (o *Orchestrator) AwaitFinished(ctx context.Context, runID string) {
	o.mu.Lock()
	ar := o.active[runID]
	o.mu.Unlock()
	if ar == nil {
		return
	}
	ar.mu.Lock()
	done := ar.done
	ar.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Reattach continues a paused run that no live execution holds: a new
// sandbox from req.Files (the working copy saved with the engine's state),
// then the engine from its saved state. req describes the run as Start's
// would; the run keeps its id, model, chat and events.
func (o *Orchestrator) Reattach(ctx context.Context, req StartRequest) (*core.Run, error) {
	if err := o.Ready(req.Engine, req.Sandbox); err != nil {
		return nil, err
	}
	run, err := o.runs.GetRun(ctx, req.RunID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, core.Errf(core.CodeHostShutdown, "", "the host is shutting down")
	}
	if _, held := o.active[run.ID]; held || run.Status != core.RunPaused {
		o.mu.Unlock()
		return nil, core.Errf(core.CodeRunNotPaused, "", "run %s is %s and held by this host; answer its pending question instead", run.ID, run.Status)
	}
	ar := newActiveRun(run, req)
	// Usage so far travels in the run's context; the run goes on counting.
	var rc struct {
		Usage runUsage `json:"usage"`
	}
	if json.Unmarshal(run.Context, &rc) == nil {
		ar.inputTokens, ar.outputTokens = rc.Usage.InputTokens, rc.Usage.OutputTokens
	}
	o.active[run.ID] = ar
	o.wg.Add(1)
	o.mu.Unlock()

	reason := run.PauseReason
	if err := o.setStatus(ctx, ar, core.RunRunning, func(r *core.Run) { r.PauseReason = "" }); err != nil {
		o.mu.Lock()
		delete(o.active, run.ID)
		o.mu.Unlock()
		o.wg.Done()
		return nil, err
	}
	_ = o.emit(ctx, ar, core.EventRunResumed, map[string]any{"reason": reason, "from_saved_state": true})
	go o.execute(ar)
	return ar.run, nil
}

// cancelDetached cancels a stored paused run no live execution holds:
// nothing runs, so the cancel is confirmed at once.
func (o *Orchestrator) cancelDetached(ctx context.Context, run *core.Run) error {
	o.mu.Lock()
	if _, held := o.active[run.ID]; held {
		o.mu.Unlock()
		return nil
	}
	ar := newActiveRun(run, StartRequest{})
	ar.cancelRequested = true
	o.active[run.ID] = ar
	o.mu.Unlock()
	o.finish(ar, outcome{status: core.RunCancelled}, nil)
	return nil
}
