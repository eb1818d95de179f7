package native

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testKeyEnv holds the key the fake provider expects; the engine reads it
// from its environment by the name the model binding gives.
const (
	testKeyEnv = "AGENTHOST_NATIVE_TEST_KEY"
	testKey    = "sk-test-native"
)

func TestMain(m *testing.M) {
	os.Setenv(testKeyEnv, testKey)
	os.Exit(m.Run())
}

// fastRetries keeps retry tests quick; the policy is the same.
var fastRetries = json.RawMessage(`{"retry_base_ms":1,"retry_cap_ms":5}`)

var providers = []string{ProviderOpenAI, ProviderAnthropic}

var modelSeq atomic.Int64

// model pins a fresh model name on the fake (scripts and attempt counts are
// per model name).
func model(srv *fakellm.Server, provider, name string) engine.Model {
	n := fmt.Sprintf("%s-%s-%d", provider, name, modelSeq.Add(1))
	return engine.Model{ID: n, Provider: provider, ProviderModel: n, BaseURL: srv.BaseURL(), APIKeyEnv: testKeyEnv}
}

func echoTools() []engine.ToolDescriptor {
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	return []engine.ToolDescriptor{
		{Name: enginetest.EchoTool, Description: "echo", InputSchema: schema},
		{Name: enginetest.FailTool, Description: "fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: enginetest.GuardedTool, Description: "asks the user first", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
}

func say(pieces ...string) fakellm.Turn { return fakellm.Turn{Text: pieces} }

func echoCall(args ...string) fakellm.Turn {
	return fakellm.Turn{Calls: []fakellm.Call{{Name: enginetest.EchoTool, Args: args}}}
}

// TestConformance holds the native engine, on each wire format, to the
// same skeletons as the mock engine for the same tasks.
func TestConformance(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			enginetest.Run(t, func(t *testing.T, services engine.HostServices) *engine.Client {
				return plugintest.Engine(t, New(), fastRetries, services)
			}, func(s enginetest.Scenario) (engine.RunRequest, bool) {
				m := model(srv, p, string(s))
				req := engine.RunRequest{Prompt: "task " + string(s), Model: m, Tools: echoTools()}
				switch s {
				case enginetest.Text, enginetest.State:
					srv.Script(m.ProviderModel, say("hello ", "world"))
				case enginetest.Tool:
					srv.Script(m.ProviderModel, echoCall(`{"text":`, `"ping"}`), say("done"))
				case enginetest.ToolFailure:
					srv.Script(m.ProviderModel, fakellm.Turn{Calls: []fakellm.Call{{Name: enginetest.FailTool, Args: []string{"{}"}}}}, say("carried on"))
				case enginetest.Fail:
					srv.Script(m.ProviderModel, fakellm.Turn{Status: http.StatusBadRequest, Message: "model not found"})
				case enginetest.Cancel:
					srv.Script(m.ProviderModel, fakellm.Turn{Text: []string{"working"}, Hang: true})
				case enginetest.Permission:
					// Permission is the host's, around tool calls: the native
					// loop never asks on its own, it calls the guarded tool.
					srv.Script(m.ProviderModel, fakellm.Turn{Calls: []fakellm.Call{{Name: enginetest.GuardedTool, Args: []string{"{}"}}}}, say("allowed"))
				}
				return req, true
			})
		})
	}
}

// runID is the run id run gives a test's request.
func runID(t *testing.T) string { return strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) }

// run executes one request in-process and returns its result and timeline.
func run(t *testing.T, rec *enginetest.Recorder, req engine.RunRequest) (engine.Result, []string) {
	t.Helper()
	c := plugintest.Engine(t, New(), fastRetries, rec)
	if req.RunID == "" {
		req.RunID = runID(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := rec.Run(ctx, c, req)
	require.NoError(t, err)
	return res, rec.Timeline(req.RunID)
}

func TestToolLoopAndUsage(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "loop")
			// The fake answers turn n to a request holding n assistant
			// messages; the history below holds one, so turn 0 is unused.
			srv.Script(m.ProviderModel, fakellm.Turn{},
				fakellm.Turn{Text: []string{"Looking."}, Reasoning: "hidden thoughts", Calls: []fakellm.Call{{Name: enginetest.EchoTool, Args: []string{`{"text":"a"}`}}}, InputTokens: 100, OutputTokens: 20},
				fakellm.Turn{Calls: []fakellm.Call{{Name: enginetest.EchoTool, Args: []string{`{"text":"b"}`}}, {Name: enginetest.EchoTool, Args: []string{`{"text":"c"}`}}}, InputTokens: 200, OutputTokens: 30},
				fakellm.Turn{Text: []string{" All ", "done."}, InputTokens: 300, OutputTokens: 40},
			)
			rec := enginetest.NewRecorder()
			res, timeline := run(t, rec, engine.RunRequest{Prompt: "go", Model: m, Tools: echoTools(),
				History: []engine.Message{{Role: "system", Content: "contract summary"}, {Role: "user", Content: "earlier"}, {Role: "assistant", Content: "earlier answer"}}})
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			assert.Equal(t, "Looking. All done.", res.OutputText, "reasoning is never assistant text")
			assert.Equal(t, []string{"assistant.delta", "tool.started", "tool.completed", "tool.started", "tool.completed", "tool.started", "tool.completed", "assistant.delta", "run.completed"},
				enginetest.Skeleton(timeline), "full timeline %v", timeline)
			calls := rec.ToolCalls(runID(t))
			require.Len(t, calls, 3)
			assert.JSONEq(t, `{"text":"c"}`, string(calls[2].Input))

			reqs := srv.RequestsFor(m.ProviderModel)
			require.Len(t, reqs, 3)
			for _, r := range reqs {
				assert.Equal(t, testKey, r.Auth, "the key comes from the variable the binding names")
				assert.Equal(t, len(echoTools()), r.Tools, "every tool the run offers reaches the model")
			}
			assert.Contains(t, string(reqs[0].Body), "contract summary", "system messages reach the model")
			assert.Contains(t, string(reqs[0].Body), "earlier answer", "history reaches the model")
			assert.Contains(t, string(reqs[2].Body), `\"echo\"`, "tool results are fed back")

			var st conversation
			require.NoError(t, json.Unmarshal(rec.State(runID(t)), &st))
			assert.Equal(t, int64(600), st.InputTokens)
			assert.Equal(t, int64(90), st.OutputTokens)
			assert.Equal(t, 2, st.Iterations)
		})
	}
}

func TestMalformedToolArguments(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "badjson")
			srv.Script(m.ProviderModel, echoCall(`{"text": "unterminated`), say("fixed it"))
			rec := enginetest.NewRecorder()
			res, _ := run(t, rec, engine.RunRequest{Prompt: "go", Model: m, Tools: echoTools()})
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			calls := rec.ToolCalls(runID(t))
			require.Len(t, calls, 1)
			// Passed on as a JSON string: the host's input guard answers
			// the model; the engine neither crashes nor drops the call.
			var s string
			require.NoError(t, json.Unmarshal(calls[0].Input, &s), "input %s", calls[0].Input)
			assert.Equal(t, `{"text": "unterminated`, s)
			reqs := srv.RequestsFor(m.ProviderModel)
			require.Len(t, reqs, 2)
			// The call gets its result (here the conformance host's echo of
			// the string; the real host's input guard answers
			// TOOL_INPUT_VALIDATION_FAILED, see the host's native tests).
			assert.Regexp(t, `"tool_(call|use)_id":"(call|toolu)_0_0"`, string(reqs[1].Body), "the call's result reaches the model")
		})
	}
}

func TestRateLimitThenSuccess(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "429")
			srv.Script(m.ProviderModel, fakellm.Turn{Status: http.StatusTooManyRequests, Message: "slow down", Times: 2, Text: []string{"finally"}})
			res, timeline := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "go", Model: m})
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			assert.Equal(t, "finally", res.OutputText)
			assert.Len(t, srv.RequestsFor(m.ProviderModel), 3)
			assert.Equal(t, []string{"run.status", "run.status", "assistant.delta", "run.completed"}, timeline, "each retry is reported")
		})
	}
}

func TestServerErrorsSpendTheRetryBudget(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	m := model(srv, ProviderOpenAI, "503")
	srv.Script(m.ProviderModel, fakellm.Turn{Status: http.StatusServiceUnavailable, Message: "overloaded"})
	res, _ := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "go", Model: m})
	require.Equal(t, engine.StatusFailed, res.Status)
	assert.Equal(t, CodeProviderError, res.ErrorCode)
	assert.Contains(t, res.ErrorMessage, "retry budget")
	assert.Contains(t, res.ErrorMessage, "model "+m.ID+" at "+m.BaseURL, "the message names the model and where it was sent")
	assert.Len(t, srv.RequestsFor(m.ProviderModel), DefaultRetryMax+1)
}

func TestClientErrorFailsAtOnce(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "400")
			srv.Script(m.ProviderModel, fakellm.Turn{Status: http.StatusBadRequest, Message: "max_tokens is too large"})
			res, timeline := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "go", Model: m})
			require.Equal(t, engine.StatusFailed, res.Status)
			assert.Equal(t, CodeProviderError, res.ErrorCode)
			assert.Len(t, srv.RequestsFor(m.ProviderModel), 1, "a 400 is not retried")
			var diag map[string]any
			require.NoError(t, json.Unmarshal(res.Diagnostics, &diag))
			assert.EqualValues(t, 400, diag["provider_status"])
			assert.Contains(t, diag["provider_message"], "max_tokens is too large")
			assert.Equal(t, []string{"run.failed"}, timeline)
		})
	}
}

func TestDisconnectMidStream(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "cut")
			// The first attempt at turn 1 breaks after a few chunks; the
			// retry of that turn (from the last complete iteration) works.
			srv.Script(m.ProviderModel, echoCall(`{"text":"x"}`), fakellm.Turn{Text: []string{"Hello ", "there, ", "friend."}, CutAfter: 4})
			rec := enginetest.NewRecorder()
			res, timeline := run(t, rec, engine.RunRequest{Prompt: "go", Model: m, Tools: echoTools()})
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			assert.Equal(t, "Hello there, friend.", res.OutputText)
			assert.Len(t, rec.ToolCalls(runID(t)), 1, "the completed iteration is not repeated")
			assert.Len(t, srv.RequestsFor(m.ProviderModel), 3)
			// What the user saw is not repeated by the retry.
			assert.Equal(t, 3, strings.Count(strings.Join(timeline, ","), "assistant.delta"), "timeline %v", timeline)
		})
	}
}

func TestSecondDisconnectFails(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	m := model(srv, ProviderAnthropic, "cut2")
	srv.Script(m.ProviderModel, fakellm.Turn{Text: []string{"a", "b", "c"}, CutAfter: 3, CutAlways: true})
	res, _ := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "go", Model: m})
	require.Equal(t, engine.StatusFailed, res.Status)
	assert.Equal(t, CodeProviderError, res.ErrorCode)
	assert.Len(t, srv.RequestsFor(m.ProviderModel), 2, "a broken stream is retried once")
	var diag map[string]any
	require.NoError(t, json.Unmarshal(res.Diagnostics, &diag))
	assert.Equal(t, true, diag["mid_stream"])
}

func TestCancelMidStream(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	m := model(srv, ProviderOpenAI, "cancel")
	srv.Script(m.ProviderModel, fakellm.Turn{Text: []string{"thinking about it"}, Hang: true})
	rec := enginetest.NewRecorder()
	c := plugintest.Engine(t, New(), fastRetries, rec)
	done := make(chan engine.Result, 1)
	go func() {
		res, err := rec.Run(context.Background(), c, engine.RunRequest{RunID: "cancel-run", Prompt: "go", Model: m})
		assert.NoError(t, err)
		done <- res
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, rec.WaitFor(ctx, "cancel-run", enginetest.EventAssistantDelta))
	found, err := c.Cancel(ctx, "cancel-run", "test")
	require.NoError(t, err)
	require.True(t, found)
	select {
	case res := <-done:
		assert.Equal(t, engine.StatusCancelled, res.Status)
	case <-ctx.Done():
		t.Fatal("the engine did not stop the provider stream on cancel")
	}
}

func TestIterationCap(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	m := model(srv, ProviderOpenAI, "cap")
	turns := []fakellm.Turn{}
	for i := 0; i < 3; i++ {
		turns = append(turns, echoCall(`{"text":"again"}`))
	}
	turns = append(turns, say("Stopping here: three rounds used."))
	srv.Script(m.ProviderModel, turns...)
	rec := enginetest.NewRecorder()
	res, timeline := run(t, rec, engine.RunRequest{Prompt: "loop forever", Model: m, Tools: echoTools(), Limits: engine.Limits{MaxToolIterations: 3}})
	require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
	assert.Len(t, rec.ToolCalls(runID(t)), 3)
	reqs := srv.RequestsFor(m.ProviderModel)
	require.Len(t, reqs, 4)
	assert.Equal(t, 0, reqs[3].Tools, "the last turn offers no tools")
	assert.Contains(t, strings.Join(timeline, ","), "run.status", "the cap is reported")
	assert.Equal(t, "Stopping here: three rounds used.", res.OutputText)
}

func TestForcedPlainTextTurn(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	m := model(srv, ProviderAnthropic, "empty")
	srv.Script(m.ProviderModel, fakellm.Turn{}, say("Hi! How can I help?"))
	res, _ := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "hello", Model: m, Tools: echoTools()})
	require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
	assert.Equal(t, "Hi! How can I help?", res.OutputText)
	reqs := srv.RequestsFor(m.ProviderModel)
	require.Len(t, reqs, 2)
	assert.Equal(t, 0, reqs[1].Tools)
	assert.Contains(t, string(reqs[1].Body), "Reply to me in plain text")
}

func TestTokenBudgetPauseAndResume(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "budget")
			srv.Script(m.ProviderModel,
				fakellm.Turn{Calls: []fakellm.Call{{Name: enginetest.EchoTool, Args: []string{`{"text":"1"}`}}}, InputTokens: 60, OutputTokens: 10},
				fakellm.Turn{Calls: []fakellm.Call{{Name: enginetest.EchoTool, Args: []string{`{"text":"2"}`}}}, InputTokens: 60, OutputTokens: 10},
				say("finished"),
			)
			rec := enginetest.NewRecorder()
			req := engine.RunRequest{RunID: "budget-" + p, Prompt: "go", Model: m, Tools: echoTools(), Limits: engine.Limits{TokenBudget: 100}}
			res, _ := run(t, rec, req)
			require.Equal(t, engine.StatusPaused, res.Status, res.ErrorMessage)
			assert.Equal(t, PauseTokenBudget, res.PauseReason)
			assert.Len(t, rec.ToolCalls(req.RunID), 2)

			// Resume: the host hands back the saved state.
			req.State = rec.State(req.RunID)
			require.NotEmpty(t, req.State)
			rec2 := enginetest.NewRecorder()
			res, timeline := run(t, rec2, req)
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			assert.Equal(t, "finished", res.OutputText)
			assert.Empty(t, rec2.ToolCalls(req.RunID), "no tool round is repeated")
			assert.Equal(t, []string{"assistant.delta", "run.completed"}, enginetest.Skeleton(timeline))
			assert.Len(t, srv.RequestsFor(m.ProviderModel), 3)
		})
	}
}

func TestModelBindingProblems(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	cases := map[string]engine.Model{
		"unset key":        {ID: "m", Provider: ProviderOpenAI, ProviderModel: "m", BaseURL: srv.BaseURL(), APIKeyEnv: "AGENTHOST_NO_SUCH_KEY"},
		"unknown provider": {ID: "m", Provider: "carrier-pigeon", ProviderModel: "m"},
		"no model name":    {ID: "m", Provider: ProviderOpenAI},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			res, _ := run(t, enginetest.NewRecorder(), engine.RunRequest{Prompt: "go", Model: m})
			assert.Equal(t, engine.StatusFailed, res.Status)
			assert.Equal(t, CodeModelConfig, res.ErrorCode)
			assert.NotContains(t, res.ErrorMessage, testKey)
		})
	}
	assert.Empty(t, srv.Requests())
}

func TestConfigRefusesUnknownKeys(t *testing.T) {
	e := New()
	assert.Error(t, e.Configure(context.Background(), json.RawMessage(`{"retries":3}`)))
	assert.Error(t, e.Configure(context.Background(), json.RawMessage(`{"retry_max":-1}`)))
	assert.NoError(t, e.Configure(context.Background(), json.RawMessage(`{"retry_max":2,"max_tool_iterations":4}`)))
}
