package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// outcome is how a run ends.
type outcome struct {
	status      core.RunStatus
	code, msg   string
	diagnostics []byte
	pauseReason string
}

func failed(code, format string, args ...any) outcome {
	return outcome{status: core.RunFailed, code: code, msg: fmt.Sprintf(format, args...)}
}

// execute carries one run from queued to an end (or an engine-requested
// pause). It owns the run's sandbox for the run's duration.
func (o *Orchestrator) execute(ar *activeRun) {
	defer o.wg.Done()
	ctx := ar.ctx
	out, sb := o.runToEnd(ctx, ar)
	o.finish(ar, out, sb)
}

// runToEnd provisions, runs the engine and applies the result; it returns the
// outcome and the sandbox (to stop), if one was made.
func (o *Orchestrator) runToEnd(ctx context.Context, ar *activeRun) (outcome, *sandboxRef) {
	run := ar.run
	// Sandbox. The run's row becomes running once it is known whether a
	// warm sandbox serves it: then one write records both.
	_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageSandboxStarting, "sandbox_backend": run.SandboxBackend})
	sbClient, sbH, err := awaitPlugin(ctx, func() (*sandbox.Client, pluginmgr.Handle, error) { return o.plugins.Sandbox(run.SandboxBackend) })
	if err != nil {
		return failed(core.CodeSandboxUnavailable, "%v", err), nil
	}
	ar.mu.Lock()
	ar.sandboxH = sbH
	ar.mu.Unlock()
	sandboxID := "sbx_" + run.ID
	sbStart := time.Now()
	key := o.scopeKey(run)
	if key != "" {
		ref, started, tried, ok := o.reuseWarm(ctx, ar, key, sbClient, sbH)
		if ok {
			ar.mark("sandbox_start", time.Since(sbStart))
			if err := o.setStatusQueued(ctx, ar, core.RunRunning, func(r *core.Run) {
				r.SandboxID, r.SandboxStatus, r.SandboxStartedAt = ref.id, sandbox.StatusRunning, &started
			}); err != nil {
				return failed(core.CodeInvalidRunTransition, "%v", err), ref
			}
			_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageSandboxReady, "sandbox_id": ref.id, "reused": true})
			return o.runEngine(ctx, ar, ref), ref
		}
		sandboxID = newSandboxID(key)
		// Only a run Start just created (sandbox still "starting"): a run
		// continued after a host restart names its old sandbox, whose
		// folder may still be there.
		if planned := run.SandboxID; run.SandboxStatus == SandboxStarting && strings.HasPrefix(planned, "sbx_"+key+"_") && planned != tried && !o.warmHolds(planned) && !o.wasRetired(planned) {
			// The id the run was created with, when it was not the
			// chat's warm sandbox (that one went to another run, was
			// found gone, or left the pool to be stopped: a fresh sandbox
			// must not take a dead one's id).
			sandboxID = planned
		}
	}
	if err := o.setStatusQueued(ctx, ar, core.RunRunning, nil); err != nil {
		return failed(core.CodeInvalidRunTransition, "%v", err), nil
	}
	files, err := o.baseFiles(ctx, ar)
	if err != nil {
		return failed(core.CodeSandboxError, "provision the sandbox: %v", err), nil
	}
	info, err := sbClient.Create(ctx, sandbox.CreateSpec{ID: sandboxID, ScopeKey: key, Files: files,
		Labels: map[string]string{"run_id": run.ID, "app_id": run.AppID}, MaxFileBytes: o.opts.Limits.MaxFileBytes})
	if err != nil {
		return o.classify(ar, err, "create sandbox"), nil
	}
	ar.mark("sandbox_start", time.Since(sbStart))
	ref := &sandboxRef{client: sbClient, id: info.ID}
	o.knowCreated(ctx, ref, info.SnapshotGeneration, files)
	if key != "" {
		ar.mu.Lock()
		ar.warmKey, ar.warm = key, &warmSandbox{ref: ref, backend: run.SandboxBackend, startedAt: info.CreatedAt.UTC(), inUse: true}
		ar.mu.Unlock()
	}
	ar.mu.Lock()
	ar.ref = ref
	ar.mu.Unlock()
	started := info.CreatedAt.UTC()
	_ = o.setStatusQueued(ctx, ar, core.RunRunning, func(r *core.Run) {
		r.SandboxID, r.SandboxStatus, r.SandboxStartedAt = info.ID, info.Status, &started
	})
	_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageSandboxReady, "sandbox_id": info.ID})

	return o.runEngine(ctx, ar, ref), ref
}

// runEngine drives the engine plugin until it returns a result.
func (o *Orchestrator) runEngine(ctx context.Context, ar *activeRun, ref *sandboxRef) outcome {
	run := ar.run
	client, engH, err := awaitPlugin(ctx, func() (*engine.Client, pluginmgr.Handle, error) { return o.plugins.Engine(run.Engine) })
	if err != nil {
		return failed(core.CodeEngineUnavailable, "%v", err)
	}
	ar.mu.Lock()
	ar.engineH = engH
	ar.mu.Unlock()

	ar.mu.Lock()
	cancelled := ar.cancelRequested
	ar.mu.Unlock()
	if cancelled {
		return outcome{status: core.RunCancelled}
	}
	wsID := o.lend(run.ID, ref)
	defer o.revoke(wsID)
	ar.mu.Lock()
	loadState := !ar.noSavedState
	ar.mu.Unlock()
	var state []byte
	if loadState {
		if state, err = o.runs.LoadEngineState(ctx, run.ID); err != nil {
			return failed(core.CodeEngineError, "load engine state: %v", err)
		}
	}
	req := engine.RunRequest{
		RunID: run.ID, AppID: run.AppID, ChatSessionID: run.ChatSessionID, Prompt: ar.req.Prompt,
		History: ar.req.History, Model: ar.req.Model, Tools: o.toolDescriptors(),
		Context: ar.req.Context, State: state, WorkspaceID: wsID, Limits: ar.req.Limits,
	}
	if req.Limits.ToolTimeout == 0 {
		req.Limits.ToolTimeout = o.opts.ToolTimeout
	}
	_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageEngineStarting, "engine": run.Engine})
	ar.mu.Lock()
	ar.engineCalled = time.Now()
	ar.mu.Unlock()

	res, err := client.Run(ctx, req, func(ev engine.Event) error { return o.onEngineEvent(ctx, ar, ev) })
	if err != nil && !ar.engineTouched() && engH.Crashed(o.opts.CrashGrace) {
		// The engine died before it did anything for this run (no event, no
		// callback): nothing is half-done, so start it on the relaunched
		// engine instead of failing. Once only: a second death is a crash.
		o.log.Warn("engine died before the run began; retrying on its relaunch", "run", run.ID)
		dead := engH.Generation
		if client, engH, err = awaitPlugin(ctx, func() (*engine.Client, pluginmgr.Handle, error) {
			c, h, err := o.plugins.Engine(run.Engine)
			if err == nil && h.Generation == dead {
				// The manager has not noticed the death yet and still hands
				// out the dead process's client: wait for the relaunch.
				return c, h, pluginmgr.ErrRelaunching
			}
			return c, h, err
		}); err != nil {
			return failed(core.CodeEngineCrashed, "engine plugin %q crashed and did not come back: %v", run.Engine, err)
		}
		ar.mu.Lock()
		ar.engineH = engH
		ar.mu.Unlock()
		res, err = client.Run(ctx, req, func(ev engine.Event) error { return o.onEngineEvent(ctx, ar, ev) })
	}
	if code, msg := ar.failure(); code != "" {
		if code == core.CodeHostShutdown {
			// The host is going down, not the run: with the engine's state
			// saved, the run waits paused for a host to resume it.
			if st, err := o.runs.LoadEngineState(context.WithoutCancel(ctx), run.ID); err == nil && len(st) > 0 {
				return outcome{status: core.RunPaused, pauseReason: PauseInterrupted}
			}
		}
		// A crash or an unconfirmed cancel decided the outcome already.
		return failed(code, "%s", msg)
	}
	ar.mu.Lock()
	cancelRequested := ar.cancelRequested
	ar.mu.Unlock()
	if err != nil {
		if cancelRequested && errors.Is(err, context.Canceled) {
			return outcome{status: core.RunCancelled}
		}
		if engH.Crashed(o.opts.CrashGrace) {
			return failed(core.CodeEngineCrashed, "engine plugin %q crashed during the run: %v", run.Engine, err)
		}
		return failed(core.CodeEngineError, "engine %q: %v", run.Engine, err)
	}
	ar.mu.Lock()
	if !ar.streamed && res.OutputText != "" {
		ar.output = []byte(res.OutputText)
	}
	ar.mu.Unlock()
	switch res.Status {
	case engine.StatusCompleted:
		return outcome{status: core.RunCompleted}
	case engine.StatusCancelled:
		return outcome{status: core.RunCancelled}
	case engine.StatusPaused:
		return outcome{status: core.RunPaused, pauseReason: res.PauseReason}
	case engine.StatusFailed:
		code := res.ErrorCode
		if code == "" {
			code = core.CodeEngineError
		}
		if cancelRequested {
			return outcome{status: core.RunFailed, code: core.CodeCancelUnconfirmed,
				msg: fmt.Sprintf("the engine did not confirm the cancel; it ended with %s: %s", code, res.ErrorMessage), diagnostics: res.Diagnostics}
		}
		return outcome{status: core.RunFailed, code: code, msg: res.ErrorMessage, diagnostics: res.Diagnostics}
	}
	return failed(core.CodeEngineError, "engine returned unknown status %q", res.Status)
}

// onEngineEvent turns an engine event into timeline events.
func (o *Orchestrator) onEngineEvent(ctx context.Context, ar *activeRun, ev engine.Event) error {
	ar.touch()
	ar.mu.Lock()
	called := ar.engineCalled
	ar.mu.Unlock()
	ar.mark("engine_start", time.Since(called))
	if ev.Kind == engine.KindAssistantDelta && ev.Text != "" {
		ar.mark("first_token", time.Since(ar.run.CreatedAt))
	}
	switch ev.Kind {
	case engine.KindAssistantDelta:
		if ev.Text == "" {
			return nil
		}
		ar.mu.Lock()
		ar.streamed = true
		ar.output = append(ar.output, ev.Text...)
		ar.mu.Unlock()
		return o.emit(ctx, ar, core.EventAssistantDelta, map[string]any{"text": ev.Text})
	case engine.KindStatus:
		return o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": ev.Stage, "message": ev.Message})
	case engine.KindUsage:
		ar.mu.Lock()
		ar.inputTokens += ev.InputTokens
		ar.outputTokens += ev.OutputTokens
		ar.mu.Unlock()
	case engine.KindReasoning:
		// Reasoning is never shown as assistant text.
	case engine.KindToolStarted, engine.KindToolFinished:
		return o.onEngineTool(ctx, ar, ev)
	}
	return nil
}

// classify names the failure of a call to a plugin: a crash when its process
// died, otherwise the plugin's own error.
func (o *Orchestrator) classify(ar *activeRun, err error, what string) outcome {
	if code, msg := ar.failure(); code != "" {
		return failed(code, "%s", msg)
	}
	ar.mu.Lock()
	sbH := ar.sandboxH
	ar.mu.Unlock()
	if sbH.Exited != nil && sbH.Crashed(o.opts.CrashGrace) {
		return failed(core.CodeSandboxCrashed, "sandbox plugin %q crashed: %s: %v", sbH.Name, what, err)
	}
	if errors.Is(err, context.Canceled) {
		return outcome{status: core.RunCancelled}
	}
	return failed(core.CodeSandboxError, "%s: %v (%s)", what, err, plugin.CodeOf(err))
}

// sandboxRef is the run's sandbox. A chat's warm sandbox keeps its ref,
// and with it what the host holds of its files, from run to run.
type sandboxRef struct {
	client interface {
		Stop(ctx context.Context, id string) error
		SnapshotChanges(ctx context.Context, id string, opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error)
	}
	id string

	mu sync.Mutex
	// known is what the host holds of the sandbox's files, nil for
	// nothing (see snapshot.go).
	known *sandboxFiles
	// services are the names of the services engines started in it.
	services []string

	// calls counts the calls into the sandbox that may change its files;
	// settled, when set, says its last snapshot vouched for its files
	// until the next such call (see untouched.go).
	calls   callCounter
	settled *settledMark
}

// noteService records a service started in the sandbox.
func (r *sandboxRef) noteService(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.services, name) {
		r.services = append(r.services, name)
	}
}

// serviceNames are the services started in the sandbox so far.
func (r *sandboxRef) serviceNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.services)
}

// finish applies a completed run's result, emits the one terminal event,
// records the final state and releases the sandbox.
func (o *Orchestrator) finish(ar *activeRun, out outcome, ref *sandboxRef) {
	// Finishing must complete even though the run's context may be
	// cancelled (that is often why we are here).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := ar.run
	if ar.leaseLost() {
		o.letGo(ar, ref)
		return
	}

	if out.status == core.RunCompleted && ref != nil {
		applyStart := time.Now()
		_ = o.emit(ctx, ar, core.EventRunStatus, map[string]any{"stage": core.StageApplying})
		if o.results != nil {
			out = o.applyResult(ctx, ar, ref, out)
		}
		ar.mark("apply", time.Since(applyStart))
		if ar.leaseLost() {
			o.letGo(ar, ref)
			return
		}
	}

	if out.status == core.RunPaused {
		o.pauseIdle(ctx, ar, out)
		return
	}

	ar.mu.Lock()
	output := string(ar.output)
	inTok, outTok := ar.inputTokens, ar.outputTokens
	ar.mu.Unlock()
	// The terminal event goes to the log first: the log is the source of
	// truth, so a host that dies between the two writes is repaired at
	// start-up from the event (see hostapp's recovery), never the reverse.
	// A tool call still in flight (its toolpack crashed, or the run was
	// aborted under it) is finished here, before the terminal event.
	ar.mu.Lock()
	open := make(map[string]string, len(ar.openCalls))
	for id, tool := range ar.openCalls {
		open[id] = tool
	}
	ar.mu.Unlock()
	for id, tool := range open {
		code := out.code
		if code == "" {
			code = core.CodeToolCancelled
		}
		_ = o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolFailed},
			toolFailed{ErrorCode: code, ErrorMessage: "the run ended while this tool call was in flight", Tool: tool, CallID: id}, id)
	}
	typ, _ := core.TerminalEventFor(out.status)
	payload := map[string]any{"status": out.status}
	if out.code != "" {
		payload["error_code"], payload["error_message"] = out.code, out.msg
	}
	if output != "" {
		payload["output_text"] = output
	}
	ar.mu.Lock()
	resultRevision, result := ar.resultRevision, ar.result
	ar.mu.Unlock()
	if len(result) > 0 {
		payload["result"] = result
	}
	if resultRevision != "" {
		payload["result_revision_id"] = resultRevision
	}
	ar.mu.Lock()
	keepWarm := ar.warm != nil && (out.status == core.RunCompleted || out.status == core.RunCancelled)
	ar.mu.Unlock()
	// A chat's sandbox goes back to the pool before the terminal event: a
	// client starts the chat's next run the moment it sees that event, and
	// that run must find the sandbox idle, not still held by this one (it
	// would get a fresh sandbox, and two would race back into the pool).
	// Nothing of this run touches the sandbox any more: the engine has
	// returned, its workspace lease is revoked and the result is applied.
	o.releaseWarm(ar, keepWarm)
	now := time.Now().UTC()
	ar.mark("total", now.Sub(ar.run.CreatedAt))
	final := func(r *core.Run) {
		r.ErrorCode, r.ErrorMessage, r.OutputText, r.FinishedAt = out.code, out.msg, output, &now
		r.InputTokens, r.OutputTokens = inTok, outTok
		if resultRevision != "" {
			r.ResultRevisionID = resultRevision
		}
		if ref != nil {
			r.SandboxStatus = sandbox.StatusStopped
			if keepWarm {
				// Kept for the chat's next run: idle, still running.
				r.SandboxStatus = sandbox.StatusRunning
			}
		}
	}
	o.recordEnd(ctx, ar, NewEvent{Type: typ, Diagnostics: out.diagnostics}, payload, out.status, final)
	o.mu.Lock()
	delete(o.active, run.ID)
	o.mu.Unlock()
	ar.cancel()
	ar.mu.Lock()
	ar.idle = false
	done := ar.done
	ar.mu.Unlock()
	close(done)
	// The run's outcome is recorded; stopping the sandbox is housekeeping
	// that a slow or stuck backend must not hold the run hostage to.
	if keepWarm {
		return
	}
	o.stopSandbox(run.ID, ref)
}

// stopSandbox stops a finished run's sandbox (ref may be nil), bounded by
// sandboxStopTimeout; a failure is logged, not returned.
func (o *Orchestrator) stopSandbox(runID string, ref *sandboxRef) {
	if ref == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sandboxStopTimeout)
	defer cancel()
	if err := ref.client.Stop(ctx, ref.id); err != nil {
		o.log.Warn("stop sandbox", "run", runID, "sandbox", ref.id, "error", err)
	}
}

// releaseWarm hands a finishing run's chat sandbox back to the pool when
// keep is set (a completed or cancelled run), else forgets it: after a
// failure it may be in any state, so finish stops it.
func (o *Orchestrator) releaseWarm(ar *activeRun, keep bool) {
	ar.mu.Lock()
	key, warm := ar.warmKey, ar.warm
	ar.mu.Unlock()
	if warm == nil {
		return
	}
	if keep {
		warm.revision = warmRevision(ar)
		ar.mu.Lock()
		warm.keptOut = ar.keptOut
		warm.heldBy = ar.sandboxH.Generation
		warm.stable = ar.sandboxH.Capabilities[plugin.CapabilityStableSandboxes] == "true"
		warm.server = slices.Contains(plugin.Features(ar.engineH.Capabilities[plugin.CapabilityRequires]), plugin.FeatureServices)
		ar.mu.Unlock()
		o.keepWarm(key, warm)
		return
	}
	o.dropWarm(key, warm)
}

// reuseWarm takes the chat's warm sandbox for the run, refreshed to the run's
// base files. A kept sandbox that is gone is forgotten, and the run is told
// it starts in a fresh one; tried is then its id.
func (o *Orchestrator) reuseWarm(ctx context.Context, ar *activeRun, key string, sbClient *sandbox.Client, sbH pluginmgr.Handle) (ref *sandboxRef, started time.Time, tried string, ok bool) {
	w := o.takeWarm(key, ar.run.SandboxBackend)
	if w == nil {
		return nil, time.Time{}, "", false
	}
	lost := func(why string, err error) (*sandboxRef, time.Time, string, bool) {
		o.log.Warn("warm sandbox unusable; starting a fresh one", "sandbox", w.ref.id, "why", why, "error", err)
		o.dropWarm(key, w)
		go o.stopWarm(w)
		ar.mu.Lock()
		ar.req.History = append(ar.req.History, engine.Message{Role: "system", Content: "This conversation's previous sandbox is gone; " +
			"this run starts in a fresh one made from the app's current draft, so anything installed or built there before is not here."})
		ar.mu.Unlock()
		return nil, time.Time{}, w.ref.id, false
	}
	// A backend whose sandboxes only its own process removes still holds
	// this one if that process still runs: asking would cost a round trip
	// to the plugin on every turn of a chat.
	if !w.stable || w.heldBy != sbH.Generation || exited(sbH) {
		// Nor is what its last snapshot vouched for taken on trust: the
		// plugin was relaunched, or its sandboxes live where others may
		// reach them.
		w.ref.forgetSettled()
		info, err := sbClient.Get(ctx, w.ref.id)
		if err != nil || info.Status != sandbox.StatusRunning {
			return lost("not running", err)
		}
	}
	if w.revision == "" || w.revision != ar.run.BaseRevisionID {
		files, err := o.baseFiles(ctx, ar)
		if err != nil {
			return lost("reading the app's files failed", err)
		}
		n, err := refreshFiles(ctx, w.ref.track(sbClient.Workspace(w.ref.id)), files)
		if err != nil {
			return lost("refresh failed", err)
		}
		o.log.Debug("warm sandbox refreshed", "sandbox", w.ref.id, "files_changed", n)
	} else {
		// It holds the base revision already, less the files kept out of
		// it then: the same ones now (the limits are the host's), which
		// applying the result must carry over.
		ar.mu.Lock()
		ar.keptOut = w.keptOut
		ar.mu.Unlock()
		o.warnKeptOut(ctx, ar, w.keptOut)
	}
	w.ref.client = sbClient // the plugin may have been relaunched since
	ar.mu.Lock()
	ar.ref, ar.warmKey, ar.warm = w.ref, key, w
	ar.mu.Unlock()
	return w.ref, w.startedAt, w.ref.id, true
}

// exited reports, without waiting, whether the plugin process h names has
// exited (its manager may not have noticed yet).
func exited(h pluginmgr.Handle) bool {
	select {
	case <-h.Exited:
		return true
	default:
		return false
	}
}

// sandboxStopTimeout bounds releasing a finished run's sandbox.
const sandboxStopTimeout = 30 * time.Second

// pauseIdle records an engine-requested pause (a token budget, say). The run
// stays active with its sandbox; Resume runs the engine again from its saved
// state.
func (o *Orchestrator) pauseIdle(ctx context.Context, ar *activeRun, out outcome) {
	ar.mu.Lock()
	in, outTok := ar.inputTokens, ar.outputTokens
	ar.mu.Unlock()
	if err := o.setStatus(ctx, ar, core.RunPaused, func(r *core.Run) {
		r.PauseReason, r.InputTokens, r.OutputTokens = out.pauseReason, in, outTok
	}); err != nil {
		o.log.Error("record pause", "run", ar.run.ID, "error", err)
	}
	_ = o.emit(ctx, ar, core.EventRunPaused, map[string]any{"reason": out.pauseReason})
	ar.mu.Lock()
	ar.idle = true
	done := ar.done
	ar.mu.Unlock()
	close(done)
}

// resumeIdle runs the engine again, from its saved state, for a run it had
// paused itself.
func (o *Orchestrator) resumeIdle(ar *activeRun) {
	defer o.wg.Done()
	ctx := ar.ctx
	if err := o.setStatus(ctx, ar, core.RunRunning, func(r *core.Run) { r.PauseReason = "" }); err != nil {
		o.finish(ar, failed(core.CodeInvalidRunTransition, "%v", err), ar.ref)
		return
	}
	_ = o.emit(ctx, ar, core.EventRunResumed, map[string]any{})
	o.finish(ar, o.runEngine(ctx, ar, ar.ref), ar.ref)
}
