//go:build linux

package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bwrap sandbox swapped in for local the way an operator does it: the
// sandbox plugin named "local" (the policy default) now runs the bwrap
// binary; nothing else changes. These scenarios run the real host, the real
// mock engine, the patch toolpack and bwrap, on both dialects. To run the
// whole api suite on bwrap instead: AGENTHOST_TEST_SANDBOX=bwrap go test ./host/api/

// startBwrapEnv starts a host whose "local" sandbox is bwrap.
func startBwrapEnv(t *testing.T, dialect string) *env {
	dir := testenv.PluginConfigDir(t, "mock", "patch")
	testenv.BwrapSandboxConfig(t, dir, "local", "none")
	return startEnvIn(t, dialect, dir)
}

func eachDialectBwrap(t *testing.T, fn func(e *env)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) { fn(startBwrapEnv(t, d)) })
	}
}

// allowNext waits for the run's next permission request and allows it.
func (e *env) allowNext(app, runID string) {
	e.t.Helper()
	resp := e.openStream(e.tokenA, app, runID, "")
	readSSE(e.t, resp, func(f frame) bool { return f.Event == "permission.requested" })
	resp.Body.Close()
	require.Equal(e.t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+runID+"/resume", map[string]string{"decision": "allow"}, nil))
}

// TestBwrapSwapCapabilities: the swapped backend is the default sandbox and
// reports its own, narrower features (network none: exec only).
func TestBwrapSwapCapabilities(t *testing.T) {
	e := startBwrapEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	var caps struct {
		Policy struct {
			DefaultSandbox string `json:"default_sandbox"`
		} `json:"policy"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/capabilities", nil, &caps))
	assert.Equal(t, "local", caps.Policy.DefaultSandbox)
	var ready map[string]any
	assert.Equal(t, http.StatusOK, e.do("", "GET", "/readyz", nil, &ready), "%v", ready)
}

// TestBwrapSwapRunEditsAndCommands: a run applies a patch, runs a command
// (after permission) that sees the patched file and cannot see the host,
// streams everything, and its result becomes a revision.
func TestBwrapSwapRunEditsAndCommands(t *testing.T) {
	eachDialectBwrap(t, func(e *env) {
		var app struct {
			ID    string `json:"id"`
			Draft string `json:"draft_revision_id"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", map[string]string{"name": "site", "template": "static-site"}, &app))
		cmd := `{"command":"id -u; pwd; grep -c red styles.css; cat /etc/shadow || echo no-shadow; echo made > made.txt"}`
		script := patchLine(t, "styles.css", "body {", "body { color: red;") + "\ntool coding_agent_run_command " + cmd + "\nsay done"
		run := e.createRun(e.tokenA, app.ID, script)
		e.allowNext(app.ID, run.ID)

		resp := e.openStream(e.tokenA, app.ID, run.ID, "")
		frames, ended := readSSE(t, resp, nil)
		resp.Body.Close()
		require.True(t, ended)
		require.NotEmpty(t, frames)
		assert.Equal(t, "run.completed", frames[len(frames)-1].Event)

		r := e.runDetail(app.ID, run.ID)
		require.Equal(t, "completed", r.Status, r.ErrorMessage)
		assert.Equal(t, "applied", r.Context.Result.Kind)
		assert.NotEmpty(t, r.ResultRevisionID)
		types := e.eventTypes(app.ID, run.ID)
		assert.Equal(t, []string{"revision.created", "checkpoint.created", "run.completed"}, types[len(types)-3:])
		assert.True(t, strings.HasPrefix(e.fileAt(app.ID, "draft", "styles.css"), "body { color: red;\n"))
		assert.Equal(t, "made\n", e.fileAt(app.ID, "draft", "made.txt"), "what the command wrote is in the revision")

		done := e.payloads(app.ID, run.ID, "tool.completed")
		require.Len(t, done, 2, "apply_patch and run_command")
		var out struct {
			Output struct {
				ExitCode int    `json:"exit_code"`
				Stdout   string `json:"stdout"`
			} `json:"output"`
		}
		require.NoError(t, json.Unmarshal([]byte(done[1]), &out), done[1])
		assert.Equal(t, "1000\n/workspace\n1\nno-shadow\n", out.Output.Stdout, "ran inside bwrap: %s", done[1])
	})
}

// TestBwrapSwapPermissionResumeAndCancel: the pause/resume and cancel flows
// of TestPermissionResumeAndCancelOverHTTP, on bwrap.
func TestBwrapSwapPermissionResumeAndCancel(t *testing.T) {
	eachDialectBwrap(t, func(e *env) {
		app := e.createApp(e.tokenA)
		base := "/admin/apps/" + app + "/coding-agent/runs/"
		run := e.createRun(e.tokenA, app, "ask deploy Deploy?\nsay after")
		resp := e.openStream(e.tokenA, app, run.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "run.paused" })
		resp.Body.Close()
		assert.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/resume", map[string]string{"decision": "allow"}, nil))
		final := e.waitRun(app, run.ID)
		assert.Equal(t, "completed", final.Status)
		assert.Equal(t, "after", final.OutputText)

		run = e.createRun(e.tokenA, app, "say working\nsleep 60s")
		resp = e.openStream(e.tokenA, app, run.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "assistant.delta" })
		resp.Body.Close()
		assert.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/cancel", nil, nil))
		assert.Equal(t, "cancelled", e.waitRun(app, run.ID).Status)
	})
}

// TestBwrapSwapCancelDuringCommand: a cancel while a sandboxed command runs
// ends the tool call TOOL_CANCELLED and kills the command. Its pid is of
// its own namespace, so the command is found on the host's /proc by a
// marker in its command line instead.
func TestBwrapSwapCancelDuringCommand(t *testing.T) {
	e := startBwrapEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	base := "/admin/apps/" + app + "/coding-agent/runs/"
	marker := fmt.Sprintf("6%d.5", time.Now().UnixNano()%1e6)
	run := e.createRun(e.tokenA, app, `tool coding_agent_run_command {"command":"sleep `+marker+` & exec sleep `+marker+`"}`+"\nsay never")
	e.allowNext(app, run.ID)
	require.Eventually(t, func() bool { return hostHasMarker(marker) }, 30*time.Second, 20*time.Millisecond, "the command never started")

	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/cancel", nil, nil))
	assert.Equal(t, "cancelled", e.waitRun(app, run.ID).Status)
	failed := e.payloads(app, run.ID, "tool.failed")
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], `"error_code":"TOOL_CANCELLED"`)
	assert.Eventually(t, func() bool { return !hostHasMarker(marker) }, 20*time.Second, 50*time.Millisecond, "the sandboxed command outlived the cancel")
}

// TestBwrapSwapUnhealthyHostStarts: without bubblewrap the host still
// starts; the sandbox is unhealthy with the reason and runs are refused.
func TestBwrapSwapUnhealthyHostStarts(t *testing.T) {
	dir := testenv.PluginConfigDir(t, "mock", "patch")
	body := fmt.Sprintf("plugin \"local\" {\n  kind    = \"sandbox\"\n  command = %q\n  args    = [\"-name=local\"]\n  config {\n    bwrap_path = \"/nonexistent/bwrap\"\n  }\n}\n", testenv.BwrapBinary)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "local.hcl"), []byte(body), 0o644))
	e := startEnvIn(t, "sqlite", dir)
	app := e.createApp(e.tokenA)
	var er apiError
	code := e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs", map[string]string{"prompt": "say hi"}, &er)
	assert.GreaterOrEqual(t, code, 400)
	assert.NotEmpty(t, er.Detail.Code)
	state, reason := "", ""
	for _, st := range e.h.Plugins.Statuses() {
		if st.Name == "local" {
			state, reason = string(st.State), st.Reason
		}
	}
	assert.Equal(t, "unhealthy", state)
	assert.Contains(t, reason, "bubblewrap not found at /nonexistent/bwrap")
}

func hostHasMarker(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "sleep\x00"+marker) {
			st, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
			if s := string(st); s != "" && !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z") {
				return true
			}
		}
	}
	return false
}
