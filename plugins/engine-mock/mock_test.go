package mock

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scripts make the mock perform each conformance scenario.
var scripts = map[enginetest.Scenario]string{
	enginetest.Text:        "say hello world",
	enginetest.Tool:        "tool conformance_echo {\"text\":\"ping\"}\nsay done",
	enginetest.ToolFailure: "tool conformance_fail {}\nsay carried on",
	enginetest.Permission:  "ask deploy Deploy?\nsay deployed",
	enginetest.Fail:        "fail MOCK_FAILED on purpose",
	enginetest.Cancel:      "say working\nsleep 60s\nsay never",
	enginetest.State:       "checkpoint\nsay saved",
}

func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, services engine.HostServices) *engine.Client {
		return plugintest.Engine(t, New(Options{}), nil, services)
	}, func(s enginetest.Scenario) (engine.RunRequest, bool) {
		script, ok := scripts[s]
		return engine.RunRequest{Prompt: script}, ok
	})
}

// run executes a prompt in-process and returns the result and timeline.
func run(t *testing.T, rec *enginetest.Recorder, req engine.RunRequest) (engine.Result, []string) {
	t.Helper()
	c := plugintest.Engine(t, New(Options{}), nil, rec)
	if req.RunID == "" {
		req.RunID = t.Name()
	}
	res, err := c.Run(context.Background(), req, rec.OnEvent(req.RunID))
	require.NoError(t, err)
	rec.Finish(req.RunID, res)
	return res, rec.Timeline(req.RunID)
}

func TestCommands(t *testing.T) {
	cases := []struct {
		name, prompt string
		status       string
		code         string
		output       string
		timeline     []string
	}{
		{"echo for plain prompts", "make it blue", engine.StatusCompleted, "", "Mock engine received: make it blue",
			[]string{"assistant.delta", "assistant.delta", "assistant.delta", "assistant.delta", "assistant.delta", "assistant.delta", "run.completed"}},
		{"say keeps spacing", "say a  b", engine.StatusCompleted, "", "a  b", []string{"assistant.delta", "assistant.delta", "run.completed"}},
		{"deltas", "deltas 3", engine.StatusCompleted, "", "xxx", []string{"assistant.delta", "assistant.delta", "assistant.delta", "run.completed"}},
		{"status", "status building compiling\nsay ok", engine.StatusCompleted, "", "ok", []string{"run.status", "assistant.delta", "run.completed"}},
		{"tools repeats", "tools 2 conformance_echo {}", engine.StatusCompleted, "", "",
			[]string{"tool.started", "tool.completed", "tool.started", "tool.completed", "run.completed"}},
		{"comments and blanks", "# plan\n\nsay hi", engine.StatusCompleted, "", "hi", []string{"assistant.delta", "run.completed"}},
		{"unknown command", "say hi\nfrobnicate", engine.StatusFailed, "MOCK_SCRIPT_INVALID", "", []string{"run.failed"}},
		{"bad tool json", "tool x {nope", engine.StatusFailed, "MOCK_SCRIPT_INVALID", "", []string{"run.failed"}},
		{"crash disabled in-process", "crash", engine.StatusFailed, "MOCK_CRASH_DISABLED", "", []string{"run.failed"}},
		{"fail", "say a\nfail X_CODE the reason", engine.StatusFailed, "X_CODE", "", []string{"assistant.delta", "run.failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, timeline := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: tc.prompt})
			assert.Equal(t, tc.status, res.Status, res.ErrorMessage)
			assert.Equal(t, tc.code, res.ErrorCode)
			if tc.status == engine.StatusCompleted {
				assert.Equal(t, tc.output, res.OutputText)
			}
			assert.Equal(t, tc.timeline, timeline)
		})
	}
}

func TestDeniedPermissionIsSaid(t *testing.T) {
	rec := enginetest.NewRecorder()
	rec.Decision = engine.PermissionDecision{Allow: false, Reason: "not today"}
	res, _ := run(t, rec, engine.RunRequest{Prompt: "ask deploy Deploy?\nsay after"})
	assert.Equal(t, "permission denied: not todayafter", res.OutputText)
}

func TestCheckpointResumesAfterIt(t *testing.T) {
	rec := enginetest.NewRecorder()
	script := "say one\ncheckpoint\nsay two"
	res, _ := run(t, rec, engine.RunRequest{RunID: "r1", Prompt: script})
	require.Equal(t, "onetwo", res.OutputText)
	state := rec.State("r1")
	require.JSONEq(t, `{"next_line":3}`, string(state))
	res, _ = run(t, rec, engine.RunRequest{RunID: "r2", Prompt: script, State: state})
	assert.Equal(t, "two", res.OutputText, "a resumed run continues after its checkpoint")
}

func TestHangIgnoresCancel(t *testing.T) {
	rec := enginetest.NewRecorder()
	c := plugintest.Engine(t, New(Options{}), nil, rec)
	done := make(chan engine.Result, 1)
	go func() {
		res, err := c.Run(context.Background(), engine.RunRequest{RunID: "h", Prompt: "say go\nhang 300ms"}, rec.OnEvent("h"))
		assert.NoError(t, err)
		done <- res
	}()
	require.NoError(t, rec.WaitFor(context.Background(), "h", "assistant.delta"))
	found, err := c.Cancel(context.Background(), "h", "test")
	require.NoError(t, err)
	require.True(t, found)
	res := <-done
	assert.Equal(t, engine.StatusFailed, res.Status)
	assert.Equal(t, "MOCK_CANCEL_IGNORED", res.ErrorCode)
}

func FuzzParseScript(f *testing.F) {
	for _, s := range scripts {
		f.Add(s)
	}
	f.Add("tools 3 x {}\nsleep 1ms\nhang 1ms\nstatus a b")
	f.Add("say\n\ndeltas -1")
	f.Fuzz(func(t *testing.T, prompt string) {
		ops, isScript, err := parse(prompt)
		if err != nil || !isScript {
			return
		}
		for _, o := range ops {
			if !commands[o.name] {
				t.Fatalf("parsed an unknown command %q", o.name)
			}
			if (o.name == "tool" || o.name == "tools") && o.tool == "" {
				t.Fatalf("tool op without a tool: %+v", o)
			}
		}
	})
}
