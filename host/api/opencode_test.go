package api_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests drive the real opencode binary (make tools installs it) as
// the OpenCode engine runs it: a sandbox service of the local sandbox,
// talking to a scripted fake OpenAI-compatible model server.

const opencodeKeyEnv = "AGENTHOST_API_TEST_OPENCODE_KEY"

// startOpenCodeEnv starts a host with the OpenCode engine (bash asks for
// permission, as by default), the local sandbox and the contract toolpack,
// and a global model bound for OpenCode as fake/<model> at srv.
// Lines in extraConfig go into the plugin's config block.
func startOpenCodeEnv(t testing.TB, srv *fakellm.Server, model, opencodePath string, extraConfig ...string) (*env, string) {
	t.Helper()
	return startOpenCodeEnvHost(t, srv, model, opencodePath, nil, extraConfig...)
}

// startOpenCodeEnvHost is startOpenCodeEnv with host config changes.
func startOpenCodeEnvHost(t testing.TB, srv *fakellm.Server, model, opencodePath string, mod func(*config.Host), extraConfig ...string) (*env, string) {
	t.Helper()
	if opencodePath == "" {
		opencodePath = testenv.OpenCodeBinary(t)
	}
	t.Setenv(opencodeKeyEnv, "sk-opencode-test")
	t.Setenv(config.KeyEndpointsEnv, opencodeKeyEnv+"="+srv.BaseURL())
	dir := testenv.PluginConfigDir(t, "local", "contract")
	if os.Getenv(testenv.SandboxEnv) == "bwrap" {
		// The OpenCode server is a service: it needs the loopback policy
		// (its own network, reaching only the model and the tool bridge).
		testenv.BwrapSandboxConfig(t, dir, "local", "loopback")
	}
	hcl := fmt.Sprintf(`plugin "opencode" {
  kind    = "engine"
  command = %q
  env     = [%q]
  config {
    opencode_path    = %q
    cancel_timeout_s = 15
    %s
  }
}
`, pluginBinary(t, "agenthost-engine-opencode"), opencodeKeyEnv, opencodePath, strings.Join(extraConfig, "\n    "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "opencode.hcl"), []byte(hcl), 0o644))
	var mods []func(*config.Host)
	if mod != nil {
		mods = append(mods, mod)
	}
	e := startEnvIn(t, "sqlite", dir, mods...)
	return e, e.ocModel(srv, model)
}

// ocModel makes a global model at srv bound for OpenCode as fake/<name>.
func (e *env) ocModel(srv *fakellm.Server, name string) string {
	e.t.Helper()
	var m struct{ ID string }
	require.Equal(e.t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
		"name": name, "provider": "openai", "provider_model": name, "base_url": srv.BaseURL(),
		"api_key_env": opencodeKeyEnv, "scope": "global",
		"bindings": []map[string]string{{"engine": "opencode", "engine_model_id": "fake/" + name}},
	}, &m))
	return m.ID
}

// ocRun starts an OpenCode run (in chat when not empty) and returns its id.
func (e *env) ocRun(app, model, chat, prompt string) string {
	e.t.Helper()
	body := map[string]any{"engine": "opencode", "model_id": model, "prompt": prompt}
	if chat != "" {
		body["chat_session_id"] = chat
	}
	var run struct {
		ID            string `json:"id"`
		ChatSessionID string `json:"chat_session_id"`
	}
	require.Equal(e.t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs", body, &run))
	return run.ID
}

func (e *env) chatOf(app, runID string) string {
	e.t.Helper()
	var r struct {
		ChatSessionID string `json:"chat_session_id"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+runID, nil, &r))
	return r.ChatSessionID
}

// waitEvent polls the run's log until it holds n events of the type.
func (e *env) waitEvent(app, runID, event string, n int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return len(e.payloads(app, runID, event)) >= n }, 90*time.Second, 50*time.Millisecond,
		"run %s never had %d %s events: %v", runID, n, event, e.eventTypes(app, runID))
}

// decide answers the run's pending permission.
func (e *env) decide(app, runID, decision string) {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		return e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+runID+"/resume", map[string]string{"decision": decision}, nil) == http.StatusAccepted
	}, 30*time.Second, 50*time.Millisecond, "run %s did not take the decision", runID)
}

func (e *env) ocWait(app, runID string) runOut {
	e.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var r runOut
		require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+runID, nil, &r))
		switch r.Status {
		case "completed", "failed", "cancelled":
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("run %s did not finish: %v", runID, e.eventTypes(app, runID))
	return runOut{}
}

func writeCall(id, path, content string) fakellm.Call {
	return fakellm.Call{ID: id, Name: "write", Args: []string{fmt.Sprintf(`{"filePath":%q,"content":%q}`, path, content)}}
}

func bashCall(id, command string) fakellm.Call {
	return fakellm.Call{ID: id, Name: "bash", Args: []string{fmt.Sprintf(`{"command":%q,"description":"run it"}`, command)}}
}

// TestOpenCodeWriteRunAndChatReuse: a write run ends in a revision holding
// the file (and none of the engine's scaffolding); the second run of the
// chat reuses the sandbox's server and its OpenCode session, so the model
// sees the first run's turns.
func TestOpenCodeWriteRunAndChatReuse(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-write", "")
	srv.Script("oc-write",
		fakellm.Turn{Text: []string{"Creating it."}, Calls: []fakellm.Call{writeCall("call_w1", "hello.txt", "hello from opencode\n")}, InputTokens: 100, OutputTokens: 10},
		fakellm.Turn{Text: []string{"Wrote ", "hello.txt."}, InputTokens: 120, OutputTokens: 4},
		fakellm.Turn{Text: []string{"Second run ", "answer."}},
	)
	app := e.createApp(e.tokenA)
	first := e.ocRun(app, model, "", "create hello.txt")
	done := e.ocWait(app, first)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, first))
	assert.Equal(t, "Creating it.Wrote hello.txt.", done.OutputText)

	types := strings.Join(e.eventTypes(app, first), ",")
	assert.Equal(t, 1, strings.Count(types, "tool.started"), types)
	assert.Equal(t, 1, strings.Count(types, "tool.completed"), types)
	assert.Contains(t, types, "revision.created,checkpoint.created,run.completed")
	started := e.payloads(app, first, "tool.started")
	require.Len(t, started, 1)
	assert.Contains(t, started[0], `"tool":"write"`)
	assert.Contains(t, started[0], `hello.txt`)

	d := e.runDetail(app, first)
	require.NotEmpty(t, d.ResultRevisionID)
	assert.Equal(t, "hello from opencode\n", e.fileAt(app, d.ResultRevisionID, "hello.txt"))
	var manifest struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/revisions/"+d.ResultRevisionID, nil, &manifest))
	for _, f := range manifest.Files {
		assert.False(t, strings.HasPrefix(f.Path, ".opencode"), "engine scaffolding reached the revision: %s", f.Path)
	}
	r := e.nativeRun(app, first)
	assert.Equal(t, int64(220), r.Context.Usage.InputTokens, "usage from OpenCode's step-finish parts")
	var timed struct {
		Context struct {
			Timings map[string]int64 `json:"timing_metrics_ms"`
		} `json:"context"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+first, nil, &timed))
	for _, k := range []string{"sandbox_start", "engine_start", "first_token"} {
		assert.Contains(t, timed.Context.Timings, k, "timing %s is recorded", k)
	}
	t.Logf("first run timings (ms): %v", timed.Context.Timings)

	// The second run of the chat: same server, same OpenCode session.
	chat := e.chatOf(app, first)
	second := e.ocRun(app, model, chat, "and now?")
	done = e.ocWait(app, second)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, second))
	assert.Equal(t, "Second run answer.", done.OutputText)
	reqs := srv.RequestsFor("oc-write")
	last := string(reqs[len(reqs)-1].Body)
	assert.Contains(t, last, "create hello.txt", "the model sees the first run's prompt")
	assert.Contains(t, last, "and now?")
	assert.NotContains(t, last, "Earlier in this conversation", "a reused session needs no rendered history")
	for _, p := range e.payloads(app, second, "run.status") {
		if strings.Contains(p, "engine_ready") {
			return
		}
	}
	t.Errorf("the second run reported no engine_ready status")
}

// TestOpenCodeBashPermission: bash asks; the first command is allowed once
// and runs, the second is rejected, fails as a tool and ends the turn.
func TestOpenCodeBashPermission(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-bash", "")
	srv.Script("oc-bash",
		fakellm.Turn{Calls: []fakellm.Call{bashCall("call_b1", "echo hi > bash.txt && echo written")}},
		fakellm.Turn{Calls: []fakellm.Call{bashCall("call_b2", "rm index.html")}},
		fakellm.Turn{Text: []string{"never asked"}},
	)
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "run commands")
	e.waitEvent(app, run, "permission.requested", 1)
	asked := e.payloads(app, run, "permission.requested")[0]
	assert.Contains(t, asked, `"action":"bash"`)
	assert.Contains(t, asked, "echo hi")
	e.decide(app, run, "allow")
	e.waitEvent(app, run, "permission.requested", 2)
	e.decide(app, run, "deny")
	done := e.ocWait(app, run)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, run))

	completed := e.payloads(app, run, "tool.completed")
	require.Len(t, completed, 1)
	assert.Contains(t, completed[0], "written")
	failed := e.payloads(app, run, "tool.failed")
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], `"tool":"bash"`)
	assert.Len(t, e.payloads(app, run, "permission.resolved"), 2)
	assert.Len(t, srv.RequestsFor("oc-bash"), 2, "a rejection ends the turn with no further model call")
	d := e.runDetail(app, run)
	require.NotEmpty(t, d.ResultRevisionID)
	assert.Equal(t, "hi\n", e.fileAt(app, d.ResultRevisionID, "bash.txt"))
	assert.Contains(t, e.fileAt(app, d.ResultRevisionID, "index.html"), "<h1>", "the rejected rm did not run")
}

// TestOpenCodeAbort: a cancel while text streams and one while a command
// runs both end cancelled, confirmed by OpenCode going idle.
func TestOpenCodeAbort(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-abort", "")
	srv.Script("oc-abort", fakellm.Turn{Text: []string{"Thinking hard"}, Hang: true})
	srv.Script("oc-abort-cmd",
		fakellm.Turn{Calls: []fakellm.Call{bashCall("call_s1", "echo started; sleep 60")}},
		fakellm.Turn{Text: []string{"not reached"}})
	cmdModel := e.ocModel(srv, "oc-abort-cmd")

	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "think")
	e.waitEvent(app, run, "assistant.delta", 1)
	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+run+"/cancel", nil, nil))
	done := e.ocWait(app, run)
	assert.Equal(t, "cancelled", done.Status, "%+v %v", done, e.eventTypes(app, run))

	app2 := e.createApp(e.tokenA)
	run = e.ocRun(app2, cmdModel, "", "run a long command")
	e.waitEvent(app2, run, "permission.requested", 1)
	e.decide(app2, run, "allow")
	e.waitEvent(app2, run, "tool.started", 1)
	time.Sleep(300 * time.Millisecond) // let the command start
	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app2+"/coding-agent/runs/"+run+"/cancel", nil, nil))
	done = e.ocWait(app2, run)
	assert.Equal(t, "cancelled", done.Status, "%+v %v", done, e.eventTypes(app2, run))
	types := strings.Join(e.eventTypes(app2, run), ",")
	assert.Equal(t, 1, strings.Count(types, "tool.started"), types)
	assert.Equal(t, 1, strings.Count(types, "tool.completed")+strings.Count(types, "tool.failed"), "the command's call is finished exactly once: %s", types)
}

// TestOpenCodeModelError: a 4xx from the model fails the run with the
// provider's status.
func TestOpenCodeModelError(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-4xx", "")
	srv.Script("oc-4xx", fakellm.Turn{Status: http.StatusBadRequest, Message: "fake bad request"})
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "anything")
	done := e.ocWait(app, run)
	require.Equal(t, "failed", done.Status)
	assert.Equal(t, "MODEL_PROVIDER_ERROR", done.ErrorCode)
	failed := e.payloads(app, run, "run.failed")
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], "400")
}

// TestOpenCodeEditFailureRule: an edit that fails with no later successful
// edit fails the run; one followed by a successful write completes.
func TestOpenCodeEditFailureRule(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-edit", "")
	badEdit := fakellm.Call{ID: "call_e1", Name: "edit", Args: []string{`{"filePath":"index.html","oldString":"no such text","newString":"x"}`}}
	srv.Script("oc-edit",
		fakellm.Turn{Calls: []fakellm.Call{badEdit}},
		fakellm.Turn{Text: []string{"I give up."}},
	)
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "edit it")
	done := e.ocWait(app, run)
	require.Equal(t, "failed", done.Status, "%v", e.eventTypes(app, run))
	assert.Equal(t, "CODING_AGENT_OPENCODE_UNRECOVERED_EDIT_FAILURE", done.ErrorCode)
	assert.Len(t, e.payloads(app, run, "tool.failed"), 1)

	srv.Script("oc-edit-ok",
		fakellm.Turn{Calls: []fakellm.Call{badEdit}},
		fakellm.Turn{Calls: []fakellm.Call{writeCall("call_e2", "index.html", "<h1>rewritten</h1>\n")}},
		fakellm.Turn{Text: []string{"Recovered."}},
	)
	okModel := e.ocModel(srv, "oc-edit-ok")
	app2 := e.createApp(e.tokenA)
	run = e.ocRun(app2, okModel, "", "edit it")
	done = e.ocWait(app2, run)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app2, run))
	d := e.runDetail(app2, run)
	assert.Equal(t, "<h1>rewritten</h1>\n", e.fileAt(app2, d.ResultRevisionID, "index.html"))
}

// TestOpenCodeServerKilled: SIGKILL of opencode mid-run fails the run with
// a clear code; the chat's next run starts a new server and completes.
func TestOpenCodeServerKilled(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-kill", "")
	srv.Script("oc-kill",
		fakellm.Turn{Text: []string{"Working"}, Hang: true, HangTimes: 1},
	)
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "work")
	e.waitEvent(app, run, "assistant.delta", 1)
	pids := opencodeServers(t)
	require.NotEmpty(t, pids, "no opencode server process found")
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	done := e.ocWait(app, run)
	require.Equal(t, "failed", done.Status)
	assert.Equal(t, "OPENCODE_SERVER_EXITED", done.ErrorCode)
	failed := e.payloads(app, run, "run.failed")
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], "SIGKILL")

	next := e.ocRun(app, model, e.chatOf(app, run), "again")
	done = e.ocWait(app, next)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, next))
	assert.Equal(t, "Working", done.OutputText)
	reqs := srv.RequestsFor("oc-kill")
	last := string(reqs[len(reqs)-1].Body)
	assert.Contains(t, last, "Earlier in this conversation", "the new server's fresh session gets the chat's history")
	assert.Contains(t, last, "user: work")
	after := opencodeServers(t)
	require.NotEmpty(t, after)
	assert.NotEqual(t, pids, after, "a new server process")
}

// opencodeServers lists the pids of running `opencode serve` processes.
func opencodeServers(t testing.TB) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, en := range entries {
		var pid int
		if _, err := fmt.Sscan(en.Name(), &pid); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) > 1 && strings.HasSuffix(args[0], "opencode") && args[1] == "serve" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestOpenCodeMissingBinary: without the binary the engine is unhealthy,
// capabilities say why, and a run is refused with ENGINE_UNAVAILABLE.
func TestOpenCodeMissingBinary(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-missing", "/nonexistent/opencode")
	app := e.createApp(e.tokenA)
	var caps map[string]any
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/capabilities", nil, &caps))
	b := fmt.Sprint(caps)
	assert.Contains(t, b, "opencode binary is missing")
	var errBody struct {
		Detail struct{ Code string } `json:"detail"`
	}
	require.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "opencode", "model_id": model, "prompt": "x"}, &errBody))
	assert.Equal(t, "CODING_AGENT_ENGINE_UNAVAILABLE", errBody.Detail.Code)
}

// TestOpenCodeContractToolAndSeeding: the contract tool OpenCode calls is
// served by the host's contract toolpack (one tool.started, one finish, from
// the host), and a sandbox where the seeding cannot be written fails the
// run's start with a clear code.
func TestOpenCodeContractToolAndSeeding(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-contract", "")
	srv.Script("oc-contract",
		fakellm.Turn{Calls: []fakellm.Call{{ID: "call_c1", Name: "coding_agent_describe_selected_agent_contract", Args: []string{`{}`}}}},
		fakellm.Turn{Text: []string{"No agent is selected."}},
	)
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "what agent do I call?")
	done := e.ocWait(app, run)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, run))
	started := e.payloads(app, run, "tool.started")
	require.Len(t, started, 1, "the bridged call is reported once, by the host")
	assert.Contains(t, started[0], `"tool":"coding_agent_describe_selected_agent_contract"`)
	finished := append(e.payloads(app, run, "tool.completed"), e.payloads(app, run, "tool.failed")...)
	require.Len(t, finished, 1)
	// The model got the toolpack's answer as the tool's result.
	reqs := srv.RequestsFor("oc-contract")
	assert.Contains(t, string(reqs[len(reqs)-1].Body), "readiness")

	// A file named .opencode leaves no room for the custom tools. App
	// creation leaves generated folders such as .opencode out, so the file
	// comes in as a user's edit.
	var blocked struct {
		ID    string `json:"id"`
		Draft string `json:"draft_revision_id"`
	}
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", map[string]any{"name": "blocked",
		"files": map[string]string{"index.html": "<h1>hi</h1>\n"}}, &blocked))
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+blocked.ID+"/revisions", map[string]any{
		"base_revision_id": blocked.Draft, "files": map[string]string{".opencode": "not a folder\n"}}, nil))
	run = e.ocRun(blocked.ID, model, "", "anything")
	done = e.ocWait(blocked.ID, run)
	require.Equal(t, "failed", done.Status)
	assert.Equal(t, "OPENCODE_SEED_FAILED", done.ErrorCode)
}

// TestOpenCodeContractToolArguments: the seeded contract tools declare
// their arguments to OpenCode (zod from the pinned build, written from the
// tools' JSON Schemas), so the model is offered them and its arguments
// reach the host, which validates them as for any engine: a valid call
// goes through with its arguments, an out-of-range one fails with the
// host's validation error, which the model gets back.
func TestOpenCodeContractToolArguments(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(t, srv, "oc-args", "")
	srv.Script("oc-args",
		fakellm.Turn{Calls: []fakellm.Call{{ID: "call_a1", Name: "coding_agent_describe_selected_agent_contract", Args: []string{`{"max_fields_per_tool":3}`}}}},
		fakellm.Turn{Calls: []fakellm.Call{{ID: "call_a2", Name: "coding_agent_get_agent_integration_contract", Args: []string{`{"tool_names":["lookup"]}`}}}},
		fakellm.Turn{Calls: []fakellm.Call{{ID: "call_a3", Name: "coding_agent_describe_selected_agent_contract", Args: []string{`{"max_fields_per_tool":0}`}}}},
		fakellm.Turn{Text: []string{"Done."}},
	)
	app := e.createApp(e.tokenA)
	run := e.ocRun(app, model, "", "describe the agent")
	done := e.ocWait(app, run)
	require.Equal(t, "completed", done.Status, "%+v %v", done, e.eventTypes(app, run))

	reqs := srv.RequestsFor("oc-args")
	first := string(reqs[0].Body)
	assert.Contains(t, first, "max_fields_per_tool", "the model is offered the describe tool's argument")
	assert.Contains(t, first, "tool_names", "and the contract tool's")

	started := strings.Join(e.payloads(app, run, "tool.started"), "\n")
	assert.Contains(t, started, `"max_fields_per_tool":3`, "the model's argument reaches the host")
	assert.Contains(t, started, `"tool_names":["lookup"]`)
	failed := e.payloads(app, run, "tool.failed")
	require.Len(t, failed, 1, "only the out-of-range call fails: %v", failed)
	assert.Contains(t, failed[0], "call_a3")
	assert.Contains(t, failed[0], "max_fields_per_tool", "the host's validation names the argument")
	t.Logf("tool.failed: %s", failed[0])
	// The refused call went back to the model as a tool error.
	last := string(reqs[len(reqs)-1].Body)
	assert.Contains(t, last, "call_a3")
}

// TestOpenCodeOnBwrapIsRefused: the bwrap sandbox under the none policy
// runs no services (nothing could reach them), so a run on it is refused
// up front with the seed's unsupported-runtime code.
func TestOpenCodeOnBwrapIsRefused(t *testing.T) {
	dir := testenv.PluginConfigDir(t, "contract")
	testenv.BwrapSandboxConfig(t, dir, "local", "none")
	// Never started: any executable will do as the binary.
	fakeBin := filepath.Join(t.TempDir(), "opencode")
	require.NoError(t, os.WriteFile(fakeBin, []byte("#!/bin/sh\nexit 1\n"), 0o755))
	hcl := fmt.Sprintf("plugin \"opencode\" {\n  kind    = \"engine\"\n  command = %q\n  config {\n    opencode_path = %q\n  }\n}\n", pluginBinary(t, "agenthost-engine-opencode"), fakeBin)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "opencode.hcl"), []byte(hcl), 0o644))
	e := startEnvIn(t, "sqlite", dir)
	var m struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
		"name": "m", "provider": "openai", "provider_model": "m", "base_url": "http://127.0.0.1:9/v1", "scope": "global",
		"bindings": []map[string]string{{"engine": "opencode", "engine_model_id": "fake/m"}},
	}, &m))
	app := e.createApp(e.tokenA)
	var errBody struct {
		Detail struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"detail"`
	}
	require.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"engine": "opencode", "model_id": m.ID, "prompt": "x"}, &errBody))
	assert.Equal(t, "CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME", errBody.Detail.Code)
	assert.Contains(t, errBody.Detail.Message, "services")
}
