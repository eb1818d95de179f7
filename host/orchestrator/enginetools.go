package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/engine"
)

// Tool calls an engine runs itself (an agent server's own tools) reach the
// timeline through engine events rather than CallTool. The engine reports
// what its server saw, and a server's stream can repeat or skip a state, so
// the host holds the invariant: each call is started exactly once and
// finished exactly once, started before it finishes.

const (
	engineCallStarted = 1
	engineCallDone    = 2
)

func (o *Orchestrator) onEngineTool(ctx context.Context, ar *activeRun, ev engine.Event) error {
	if ev.CallID == "" || ev.Tool == "" {
		o.log.Warn("engine tool event without a call id or tool dropped", "run", ar.run.ID, "kind", ev.Kind)
		return nil
	}
	ar.mu.Lock()
	state := ar.engineCalls[ev.CallID]
	switch {
	case ev.Kind == engine.KindToolFinished:
		ar.engineCalls[ev.CallID] = engineCallDone
	case state == 0:
		ar.engineCalls[ev.CallID] = engineCallStarted
	}
	// The server's tools may have changed files.
	ar.filesDirty = true
	ar.mu.Unlock()

	if state == 0 {
		input := ev.Input
		if ev.Kind == engine.KindToolFinished {
			input = nil
		}
		if err := o.emitToolStarted(ctx, ar, ev.CallID, ev.Tool, jsonOrNull(input)); err != nil {
			return err
		}
	}
	if ev.Kind != engine.KindToolFinished || state == engineCallDone {
		return nil
	}
	if ev.OK {
		return o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolCompleted, Payload: toolCompletedPayload(ev.CallID, ev.Tool, jsonOrNull(ev.Output))},
			nil, ev.CallID)
	}
	code := ev.ErrorCode
	if code == "" {
		code = core.CodeToolUnavailable
	}
	var diag json.RawMessage
	if core.ValidJSON(ev.Diagnostics) {
		diag = ev.Diagnostics
	}
	return o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolFailed, Diagnostics: diag},
		toolFailed{ErrorCode: code, ErrorMessage: ev.ErrorMessage, Tool: ev.Tool, CallID: ev.CallID}, ev.CallID)
}
