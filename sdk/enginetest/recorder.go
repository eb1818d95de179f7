// Package enginetest is the engine conformance kit. An engine author calls
// Run from a test with a function that makes their engine perform each
// scenario; the kit checks the event skeleton against the mock engine's (the
// master sequence), tool start/finish pairing, exactly one terminal event
// last, confirmed cancellation and coded failures.
//
// Recorder, Skeleton, Canonical and Validate are exported so that the host's
// own tests can hold real runs to the same rules.
package enginetest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Tools the Recorder serves.
const (
	// EchoTool answers {"echo": <input>}.
	EchoTool = "conformance_echo"
	// FailTool always fails with CodeToolFailed.
	FailTool = "conformance_fail"
	// GuardedTool answers {"done": true} once the permission the Recorder
	// asks around it (as the host does for a tool set to "ask") is allowed;
	// denied, it fails with CodePermissionDenied.
	GuardedTool = "conformance_guarded"
	// CodePermissionDenied is GuardedTool's error code when denied.
	CodePermissionDenied = "PERMISSION_DENIED"
	// CodeToolFailed is FailTool's error code.
	CodeToolFailed = "CONFORMANCE_TOOL_FAILED"
	// CodeToolUnknown answers a call to any other tool.
	CodeToolUnknown = "TOOL_UNKNOWN"
)

// Timeline entries, named like the host's events. The sdk cannot import the
// host's core package, so the names are repeated here; the host's tests
// compare the two.
const (
	EventAssistantDelta      = "assistant.delta"
	EventRunStatus           = "run.status"
	EventToolStarted         = "tool.started"
	EventToolCompleted       = "tool.completed"
	EventToolFailed          = "tool.failed"
	EventPermissionRequested = "permission.requested"
	EventPermissionResolved  = "permission.resolved"
	EventRunPaused           = "run.paused"
	EventRunResumed          = "run.resumed"
	EventRunCompleted        = "run.completed"
	EventRunFailed           = "run.failed"
	EventRunCancelled        = "run.cancelled"
)

// Option configures a Recorder (and, through Run, the kit's Recorder).
type Option func(*Recorder)

// WithWorkspaces lends workspaces to the engine under test: the Recorder
// resolves workspace ids through resolve. Without it every lookup answers
// plugin.CodeNotFound, because the kit itself has no working copy to lend.
func WithWorkspaces(resolve workspace.Resolver) Option {
	return func(r *Recorder) { r.workspaces = resolve }
}

// WithDecision sets how the Recorder answers permission requests (the
// default allows them).
func WithDecision(d engine.PermissionDecision) Option {
	return func(r *Recorder) { r.decision = d }
}

// Recorder is a fake host (engine.HostServices) that records each run's
// timeline by the same rules as the real host: it emits tool.started and
// tool.completed/failed around tool calls, permission.requested, run.paused,
// permission.resolved and run.resumed around permissions, and the terminal
// event from the result. It is safe for concurrent runs; timelines are kept
// per run id.
type Recorder struct {
	workspaces workspace.Resolver

	mu        sync.Mutex
	decision  engine.PermissionDecision
	timelines map[string][]string
	states    map[string][]byte
	calls     map[string][]engine.ToolCall
	// changed is closed and replaced on every new entry, so WaitFor can
	// block without polling.
	changed chan struct{}
}

var _ engine.HostServices = (*Recorder)(nil)

// NewRecorder returns a Recorder that allows every permission and lends no
// workspace unless opts say otherwise.
func NewRecorder(opts ...Option) *Recorder {
	r := &Recorder{
		decision:  engine.PermissionDecision{Allow: true},
		timelines: map[string][]string{},
		states:    map[string][]byte{},
		calls:     map[string][]engine.ToolCall{},
		changed:   make(chan struct{}),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// SetDecision changes how later permission requests are answered.
func (r *Recorder) SetDecision(d engine.PermissionDecision) {
	r.mu.Lock()
	r.decision = d
	r.mu.Unlock()
}

func (r *Recorder) add(runID string, events ...string) {
	r.mu.Lock()
	r.timelines[runID] = append(r.timelines[runID], events...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Run runs req on c and records its events and its end, the way the host's
// orchestrator does. The error is Client.Run's: the run then has no
// terminal entry, as the Recorder never saw a result.
func (r *Recorder) Run(ctx context.Context, c *engine.Client, req engine.RunRequest) (engine.Result, error) {
	res, err := c.Run(ctx, req, r.OnEvent(req.RunID))
	if err != nil {
		return res, err
	}
	r.Finish(req.RunID, res)
	return res, nil
}

// OnEvent records the events a client receives; pass it as the onEvent of
// Client.Run. Reasoning and usage are not part of the timeline.
func (r *Recorder) OnEvent(runID string) func(engine.Event) error {
	return func(ev engine.Event) error {
		switch ev.Kind {
		case engine.KindAssistantDelta:
			r.add(runID, EventAssistantDelta)
		case engine.KindStatus:
			r.add(runID, EventRunStatus)
		}
		return nil
	}
}

// Finish records the entry a result ends with: the terminal event, or
// run.paused for a paused run (which is not terminal).
func (r *Recorder) Finish(runID string, res engine.Result) {
	switch res.Status {
	case engine.StatusCompleted:
		r.add(runID, EventRunCompleted)
	case engine.StatusFailed:
		r.add(runID, EventRunFailed)
	case engine.StatusCancelled:
		r.add(runID, EventRunCancelled)
	case engine.StatusPaused:
		r.add(runID, EventRunPaused)
	default:
		// Kept visible so a skeleton comparison shows the bad status.
		r.add(runID, "invalid-status:"+res.Status)
	}
}

// Timeline returns a copy of a run's recorded entries.
func (r *Recorder) Timeline(runID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.timelines[runID]...)
}

// State returns the last state a run saved, or nil.
func (r *Recorder) State(runID string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.states[runID]...)
}

// ToolCalls returns the tool calls a run made, in order.
func (r *Recorder) ToolCalls(runID string) []engine.ToolCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.ToolCall(nil), r.calls[runID]...)
}

// WaitFor blocks until the run's timeline contains event or ctx ends.
func (r *Recorder) WaitFor(ctx context.Context, runID, event string) error {
	for {
		r.mu.Lock()
		ch := r.changed
		for _, e := range r.timelines[runID] {
			if e == event {
				r.mu.Unlock()
				return nil
			}
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// CallTool serves EchoTool, FailTool and GuardedTool; any other tool fails
// with CodeToolUnknown. Failures are results, never errors, like the real
// host's.
func (r *Recorder) CallTool(_ context.Context, runID string, call engine.ToolCall) (plugin.ToolResult, error) {
	r.mu.Lock()
	r.calls[runID] = append(r.calls[runID], call)
	r.mu.Unlock()
	r.add(runID, EventToolStarted)

	var res plugin.ToolResult
	switch call.Tool {
	case EchoTool:
		var in any
		if err := json.Unmarshal(call.Input, &in); err != nil {
			res = plugin.ToolFail("TOOL_INPUT_INVALID", "input is not JSON: "+err.Error(), "input")
		} else {
			res = plugin.ToolOK(map[string]any{"echo": in})
		}
	case FailTool:
		res = plugin.ToolFail(CodeToolFailed, "this tool always fails", "")
	case GuardedTool:
		d, _ := r.RequestPermission(context.Background(), runID, engine.PermissionRequest{Action: call.Tool, Title: "Allow " + call.Tool + "?", Details: call.Input})
		if d.Allow {
			res = plugin.ToolOK(map[string]any{"done": true})
		} else {
			res = plugin.ToolFail(CodePermissionDenied, "the user denied "+call.Tool+": "+d.Reason, "")
		}
	default:
		res = plugin.ToolFail(CodeToolUnknown, "the conformance host has no tool "+call.Tool, "tool")
	}

	if res.OK {
		r.add(runID, EventToolCompleted)
	} else {
		r.add(runID, EventToolFailed)
	}
	return res, nil
}

// SaveState keeps the run's state; it adds nothing to the timeline.
func (r *Recorder) SaveState(_ context.Context, runID string, state []byte) error {
	r.mu.Lock()
	r.states[runID] = append([]byte(nil), state...)
	r.mu.Unlock()
	return nil
}

// RequestPermission records the pause around the decision and answers with
// the configured decision at once (the real host waits for a user).
func (r *Recorder) RequestPermission(_ context.Context, runID string, _ engine.PermissionRequest) (engine.PermissionDecision, error) {
	r.add(runID, EventPermissionRequested, EventRunPaused)
	r.mu.Lock()
	d := r.decision
	r.mu.Unlock()
	r.add(runID, EventPermissionResolved, EventRunResumed)
	return d, nil
}

// Workspace resolves through the WithWorkspaces resolver, or answers
// plugin.CodeNotFound when there is none.
func (r *Recorder) Workspace(ctx context.Context, id string) (workspace.Workspace, error) {
	if r.workspaces == nil {
		return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "the conformance host lends no workspace (see enginetest.WithWorkspaces)")
	}
	return r.workspaces(ctx, id)
}
