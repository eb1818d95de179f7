package enginetest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEngine performs each scenario in its own words (more deltas and status
// events than the mock), unless broken names a rule to break. guarded
// goes through the permission scenario by calling the host-guarded tool
// instead of asking on its own.
type fakeEngine struct {
	broken  string
	guarded bool
}

func (f fakeEngine) Info() plugin.Info {
	info := plugin.Info{Name: "fake", Kind: plugin.KindEngine, Version: "1.0.0", APIVersion: plugin.APIVersion}
	if f.broken == "info" {
		info.APIVersion = 99
	}
	return info
}

func (f fakeEngine) Run(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error) {
	say := func(words ...string) error {
		_ = host.Emit(engine.Status("thinking", ""))
		for _, w := range words {
			if err := host.Emit(engine.Delta(w)); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch enginetest.Scenario(req.Prompt) {
	case enginetest.Text:
		if f.broken == "silent" {
			return engine.Completed(""), nil
		}
		err = say("hello ", "there")
	case enginetest.Tool:
		tool := enginetest.EchoTool
		if f.broken == "wrong_tool" {
			tool = "other"
		}
		if _, err = host.CallTool(ctx, engine.ToolCall{CallID: "1", Tool: tool, Input: []byte(`{"text": "ping"}`)}); err == nil {
			err = say("pong")
		}
	case enginetest.ToolFailure:
		if _, err = host.CallTool(ctx, engine.ToolCall{CallID: "1", Tool: enginetest.FailTool, Input: []byte(`{}`)}); err == nil {
			err = say("carried ", "on")
		}
	case enginetest.Permission:
		if f.guarded {
			var res plugin.ToolResult
			res, err = host.CallTool(ctx, engine.ToolCall{CallID: "1", Tool: enginetest.GuardedTool, Input: []byte(`{}`)})
			if err == nil && res.OK {
				err = say("allowed")
			}
			break
		}
		if _, err = host.RequestPermission(ctx, engine.PermissionRequest{Action: "deploy"}); err == nil {
			err = say("allowed")
		}
	case enginetest.Fail:
		code := "FAKE_FAILED"
		if f.broken == "uncoded" {
			code = ""
		}
		return engine.Failed(code, "on purpose"), nil
	case enginetest.Cancel:
		if err = say("working"); err != nil {
			return engine.Result{}, err
		}
		if f.broken == "quick_cancel" {
			return engine.Completed("working"), nil
		}
		<-ctx.Done()
		return engine.Result{}, ctx.Err()
	case enginetest.State:
		if f.broken != "stateless" {
			err = host.SaveState(ctx, []byte(`{"step":1}`))
		}
		if err == nil {
			err = say("saved")
		}
	}
	if err != nil {
		return engine.Result{}, err
	}
	return engine.Completed("done"), nil
}

func connectFake(f fakeEngine) enginetest.Connect {
	return func(t *testing.T, services engine.HostServices) *engine.Client {
		return plugintest.Engine(t, f, nil, services)
	}
}

func prepareAll(s enginetest.Scenario) (engine.RunRequest, bool) {
	return engine.RunRequest{Prompt: string(s)}, true
}

func TestKitPassesAConformingEngine(t *testing.T) {
	enginetest.Run(t, connectFake(fakeEngine{}), prepareAll)
}

// An engine whose permissions are the host's, around tool calls (the
// native engine's way), passes the permission scenario through the
// guarded tool.
func TestKitAcceptsHostAskedPermission(t *testing.T) {
	enginetest.Run(t, connectFake(fakeEngine{guarded: true}), prepareAll)
}

func TestKitAcceptsFixedRunIDs(t *testing.T) {
	enginetest.Run(t, connectFake(fakeEngine{}), func(s enginetest.Scenario) (engine.RunRequest, bool) {
		return engine.RunRequest{RunID: "author-" + string(s), Prompt: string(s)}, s != enginetest.State
	})
}

// brokenEnv tells TestKitHelperProcess which rule the fake engine breaks.
const brokenEnv = "ENGINETEST_BROKEN"

// TestKitHelperProcess runs the kit against a broken engine when started by
// TestKitCatchesBrokenEngines; the kit failing must fail this process.
func TestKitHelperProcess(t *testing.T) {
	broken := os.Getenv(brokenEnv)
	if broken == "" {
		t.Skip("helper for TestKitCatchesBrokenEngines")
	}
	prepare := prepareAll
	if broken == "declines_cancel" {
		// An engine that ignores its context declines the cancel scenario.
		prepare = func(s enginetest.Scenario) (engine.RunRequest, bool) {
			return engine.RunRequest{Prompt: string(s)}, s != enginetest.Cancel
		}
	}
	enginetest.Run(t, connectFake(fakeEngine{broken: broken}), prepare)
}

// TestKitCatchesBrokenEngines runs the kit in a child test process for each
// broken engine (a kit failure cannot be observed from inside the same test)
// and checks that it fails, saying why.
func TestKitCatchesBrokenEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child test process per case")
	}
	cases := map[string]string{
		"info":       "APIVersion = 99",
		"silent":     "skeleton of scenario \"text\" (run conformance-text-1) differs",
		"wrong_tool": "must call conformance_echo once",
		"uncoded":    "must carry an error code",
		// Which diagnosis the kit gives depends on whether the early result
		// beats the cancel; what matters is that the cancel scenario fails.
		"quick_cancel": "--- FAIL: TestKitHelperProcess/cancel",
		"stateless":    "must save non-empty state",
		// Declining a mandatory scenario is no way out of it.
		"declines_cancel": "declines scenario \"cancel\", which every engine must pass",
	}
	for broken, want := range cases {
		t.Run(broken, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKitHelperProcess$", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+broken)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the kit passed an engine that breaks %q:\n%s", broken, out)
			matched := false
			for _, w := range strings.Split(want, "|") {
				matched = matched || strings.Contains(string(out), w)
			}
			assert.True(t, matched, "the kit failed %q without saying %q:\n%s", broken, want, out)
		})
	}
}
