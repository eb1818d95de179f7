package mock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugin"
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
	res, err := rec.Run(context.Background(), c, req)
	require.NoError(t, err)
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
	rec := enginetest.NewRecorder(enginetest.WithDecision(engine.PermissionDecision{Allow: false, Reason: "not today"}))
	res, timeline := run(t, rec, engine.RunRequest{Prompt: "ask deploy Deploy?\nsay after"})
	assert.Equal(t, engine.StatusCompleted, res.Status, "a denial is said, not fatal")
	assert.Equal(t, "permission denied: not todayafter", res.OutputText)
	assert.Equal(t, enginetest.Canonical(enginetest.Permission), enginetest.Skeleton(timeline))
}

func TestToolCallsAreNumberedPerRun(t *testing.T) {
	rec := enginetest.NewRecorder()
	c := plugintest.Engine(t, New(Options{}), nil, rec)
	for _, id := range []string{"a", "b"} {
		res, err := rec.Run(context.Background(), c, engine.RunRequest{RunID: id, Prompt: "tool conformance_echo {\"n\":1}\ntools 2 conformance_fail"})
		require.NoError(t, err)
		require.Equal(t, engine.StatusCompleted, res.Status, "failed tool results do not stop the script")
		var ids []string
		for _, call := range rec.ToolCalls(id) {
			ids = append(ids, call.CallID)
		}
		assert.Equal(t, []string{"call-1", "call-2", "call-3"}, ids, "run %s", id)
		assert.JSONEq(t, `{"n":1}`, string(rec.ToolCalls(id)[0].Input))
	}
}

// brokenTools is a host whose tool calls fail in transport, as when the host
// loses the toolpack plugin.
type brokenTools struct{ *enginetest.Recorder }

func (brokenTools) CallTool(context.Context, string, engine.ToolCall) (plugin.ToolResult, error) {
	return plugin.ToolResult{}, errors.New("toolpack went away")
}

func TestToolTransportErrorEndsTheRun(t *testing.T) {
	rec := enginetest.NewRecorder()
	c := plugintest.Engine(t, New(Options{}), nil, brokenTools{rec})
	res, err := rec.Run(context.Background(), c, engine.RunRequest{RunID: "r", Prompt: "tool x {}\nsay never"})
	require.NoError(t, err)
	assert.Equal(t, engine.StatusFailed, res.Status)
	assert.Equal(t, "MOCK_TOOL_CALL_ERROR", res.ErrorCode)
	assert.Contains(t, res.ErrorMessage, "toolpack went away")
	assert.Equal(t, []string{"run.failed"}, rec.Timeline("r"))
}

func TestUnknownCommandNamesTheLine(t *testing.T) {
	res, _ := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "say hi\n\n# note\nfrobnicate now"})
	assert.Equal(t, "MOCK_SCRIPT_INVALID", res.ErrorCode)
	assert.Contains(t, res.ErrorMessage, "line 4")
}

func TestCheckpointResumesAfterIt(t *testing.T) {
	rec := enginetest.NewRecorder()
	script := "say one\ncheckpoint\nsay two"
	res, _ := run(t, rec, engine.RunRequest{RunID: "r1", Prompt: script})
	require.Equal(t, "onetwo", res.OutputText)
	state := rec.State("r1")
	require.JSONEq(t, `{"next_line":3}`, string(state))
	res, timeline := run(t, rec, engine.RunRequest{RunID: "r2", Prompt: script, State: state})
	assert.Equal(t, "two", res.OutputText, "a resumed run continues after its checkpoint")
	assert.Equal(t, []string{"assistant.delta", "run.completed"}, timeline)

	res, _ = run(t, rec, engine.RunRequest{RunID: "r3", Prompt: script, State: []byte("not ours")})
	assert.Equal(t, "onetwo", res.OutputText, "state the mock did not write means start from the top")
}

// cancelAfterFirstDelta runs prompt, cancels it once it has said something
// and returns how it ended.
func cancelAfterFirstDelta(t *testing.T, prompt string) engine.Result {
	t.Helper()
	rec := enginetest.NewRecorder()
	c := plugintest.Engine(t, New(Options{}), nil, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan engine.Result, 1)
	go func() {
		res, err := rec.Run(ctx, c, engine.RunRequest{RunID: "h", Prompt: prompt})
		assert.NoError(t, err)
		done <- res
	}()
	require.NoError(t, rec.WaitFor(ctx, "h", "assistant.delta"))
	found, err := c.Cancel(ctx, "h", "test")
	require.NoError(t, err)
	require.True(t, found)
	return <-done
}

func TestCancel(t *testing.T) {
	cases := []struct {
		name, prompt, status, code string
	}{
		{"sleep confirms at once", "say go\nsleep 60s\nsay never", engine.StatusCancelled, ""},
		{"deltas stop midway", "say go\ndeltas 100000000", engine.StatusCancelled, ""},
		// hang as the last line reaches the end of the script with the
		// cancel pending: unconfirmed, so the host must fail the run.
		{"hang at the end ignores it", "say go\nhang 300ms", engine.StatusFailed, "MOCK_CANCEL_IGNORED"},
		// hang before another command confirms late, at that command.
		{"hang then more confirms late", "say go\nhang 300ms\nsay never", engine.StatusCancelled, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := cancelAfterFirstDelta(t, tc.prompt)
			assert.Equal(t, tc.status, res.Status, res.ErrorMessage)
			assert.Equal(t, tc.code, res.ErrorCode)
		})
	}
}

func FuzzParseScript(f *testing.F) {
	for _, s := range scripts {
		f.Add(s)
	}
	f.Add("tools 3 x {}\nsleep 1ms\nhang 1ms\nstatus a b")
	f.Add("say\n\ndeltas -1")
	f.Add("say  two  spaces \r\nfail")
	f.Add("\u00a0say x\ntool\ntools x y\nask\nstatus\ncheckpoint extra\ncrash")
	f.Add("# only a comment\n\n   \t")
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
			if o.name == "say" && strings.Join(words(o.text), "") != o.text {
				t.Fatalf("the deltas of %q do not concatenate back to it", o.text)
			}
		}
	})
}
