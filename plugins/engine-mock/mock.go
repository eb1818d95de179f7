// Package mock is the deterministic engine scripted by its prompt. It is the
// master event sequence: every other engine must produce the same event
// skeleton for the same task (sdk/enginetest). See README.md for the script
// commands.
package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
)

// Options configure the mock.
type Options struct {
	// AllowCrash lets the `crash` command exit the process. Only the plugin
	// binary sets it: in-process it would kill the test.
	AllowCrash bool
	// Name replaces "mock" as the plugin's name, so that one binary can be
	// configured twice (tests of engine selection).
	Name string
	// Requires is the CapabilityRequires value the mock reports: the
	// sandbox features it claims to need (tests of runtime checks).
	Requires string
}

// Engine is the mock engine.
type Engine struct{ opts Options }

// New returns a mock engine.
func New(opts Options) *Engine { return &Engine{opts: opts} }

// Info identifies the plugin.
func (e *Engine) Info() plugin.Info {
	info := plugin.Info{Name: "mock", Kind: plugin.KindEngine, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "deterministic engine scripted by the prompt"}
	if e.opts.Name != "" {
		info.Name = e.opts.Name
	}
	if e.opts.Requires != "" {
		info.Capabilities = map[string]string{plugin.CapabilityRequires: e.opts.Requires}
	}
	return info
}

type checkpoint struct {
	NextLine int `json:"next_line"`
}

// Run executes the prompt's script.
func (e *Engine) Run(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error) {
	ops, isScript, err := parse(req.Prompt)
	if err != nil {
		return engine.Failed("MOCK_SCRIPT_INVALID", err.Error()), nil
	}
	if !isScript {
		ops = []op{{name: "say", text: "Mock engine received: " + req.Prompt}}
	}
	resumeAt := 0
	if len(req.State) > 0 {
		var cp checkpoint
		if err := json.Unmarshal(req.State, &cp); err == nil {
			resumeAt = cp.NextLine
		}
	}
	var said strings.Builder
	calls := 0
	say := func(text string) error {
		for _, w := range words(text) {
			if err := host.Emit(engine.Delta(w)); err != nil {
				return err
			}
		}
		said.WriteString(text)
		return nil
	}
	callTool := func(name string, input json.RawMessage) (engine.Result, bool) {
		calls++
		_, err := host.CallTool(ctx, engine.ToolCall{CallID: fmt.Sprintf("call-%d", calls), Tool: name, Input: input})
		if err == nil {
			return engine.Result{}, true
		}
		if ctx.Err() != nil {
			return engine.Cancelled(), false
		}
		return engine.Failed("MOCK_TOOL_CALL_ERROR", err.Error()), false
	}

	for _, o := range ops {
		if o.line > 0 && o.line < resumeAt {
			continue
		}
		// hang plays an engine that does not listen: a cancel that
		// arrived just before it (after the delta a client waits for,
		// say) is not seen either, or whether the cancel counts as
		// confirmed would depend on which process the scheduler ran first.
		if ctx.Err() != nil && o.name != "hang" {
			return engine.Cancelled(), nil
		}
		switch o.name {
		case "say":
			if err := say(o.text); err != nil {
				return engine.Result{}, err
			}
		case "deltas":
			for i := 0; i < o.n; i++ {
				// Checked per delta as well: a large count must not delay
				// a cancel until the whole batch is out.
				if ctx.Err() != nil {
					return engine.Cancelled(), nil
				}
				if err := host.Emit(engine.Delta("x")); err != nil {
					return engine.Result{}, err
				}
			}
			said.WriteString(strings.Repeat("x", o.n))
		case "history":
			// Says what history the run was given: count, then roles.
			roles := make([]string, len(req.History))
			for i, m := range req.History {
				roles[i] = m.Role
			}
			if err := say(fmt.Sprintf("history=%d %s", len(req.History), strings.Join(roles, ","))); err != nil {
				return engine.Result{}, err
			}
		case "stamps":
			// Each delta carries its emit time (unix ns) so a client on the
			// same machine can measure delivery latency end to end.
			for i := 0; i < o.n; i++ {
				if err := host.Emit(engine.Delta(strconv.FormatInt(time.Now().UnixNano(), 10) + " ")); err != nil {
					return engine.Result{}, err
				}
			}
		case "tool":
			if res, ok := callTool(o.tool, o.json); !ok {
				return res, nil
			}
		case "tools":
			for i := 0; i < o.n; i++ {
				// A host may answer calls without looking at ctx, so a
				// cancel is checked between calls too.
				if ctx.Err() != nil {
					return engine.Cancelled(), nil
				}
				if res, ok := callTool(o.tool, o.json); !ok {
					return res, nil
				}
			}
		case "sleep":
			t := time.NewTimer(o.dur)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return engine.Cancelled(), nil
			}
		case "hang":
			time.Sleep(o.dur)
		case "fail":
			return engine.Failed(o.code, o.text), nil
		case "ask":
			d, err := host.RequestPermission(ctx, engine.PermissionRequest{Action: o.code, Title: o.text})
			if err != nil {
				if ctx.Err() != nil {
					return engine.Cancelled(), nil
				}
				return engine.Failed("MOCK_PERMISSION_ERROR", err.Error()), nil
			}
			if !d.Allow {
				msg := "permission denied"
				if d.Reason != "" {
					msg += ": " + d.Reason
				}
				if err := say(msg); err != nil {
					return engine.Result{}, err
				}
			}
		case "report":
			// A tool the engine ran itself, as an agent server reports it.
			ev := engine.ToolStarted(o.text, o.tool, o.json)
			switch o.code {
			case "completed":
				ev = engine.ToolCompleted(o.text, o.tool, o.json)
			case "failed":
				ev = engine.ToolFailed(o.text, o.tool, "MOCK_TOOL_FAILED", "reported failed", nil)
			}
			if err := host.Emit(ev); err != nil {
				return engine.Result{}, err
			}
		case "status":
			if err := host.Emit(engine.Status(o.code, o.text)); err != nil {
				return engine.Result{}, err
			}
		case "checkpoint":
			b, _ := json.Marshal(checkpoint{NextLine: o.line + 1})
			if err := host.SaveState(ctx, b); err != nil {
				if ctx.Err() != nil {
					return engine.Cancelled(), nil
				}
				return engine.Failed("MOCK_STATE_ERROR", err.Error()), nil
			}
		case "crash":
			if !e.opts.AllowCrash {
				return engine.Failed("MOCK_CRASH_DISABLED", "crash is only allowed in the plugin binary"), nil
			}
			os.Exit(3)
		}
	}
	if ctx.Err() != nil {
		// The script ran to its end despite a cancel (`hang`): that is not a
		// confirmed cancellation.
		return engine.Failed("MOCK_CANCEL_IGNORED", "the script finished after a cancel was requested"), nil
	}
	return engine.Completed(said.String()), nil
}
