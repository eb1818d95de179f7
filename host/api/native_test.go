package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The native engine's key, as the model binding names it; the fake
// provider checks it arrives.
const (
	nativeKeyEnv = "AGENTHOST_API_TEST_LLM_KEY"
	nativeKey    = "sk-api-test"
)

// builtPlugins are plugin binaries outside the default set, built once
// per package run by pluginBinary.
var builtPlugins sync.Map // name → func() (string, error)

// pluginBinary builds cmd/<name> once for the package and returns its path.
func pluginBinary(t testing.TB, name string) string {
	t.Helper()
	build, _ := builtPlugins.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		dir, err := testenv.BuildBinaries("cmd/" + name)
		return filepath.Join(dir, name), err
	}))
	bin, err := build.(func() (string, error))()
	require.NoError(t, err)
	return bin
}

// startNativeEnv starts a host with the native engine (talking to srv),
// the local sandbox and the patch toolpack, and a global model per
// provider; it returns the env and the model ids by provider.
func startNativeEnv(t testing.TB, dialect string, srv *fakellm.Server, names map[string]string) (*env, map[string]string) {
	t.Setenv(nativeKeyEnv, nativeKey)
	t.Setenv(config.KeyEndpointsEnv, nativeKeyEnv+"="+srv.BaseURL())
	t.Setenv("APPS_CODING_AGENT_NATIVE_ENABLED", "1")
	dir := testenv.PluginConfigDir(t, "local", "patch")
	hcl := fmt.Sprintf(`plugin "native" {
  kind    = "engine"
  command = %q
  env     = [%q]
  config {
    retry_base_ms = 1
    retry_cap_ms  = 5
  }
}
`, pluginBinary(t, "agenthost-engine-native"), nativeKeyEnv)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "native.hcl"), []byte(hcl), 0o644))
	e := startEnvIn(t, dialect, dir)
	ids := map[string]string{}
	for provider, model := range names {
		var m struct{ ID string }
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
			"name": model, "provider": provider, "provider_model": model, "base_url": srv.BaseURL(),
			"api_key_env": nativeKeyEnv, "scope": "global",
		}, &m))
		ids[provider] = m.ID
	}
	return e, ids
}

// patchCall is an apply_patch tool call replacing one line.
func patchCall(path, from, to string) fakellm.Call {
	args, _ := json.Marshal(map[string]string{"patch": fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-%s\n+%s\n", path, path, from, to)})
	// Streamed in two pieces, as models do.
	half := len(args) / 2
	return fakellm.Call{Name: "coding_agent_apply_patch", Args: []string{string(args[:half]), string(args[half:])}}
}

type nativeRun struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorCode    string `json:"error_code"`
	OutputText   string `json:"output_text"`
	PauseReason  string `json:"pause_reason"`
	ResultRevID  string `json:"result_revision_id"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	Context      struct {
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
		Limits struct {
			TokenBudget int64 `json:"token_budget"`
		} `json:"limits"`
	} `json:"context"`
}

func (e *env) nativeRun(app, id string) nativeRun {
	e.t.Helper()
	var r nativeRun
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+id, nil, &r))
	return r
}

// TestNativeToolLoopMakesARevision: a model on each wire format reads a
// file, patches it through the real patch toolpack over two iterations
// (one patch with malformed arguments, which the host's input guard
// refuses), answers, and the run's result is a new revision with the edit;
// usage is in the run's context and in /metrics.
func TestNativeToolLoopMakesARevision(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			names := map[string]string{"openai": "gpt-fake-" + dialect, "anthropic": "claude-fake-" + dialect}
			e, ids := startNativeEnv(t, dialect, srv, names)
			for provider, model := range names {
				srv.Script(model,
					fakellm.Turn{Text: []string{"Let me look."}, Calls: []fakellm.Call{{Name: "coding_agent_read_file_range", Args: []string{`{"path":"index.html","start_line":1}`}}}, InputTokens: 120, OutputTokens: 12},
					fakellm.Turn{Calls: []fakellm.Call{{Name: "coding_agent_apply_patch", Args: []string{`{"patch": "--- a/index`}}}, InputTokens: 150, OutputTokens: 8},
					fakellm.Turn{Calls: []fakellm.Call{patchCall("index.html", "<h1>hi</h1>", "<h1>Hello, "+provider+"</h1>")}, InputTokens: 180, OutputTokens: 30},
					fakellm.Turn{Text: []string{" I made the ", "heading bigger."}, InputTokens: 200, OutputTokens: 9},
				)
				app := e.createApp(e.tokenA)
				var run struct{ ID string }
				require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
					map[string]any{"engine": "native", "model_id": ids[provider], "prompt": "make the heading friendlier"}, &run))
				done := e.waitRun(app, run.ID)
				require.Equal(t, "completed", done.Status, "%s: %+v", provider, done)
				assert.Equal(t, "Let me look. I made the heading bigger.", done.OutputText)

				types := e.eventTypes(app, run.ID)
				joined := strings.Join(types, ",")
				assert.Equal(t, 3, strings.Count(joined, "tool.started"), "%v", types)
				assert.Equal(t, 1, strings.Count(joined, "tool.failed"), "the malformed patch fails: %v", types)
				assert.Contains(t, joined, "revision.created,checkpoint.created,run.completed")

				r := e.nativeRun(app, run.ID)
				require.NotEmpty(t, r.ResultRevID)
				assert.Equal(t, "<h1>Hello, "+provider+"</h1>\n", e.fileAt(app, r.ResultRevID, "index.html"))
				assert.Equal(t, int64(650), r.Context.Usage.InputTokens)
				assert.Equal(t, int64(59), r.Context.Usage.OutputTokens)
				assert.Equal(t, int64(650), r.InputTokens)

				var failed []struct {
					Event   string `json:"event"`
					Payload struct {
						Code string `json:"error_code"`
					} `json:"payload"`
				}
				var page struct {
					Items json.RawMessage `json:"items"`
				}
				require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/events?limit=500", nil, &page))
				require.NoError(t, json.Unmarshal(page.Items, &failed))
				for _, f := range failed {
					if f.Event == "tool.failed" {
						assert.Equal(t, "TOOL_INPUT_VALIDATION_FAILED", f.Payload.Code)
					}
				}
				for _, req := range srv.RequestsFor(model) {
					assert.Equal(t, nativeKey, req.Auth)
				}
			}
			// Tokens reach /metrics.
			req, _ := http.NewRequest("GET", e.srv.URL+"/metrics", nil)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Contains(t, string(body), `agenthost_run_tokens_total{direction="input",engine="native"} 1300`)
		})
	}
}

// TestNativeBudgetPauseAndResume: a run over its token budget pauses with
// the reason; POST …/resume (no decision: nothing was asked) continues it
// from its saved state to a result.
func TestNativeBudgetPauseAndResume(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, ids := startNativeEnv(t, "sqlite", srv, map[string]string{"openai": "gpt-budget"})
	srv.Script("gpt-budget",
		fakellm.Turn{Calls: []fakellm.Call{{Name: "coding_agent_read_file_range", Args: []string{`{"path":"index.html","start_line":1}`}}}, InputTokens: 90, OutputTokens: 20},
		fakellm.Turn{Calls: []fakellm.Call{patchCall("index.html", "<h1>hi</h1>", "<h1>budget</h1>")}, InputTokens: 90, OutputTokens: 20},
		fakellm.Turn{Text: []string{"Done within budget."}},
	)
	app := e.createApp(e.tokenA)
	var run struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "native", "model_id": ids["openai"], "prompt": "edit", "token_budget": 150}, &run))
	r := e.waitPaused(app, run.ID)
	assert.Equal(t, "token_budget", r.PauseReason)
	assert.Equal(t, int64(150), r.Context.Limits.TokenBudget)

	// A decision is not required (nothing was asked) but a bad one is refused.
	var apiErr apiError
	assert.Equal(t, http.StatusBadRequest, e.doInvalid(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/resume", map[string]any{"decision": "maybe"}, &apiErr))
	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/resume", map[string]any{}, nil))
	done := e.waitRun(app, run.ID)
	require.Equal(t, "completed", done.Status, "%+v", done)
	assert.Equal(t, "Done within budget.", done.OutputText)
	final := e.nativeRun(app, run.ID)
	assert.Equal(t, "<h1>budget</h1>\n", e.fileAt(app, final.ResultRevID, "index.html"))
	assert.Len(t, srv.RequestsFor("gpt-budget"), 3, "no model turn was repeated")

	var bad apiError
	assert.Equal(t, http.StatusBadRequest, e.doInvalid(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "native", "prompt": "x", "token_budget": -5}, &bad))
	assert.Equal(t, "token_budget", bad.Detail.Field)
}

// waitPaused waits for a run to be paused.
func (e *env) waitPaused(app, id string) nativeRun {
	e.t.Helper()
	for i := 0; i < 3000; i++ {
		r := e.nativeRun(app, id)
		switch r.Status {
		case "paused":
			return r
		case "completed", "failed", "cancelled":
			e.t.Fatalf("run %s ended %s (%s) instead of pausing", id, r.Status, r.ErrorCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("run %s did not pause", id)
	return nativeRun{}
}

// TestNativeProviderRefusal: a 400 from the provider fails the run with
// MODEL_PROVIDER_ERROR and the provider's status and message in the
// terminal event's diagnostics.
func TestNativeProviderRefusal(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, ids := startNativeEnv(t, "sqlite", srv, map[string]string{"anthropic": "claude-refuses"})
	srv.Script("claude-refuses", fakellm.Turn{Status: http.StatusBadRequest, Message: "prompt is too long"})
	app := e.createApp(e.tokenA)
	var run struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "native", "model_id": ids["anthropic"], "prompt": "hi"}, &run))
	done := e.waitRun(app, run.ID)
	require.Equal(t, "failed", done.Status)
	assert.Equal(t, "MODEL_PROVIDER_ERROR", done.ErrorCode)
	var page struct {
		Items []struct {
			Event       string          `json:"event"`
			Diagnostics json.RawMessage `json:"diagnostics"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/events?limit=500", nil, &page))
	last := page.Items[len(page.Items)-1]
	require.Equal(t, "run.failed", last.Event)
	var diag map[string]any
	require.NoError(t, json.Unmarshal(last.Diagnostics, &diag), "%s", last.Diagnostics)
	assert.EqualValues(t, 400, diag["provider_status"])
	assert.Contains(t, diag["provider_message"], "prompt is too long")
	assert.NotContains(t, string(last.Diagnostics), nativeKey)
}

// TestNativeCancelMidStream: cancel over HTTP while the model streams ends
// the run cancelled (the engine closed the provider stream and confirmed).
func TestNativeCancelMidStream(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, ids := startNativeEnv(t, "sqlite", srv, map[string]string{"openai": "gpt-slow"})
	srv.Script("gpt-slow", fakellm.Turn{Text: []string{"Working on it"}, Hang: true})
	app := e.createApp(e.tokenA)
	var run struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "native", "model_id": ids["openai"], "prompt": "take your time"}, &run))
	resp := e.openStream(e.tokenA, app, run.ID, "")
	_, _ = readSSE(t, resp, func(f frame) bool { return f.Event == "assistant.delta" })
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/cancel", nil, nil))
	done := e.waitRun(app, run.ID)
	assert.Equal(t, "cancelled", done.Status, "%+v", done)
}

// TestNativeNeedsAModel: with no model configured a native run is refused up
// front (the engine declares needs_model), saying how to configure one, and
// nothing is recorded. (Engines that declare nothing, like the mock, run
// without a model, as the other tests show.)
func TestNativeNeedsAModel(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, _ := startNativeEnv(t, "sqlite", srv, nil)
	app := e.createApp(e.tokenA)
	var er apiError
	require.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "native", "prompt": "hi"}, &er))
	assert.Equal(t, "CODING_AGENT_MODEL_UNAVAILABLE", er.Detail.Code)
	assert.Equal(t, "model_id", er.Detail.Field)
	assert.Contains(t, er.Detail.Message, "/admin/models")
	runs, err := e.h.Store.ListRuns(t.Context(), app, "", "", 10)
	require.NoError(t, err)
	assert.Empty(t, runs)
	assert.Empty(t, srv.Requests())
}
