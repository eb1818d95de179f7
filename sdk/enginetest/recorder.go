// Package enginetest is the engine conformance kit. An engine author calls
// Run from a test with a function that makes their engine perform each
// scenario; the kit checks the event skeleton against the mock engine's (the
// master sequence), tool start/finish pairing, exactly one terminal event
// last, confirmed cancellation and coded failures.
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
	// CodeToolFailed is FailTool's error code.
	CodeToolFailed = "CONFORMANCE_TOOL_FAILED"
)

// Recorder is a fake host (engine.HostServices) that records each run's
// timeline by the same rules as the real host: it emits tool.started and
// tool.completed/failed around tool calls, permission.requested, run.paused,
// permission.resolved and run.resumed around permissions, and the terminal
// event from the result.
type Recorder struct {
	// Decision answers permission requests (default: allow).
	Decision engine.PermissionDecision
	// Workspaces resolves workspace ids; nil means no workspace.
	Workspaces workspace.Resolver

	mu        sync.Mutex
	timelines map[string][]string
	states    map[string][]byte
	changed   chan struct{}
}

// NewRecorder returns a Recorder that allows every permission.
func NewRecorder() *Recorder {
	return &Recorder{
		Decision:  engine.PermissionDecision{Allow: true},
		timelines: map[string][]string{}, states: map[string][]byte{}, changed: make(chan struct{}),
	}
}

var _ engine.HostServices = (*Recorder)(nil)

func (r *Recorder) add(runID string, events ...string) {
	r.mu.Lock()
	r.timelines[runID] = append(r.timelines[runID], events...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// OnEvent records an engine event; pass it as the onEvent of Client.Run.
func (r *Recorder) OnEvent(runID string) func(engine.Event) error {
	return func(ev engine.Event) error {
		switch ev.Kind {
		case engine.KindAssistantDelta:
			r.add(runID, "assistant.delta")
		case engine.KindStatus:
			r.add(runID, "run.status")
		}
		return nil
	}
}

// Finish records the terminal (or pause) event of a result.
func (r *Recorder) Finish(runID string, res engine.Result) {
	switch res.Status {
	case engine.StatusCompleted:
		r.add(runID, "run.completed")
	case engine.StatusFailed:
		r.add(runID, "run.failed")
	case engine.StatusCancelled:
		r.add(runID, "run.cancelled")
	case engine.StatusPaused:
		r.add(runID, "run.paused")
	default:
		r.add(runID, "invalid-status:"+res.Status)
	}
}

// Timeline returns a copy of a run's recorded events.
func (r *Recorder) Timeline(runID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.timelines[runID]...)
}

// State returns the last state a run saved.
func (r *Recorder) State(runID string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states[runID]
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

// CallTool serves EchoTool and FailTool.
func (r *Recorder) CallTool(_ context.Context, runID string, call engine.ToolCall) (plugin.ToolResult, error) {
	r.add(runID, "tool.started")
	var res plugin.ToolResult
	switch call.Tool {
	case EchoTool:
		var in any
		if err := json.Unmarshal(call.Input, &in); err != nil {
			res = plugin.ToolFail("TOOL_INPUT_INVALID", err.Error(), "")
		} else {
			res = plugin.ToolOK(map[string]any{"echo": in})
		}
	case FailTool:
		res = plugin.ToolFail(CodeToolFailed, "this tool always fails", "")
	default:
		res = plugin.ToolFail("TOOL_UNKNOWN", "no tool "+call.Tool, "tool")
	}
	if res.OK {
		r.add(runID, "tool.completed")
	} else {
		r.add(runID, "tool.failed")
	}
	return res, nil
}

// SaveState keeps the run's state.
func (r *Recorder) SaveState(_ context.Context, runID string, state []byte) error {
	r.mu.Lock()
	r.states[runID] = append([]byte(nil), state...)
	r.mu.Unlock()
	return nil
}

// RequestPermission answers with Decision.
func (r *Recorder) RequestPermission(_ context.Context, runID string, _ engine.PermissionRequest) (engine.PermissionDecision, error) {
	r.add(runID, "permission.requested", "run.paused")
	d := r.Decision
	r.add(runID, "permission.resolved", "run.resumed")
	return d, nil
}

// Workspace resolves through Workspaces.
func (r *Recorder) Workspace(ctx context.Context, id string) (workspace.Workspace, error) {
	if r.Workspaces == nil {
		return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "the conformance host lends no workspace")
	}
	return r.Workspaces(ctx, id)
}
