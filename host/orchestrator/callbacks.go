package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// lease binds an unguessable workspace id to one run's sandbox, so a plugin
// can reach only the workspace it was lent, and only while it is lent.
type lease struct {
	runID string
	ref   *sandboxRef
	ws    workspace.Workspace
}

func (o *Orchestrator) lend(runID string, ref *sandboxRef) string {
	id := core.NewID("ws")
	var ws workspace.Workspace
	if c, ok := ref.client.(interface {
		Workspace(id string) workspace.Workspace
	}); ok {
		ws = ref.track(c.Workspace(ref.id))
	}
	o.mu.Lock()
	o.leases[id] = lease{runID: runID, ref: ref, ws: ws}
	o.mu.Unlock()
	return id
}

// direct grants the sandbox's workspace, served by its plugin itself,
// until ctx's deadline (a tool call's), when the plugin serves it so. The
// grant counts as a call into the sandbox until done is called, when the
// tool call returns (see untouched.go).
func (r *sandboxRef) direct(ctx context.Context) (grant workspace.Direct, done func(), ok bool) {
	d, ok := r.client.(interface {
		Direct(id string, until time.Time) (workspace.Direct, bool)
	})
	deadline, limited := ctx.Deadline()
	if !ok || !limited {
		return workspace.Direct{}, nil, false
	}
	done = r.calls.begin()
	grant, ok = d.Direct(r.id, deadline)
	if !ok {
		done()
		return workspace.Direct{}, nil, false
	}
	return grant, done, true
}

func (o *Orchestrator) revoke(id string) {
	o.mu.Lock()
	delete(o.leases, id)
	o.mu.Unlock()
}

// Workspace resolves a lent workspace id (engine.HostServices and the
// toolpacks' workspace.Resolver).
func (o *Orchestrator) Workspace(_ context.Context, id string) (workspace.Workspace, error) {
	o.mu.Lock()
	l, ok := o.leases[id]
	o.mu.Unlock()
	if !ok || l.ws == nil {
		return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "workspace %q is not lent to anyone", id)
	}
	return l.ws, nil
}

func (o *Orchestrator) toolDescriptors() []engine.ToolDescriptor {
	routes := o.plugins.Tools()
	out := make([]engine.ToolDescriptor, 0, len(routes))
	for _, r := range routes {
		if r.Permission == plugin.PermissionDeny {
			continue
		}
		out = append(out, engine.ToolDescriptor{Name: r.Spec.Name, Description: r.Spec.Description, InputSchema: r.Spec.InputSchema})
	}
	return out
}

// SaveState records an engine's durable state (engine.HostServices).
func (o *Orchestrator) SaveState(ctx context.Context, runID string, state []byte) error {
	ar, err := o.lookup(runID)
	if err != nil {
		return plugin.Errorf(plugin.CodeNotFound, "run_id", "%v", err)
	}
	ar.touch()
	if err := o.flushBeforeState(ctx, ar); err != nil {
		return fmt.Errorf("log the run's events before its state: %w", err)
	}
	ar.mu.Lock()
	ar.noSavedState = false // before the write: a failed one may have landed
	ar.mu.Unlock()
	// The files go with the state: a run resumed after the host died must
	// start from the files its saved conversation has seen, not from its
	// base revision. Only after a tool ran can they differ from the last
	// save, so a text-only turn costs no snapshot.
	ar.mu.Lock()
	dirty, ref := ar.filesDirty, ar.ref
	ar.filesDirty = false
	ar.mu.Unlock()
	var work []core.FileRef
	if dirty && ref != nil {
		// Streamed into the store file by file, like a result, and saved
		// by manifest. Files over the limit and paths left out are not
		// saved: the result applied later is judged on its own.
		files, err := o.streamSnapshot(ctx, ref)
		work = make([]core.FileRef, 0, len(files))
		for _, f := range files {
			if f.sha != "" {
				work = append(work, core.FileRef{Path: f.Path, Mode: f.Mode, SHA256: f.sha})
			}
		}
		if err != nil {
			ar.mu.Lock()
			ar.filesDirty = true
			ar.mu.Unlock()
			return fmt.Errorf("snapshot the run's files with its state: %w", err)
		}
	}
	return o.runs.SaveEngineState(ctx, runID, state, work)
}

// flushBeforeState waits until every event the run emitted so far is
// committed (a held tool.started queued first). The saved state must never
// be ahead of the log: a run resumed from it after a crash goes on from
// that state and never emits again what came before it, so an event still
// queued when the state committed would be lost for good. A commit that
// failed because another host took the run over, or the database is
// away, stops the run with that code, as a failed emit does.
func (o *Orchestrator) flushBeforeState(ctx context.Context, ar *activeRun) error {
	q, async := o.events.(EventQueue)
	if !async {
		return nil // every Append returned after its commit
	}
	ar.mu.Lock()
	err := o.releaseHeldLocked(context.WithoutCancel(ctx), ar, q)
	ar.mu.Unlock()
	if err == nil {
		err = ar.queued.flush()
	}
	if err != nil {
		ar.mu.Lock()
		noteLeaseLost(ar, err)
		noteStoreUnavailable(ar, err)
		ar.mu.Unlock()
	}
	return err
}

// RequestPermission pauses the run until Resume brings a decision
// (engine.HostServices).
func (o *Orchestrator) RequestPermission(ctx context.Context, runID string, req engine.PermissionRequest) (engine.PermissionDecision, error) {
	ar, err := o.lookup(runID)
	if err != nil {
		return engine.PermissionDecision{}, plugin.Errorf(plugin.CodeNotFound, "run_id", "%v", err)
	}
	return o.askPermission(ctx, ar, req)
}

func (o *Orchestrator) askPermission(ctx context.Context, ar *activeRun, req engine.PermissionRequest) (engine.PermissionDecision, error) {
	ar.touch()
	if req.PermissionID == "" {
		req.PermissionID = core.NewID("perm")
	}
	p := &pendingPermission{id: req.PermissionID, decision: make(chan engine.PermissionDecision, 1)}
	ar.mu.Lock()
	if ar.pending != nil {
		ar.mu.Unlock()
		return engine.PermissionDecision{}, plugin.Errorf(plugin.CodeInvalidArgument, "", "run %s already waits for permission %s", ar.run.ID, ar.pending.id)
	}
	ar.pending = p
	ar.mu.Unlock()
	defer func() {
		ar.mu.Lock()
		ar.pending = nil
		ar.mu.Unlock()
	}()

	details := req.Details
	if len(details) == 0 {
		details = json.RawMessage("null")
	}
	if err := o.emit(ctx, ar, core.EventPermissionRequest, map[string]any{
		"permission_id": req.PermissionID, "action": req.Action, "title": req.Title, "details": details,
	}); err != nil {
		return engine.PermissionDecision{}, err
	}
	if err := o.setStatus(ctx, ar, core.RunPaused, func(r *core.Run) { r.PauseReason = core.PauseForPermission }); err != nil {
		return engine.PermissionDecision{}, err
	}
	_ = o.emit(ctx, ar, core.EventRunPaused, map[string]any{"reason": core.PauseForPermission, "permission_id": req.PermissionID})

	var d engine.PermissionDecision
	select {
	case d = <-p.decision:
	case <-ctx.Done():
		// A cancel reaches here through the engine's own context, so the
		// engine sees its cancel rather than a failed callback.
		return engine.PermissionDecision{}, ctx.Err()
	case <-ar.ctx.Done():
		return engine.PermissionDecision{}, context.Canceled
	}
	_ = o.emit(ctx, ar, core.EventPermissionResolved, map[string]any{"permission_id": req.PermissionID, "allow": d.Allow, "reason": d.Reason})
	if err := o.setStatus(ctx, ar, core.RunRunning, func(r *core.Run) { r.PauseReason = "" }); err != nil {
		return engine.PermissionDecision{}, err
	}
	_ = o.emit(ctx, ar, core.EventRunResumed, map[string]any{"permission_id": req.PermissionID})
	return d, nil
}

// Resume answers a paused run's pending permission.
func (o *Orchestrator) Resume(_ context.Context, runID string, d engine.PermissionDecision) error {
	o.mu.Lock()
	ar := o.active[runID]
	o.mu.Unlock()
	if ar == nil {
		return core.Errf(core.CodeRunNotPaused, "", "run %s is not paused", runID)
	}
	ar.mu.Lock()
	p := ar.pending
	if p == nil && ar.idle {
		ar.idle = false
		ar.done = make(chan struct{})
		o.wg.Add(1)
		ar.mu.Unlock()
		go o.resumeIdle(ar)
		return nil
	}
	if p == nil {
		ar.mu.Unlock()
		return core.Errf(core.CodeRunNotPaused, "", "run %s is not paused", runID)
	}
	if p.decided {
		ar.mu.Unlock()
		return core.Errf(core.CodeRunNotPaused, "", "run %s already has a decision for permission %s", runID, p.id)
	}
	p.decided = true
	ar.mu.Unlock()
	p.decision <- d // buffered for exactly this one decision
	return nil
}

// AwaitsDecision reports whether a run this host holds waits for an answer
// to a permission question nobody has answered yet. Its stored status may
// still say running: the question is logged before the run is marked
// paused, and a client answering at once is a moment ahead.
func (o *Orchestrator) AwaitsDecision(runID string) bool {
	o.mu.Lock()
	ar := o.active[runID]
	o.mu.Unlock()
	if ar == nil {
		return false
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.pending != nil && !ar.pending.decided
}

// Cancel asks an active run to stop. The engine has CancelGrace to confirm;
// otherwise the run fails closed with CODING_AGENT_CANCEL_UNCONFIRMED.
func (o *Orchestrator) Cancel(ctx context.Context, runID string) error {
	ar, err := o.lookup(runID)
	if err != nil {
		stored, gerr := o.runs.GetRun(ctx, runID)
		if gerr == nil && stored.Status.Terminal() {
			return core.Errf(core.CodeRunFinished, "", "run %s is already %s", runID, stored.Status)
		}
		if gerr == nil && stored.Status == core.RunPaused {
			// Paused by an earlier host process: nothing runs it.
			return o.cancelDetached(ctx, stored)
		}
		return err
	}
	ar.mu.Lock()
	if ar.cancelRequested {
		ar.mu.Unlock()
		return nil
	}
	ar.cancelRequested = true
	engineName := ar.run.Engine
	if ar.idle {
		// No engine call is running: the cancel is confirmed by definition.
		ar.idle = false
		ar.done = make(chan struct{})
		ar.markCancelled()
		ar.mu.Unlock()
		o.finish(ar, outcome{status: core.RunCancelled}, ar.ref)
		return nil
	}
	ar.mu.Unlock()

	// The engine hears of the cancel before its tool calls are stopped: a
	// call that ended first would hand the engine a result it could act on
	// (say more, call again) before its own context was cancelled.
	client, _, err := o.plugins.Engine(engineName)
	found := false
	if err == nil {
		// Bounded: an engine that hangs here must not keep the tool calls
		// running; it fails closed below.
		rpcCtx, stop := context.WithTimeout(ctx, o.opts.CancelGrace)
		found, err = client.Cancel(rpcCtx, runID, "cancelled by user")
		stop()
	}
	ar.markCancelled()
	if err != nil {
		ar.abort(core.CodeCancelUnconfirmed, fmt.Sprintf("could not reach the engine to cancel: %v", err))
		return nil
	}
	if !found {
		// The engine is not running the run (still provisioning, or just
		// finishing): stopping our side is the whole cancel.
		ar.cancel()
		return nil
	}
	ar.mu.Lock()
	done := ar.done
	ar.mu.Unlock()
	// Fail closed if the engine does not answer in time.
	go func() {
		select {
		case <-done:
		case <-time.After(o.opts.CancelGrace):
			ar.abort(core.CodeCancelUnconfirmed, fmt.Sprintf("the engine did not confirm the cancel within %s", o.opts.CancelGrace))
		}
	}()
	return nil
}

// CallTool runs a tool for a run: it emits tool.started, routes the call to
// the toolpack that declares the tool with the run's sandbox lent as its
// workspace, applies the tool's permission, and emits exactly one of
// tool.completed / tool.failed (engine.HostServices).
func (o *Orchestrator) CallTool(ctx context.Context, runID string, call engine.ToolCall) (plugin.ToolResult, error) {
	ar, err := o.lookup(runID)
	if err != nil {
		return plugin.ToolResult{}, plugin.Errorf(plugin.CodeNotFound, "run_id", "%v", err)
	}
	ar.touch()
	ar.mu.Lock()
	cancelling := ar.cancelRequested
	ar.mu.Unlock()
	if cancelling {
		// No new work once the user asked to stop.
		return plugin.ToolResult{}, fmt.Errorf("run %s is being cancelled: %w", runID, context.Canceled)
	}
	if call.CallID == "" {
		call.CallID = core.NewID("call")
	}
	input := call.Input
	if !core.ValidJSON(input) {
		input, _ = json.Marshal(string(call.Input))
	}
	if err := o.emitToolStarted(ctx, ar, call.CallID, call.Tool, input); err != nil {
		return plugin.ToolResult{}, err
	}
	res, callErr := o.dispatchTool(ctx, ar, call)
	ar.mu.Lock()
	ar.filesDirty = true
	ar.mu.Unlock()
	if callErr != nil {
		res = plugin.ToolFail(core.CodeToolUnavailable, callErr.Error(), "")
		if errors.Is(callErr, context.Canceled) {
			res = plugin.ToolFail(core.CodeToolCancelled, "the tool call was cancelled", "")
		} else if errors.Is(callErr, context.DeadlineExceeded) {
			limit := o.opts.ToolTimeout
			var tt toolTimeout
			if errors.As(callErr, &tt) {
				limit = tt.limit
			}
			res = plugin.ToolFail(core.CodeToolTimeout, fmt.Sprintf("the tool did not finish within %s", limit), "")
		}
	}
	if res.OK {
		_ = o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolCompleted, Payload: toolCompletedPayload(call.CallID, call.Tool, jsonOrNull(res.Output))}, nil, call.CallID)
	} else {
		te := res.Error
		if te == nil {
			te = &plugin.ToolError{Code: core.CodeToolUnavailable, Message: "tool failed without an error"}
			res.Error = te
		}
		_ = o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolFailed, Diagnostics: te.Diagnostics},
			toolFailed{ErrorCode: te.Code, ErrorMessage: te.Message, Field: te.Field, Tool: call.Tool, CallID: call.CallID}, call.CallID)
	}
	if code, _ := ar.failure(); code == core.CodeToolpackCrashed {
		// The run is being failed; tell the engine its call broke.
		return res, callErr
	}
	return res, nil
}

// toolTimeout is the cause of a tool call's deadline, carrying the limit
// that applied (the host's or the toolpack's own).
type toolTimeout struct{ limit time.Duration }

func (t toolTimeout) Error() string { return fmt.Sprintf("tool call exceeded %s", t.limit) }

// Is makes a timeout cause match context.DeadlineExceeded.
func (toolTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// jsonOrNull is b when it is JSON (a tool's output, an engine's tool
// input), else null: what goes into an event must be JSON.
func jsonOrNull(b []byte) json.RawMessage {
	if len(b) == 0 || !core.ValidJSON(b) {
		return json.RawMessage("null")
	}
	return b
}

// offTools are tools a shipped toolpack has but does not offer unless the
// operator turns them on; a call to one says how, rather than only that the
// tool is unknown.
var offTools = map[string]string{
	"coding_agent_write_file": "the legacy whole-file write is off on this host; use coding_agent_apply_patch, " +
		"or start the host with APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE=1 (or legacy_write_file = true in the patch toolpack's config block)",
}

// dispatchTool returns a domain result, or an error when the call could not
// be made (toolpack unreachable, cancelled, timed out).
func (o *Orchestrator) dispatchTool(ctx context.Context, ar *activeRun, call engine.ToolCall) (plugin.ToolResult, error) {
	var route pluginmgr.ToolRoute
	client, h, err := awaitPlugin(ctx, func() (*toolpack.Client, pluginmgr.Handle, error) {
		c, r, h, err := o.plugins.Tool(call.Tool)
		route = r
		return c, h, err
	})
	if err != nil {
		code, msg := core.CodeToolUnknown, err.Error()
		if route.Toolpack != "" {
			code = core.CodeToolUnavailable
		} else if hint, ok := offTools[call.Tool]; ok {
			msg += ": " + hint
		}
		return plugin.ToolFail(code, msg, "tool"), nil
	}
	// Shape and schema first: a call that cannot run must not cost the user
	// a permission prompt.
	input, notes, te := o.guard.Check(route.Spec, call.Input)
	if te != nil {
		return plugin.ToolResult{Error: te}, nil
	}
	if len(notes) > 0 {
		o.log.Debug("tool input normalised", "run", ar.run.ID, "tool", call.Tool, "repairs", notes)
	}
	call.Input = input
	switch route.Permission {
	case plugin.PermissionDeny:
		return plugin.ToolFail(core.CodeToolPermissionDenied, fmt.Sprintf("tool %s is denied by policy", call.Tool), ""), nil
	case plugin.PermissionAsk:
		d, err := o.askPermission(ctx, ar, engine.PermissionRequest{Action: call.Tool, Title: "Allow " + call.Tool + "?", Details: call.Input})
		if err != nil {
			return plugin.ToolResult{}, err
		}
		if !d.Allow {
			msg := "the user denied " + call.Tool
			if reason := strings.TrimSpace(d.Reason); reason != "" {
				msg += ": " + reason
			}
			return plugin.ToolFail(core.CodeToolPermissionDenied, msg, ""), nil
		}
	}

	// The call ends when the engine's call ends, when the run is cancelled
	// (even if the engine ignores that) or at the tool timeout.
	timeout := o.opts.ToolTimeout
	if route.Timeout > 0 {
		timeout = route.Timeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, toolTimeout{timeout})
	defer cancel()
	stop := context.AfterFunc(ar.ctx, cancel)
	defer stop()
	// Registered, not watched by a goroutine of the call's own: a call
	// would otherwise start one and wake it again at its end.
	stopOnCancel := context.AfterFunc(ar.cancelled, cancel)
	defer stopOnCancel()

	ar.mu.Lock()
	ar.toolpacks[route.Toolpack]++
	ref := ar.sandboxRefLocked()
	ar.mu.Unlock()
	defer func() {
		ar.mu.Lock()
		ar.toolpacks[route.Toolpack]--
		ar.mu.Unlock()
	}()
	if ref == nil {
		return plugin.ToolFail(core.CodeToolUnavailable, "the run has no sandbox", ""), nil
	}
	wsID := o.lend(ar.run.ID, ref)
	defer o.revoke(wsID)
	tc := toolpack.Call{RunID: ar.run.ID, CallID: call.CallID, Tool: call.Tool, Input: call.Input}
	var res plugin.ToolResult
	if direct, done, ok := ref.direct(ctx); ok {
		res, err = client.CallDirect(ctx, tc, wsID, direct)
		done()
	} else {
		res, err = client.Call(ctx, tc, wsID)
	}
	if err != nil {
		// Our own deadline: report it with the limit that applied.
		var tt toolTimeout
		if errors.As(context.Cause(ctx), &tt) {
			return plugin.ToolResult{}, tt
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && h.Crashed(o.opts.CrashGrace) {
		ar.abort(core.CodeToolpackCrashed, fmt.Sprintf("toolpack plugin %q crashed during %s", route.Toolpack, call.Tool))
		return plugin.ToolResult{}, err
	}
	return res, err
}

// ToolCallsInFlight reports how many tool calls of a run are being served by
// toolpacks right now (a sandbox with calls in flight is in use).
func (o *Orchestrator) ToolCallsInFlight(runID string) int {
	ar, err := o.lookup(runID)
	if err != nil {
		return 0
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	n := 0
	for _, c := range ar.toolpacks {
		n += c
	}
	return n
}
