package orchestrator

import "github.com/agenthost/agenthost/core"

// With several hosts on one database, a run's writes are fenced by its
// owner's lease (see the store). A host whose lease lapsed — paused past
// it, cut off from the database — may find on its return that another host
// took its runs over: its writes for them are refused with CodeLeaseLost.
// Such a run is the other host's now, so this one lets go of it without
// writing anything more: no terminal event, no revision, no status.

// noteLeaseLost marks the run lost when err says its lease was taken; the
// caller holds ar.mu. The engine's context ends, so the run winds down and
// finish lets go of it.
func noteLeaseLost(ar *activeRun, err error) {
	if core.CodeOf(err) != core.CodeLeaseLost {
		return
	}
	if ar.failCode != core.CodeLeaseLost {
		ar.failCode, ar.failMsg = core.CodeLeaseLost, err.Error()
	}
	ar.cancel()
}

// leaseLost reports whether the run was found taken over.
func (ar *activeRun) leaseLost() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.failCode == core.CodeLeaseLost
}

// letGo forgets a run another host took over: it leaves this host's
// active runs, its waiters are released, and its sandbox is stopped. It
// writes nothing.
func (o *Orchestrator) letGo(ar *activeRun, ref *sandboxRef) {
	o.log.Warn("another host took this run over (this host's lease lapsed); it stops here without writing", "run", ar.run.ID)
	o.releaseWarm(ar, false)
	o.mu.Lock()
	if o.active[ar.run.ID] == ar {
		delete(o.active, ar.run.ID)
	}
	o.mu.Unlock()
	ar.cancel()
	ar.mu.Lock()
	ar.finished = true
	ar.idle = false
	done := ar.done
	ar.mu.Unlock()
	select {
	case <-done:
	default:
		close(done)
	}
	o.stopSandbox(ar.run.ID, ref)
}

// Relinquish lets go of every run this host holds: its lease was taken and
// other hosts own them now. Runs executing stop (their writes are refused
// anyway); paused ones are forgotten here.
func (o *Orchestrator) Relinquish() {
	for _, ar := range o.activeRuns() {
		ar.abort(core.CodeLeaseLost, "this host's lease was taken over")
		ar.mu.Lock()
		idle, ref := ar.idle, ar.ref
		ar.mu.Unlock()
		if idle {
			// Nothing executes it to reach finish: let go here.
			o.letGo(ar, ref)
		}
	}
}

// activeRuns returns the runs this host holds now.
func (o *Orchestrator) activeRuns() []*activeRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	runs := make([]*activeRun, 0, len(o.active))
	for _, ar := range o.active {
		runs = append(runs, ar)
	}
	return runs
}
