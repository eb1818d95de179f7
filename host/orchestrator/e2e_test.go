package orchestrator_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunEditsFileThroughRealPlugins carries one run engine → host →
// toolpack → workspace → sandbox through the real binaries and checks the
// exact event sequence and the file the tool wrote.
func TestRunEditsFileThroughRealPlugins(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	run := h.start(t, "say Writing the file\n"+
		`tool coding_agent_write_file {"path":"src/hello.txt","content":"hello from mock\n"}`+"\n"+
		"say done")
	final := h.wait(t, run.ID)
	require.Equal(t, core.RunCompleted, final.Status, "error: %s %s", final.ErrorCode, final.ErrorMessage)

	evs := h.store.Events(run.ID)
	requireWellFormed(t, evs)
	assert.Equal(t, []core.EventType{
		core.EventRunAccepted,
		core.EventRunStatus, // sandbox_starting
		core.EventRunStatus, // sandbox_ready
		core.EventRunStatus, // engine_starting
		core.EventAssistantDelta, core.EventAssistantDelta, core.EventAssistantDelta,
		core.EventToolStarted, core.EventToolCompleted,
		core.EventAssistantDelta,
		core.EventRunStatus, // applying
		core.EventRunCompleted,
	}, types(evs))
	assert.Equal(t, "Writing the filedone", final.OutputText, "all streamed text, in order")
	assert.Equal(t, "sbx_"+run.ID, final.SandboxID)

	files := map[string]string{}
	for _, f := range h.store.Result(run.ID) {
		files[f.Path] = string(f.Data)
	}
	assert.Equal(t, "hello from mock\n", files["src/hello.txt"])
	assert.Equal(t, "# demo\n", files["README.md"], "untouched files stay")

	var done struct {
		Output struct {
			Path string `json:"path"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal(evs[8].Payload, &done))
	assert.Equal(t, "src/hello.txt", done.Output.Path)
}

func TestToolFailureIsAnEventNotARunFailure(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	run := h.start(t, "tool coding_agent_read_file {\"path\":\"../etc/passwd\"}\ntool no_such_tool {}\nsay still here")
	final := h.wait(t, run.ID)
	require.Equal(t, core.RunCompleted, final.Status)
	evs := h.store.Events(run.ID)
	requireWellFormed(t, evs)
	var failedCodes []string
	for _, e := range evs {
		if e.Event == core.EventToolFailed {
			var p struct {
				Code string `json:"error_code"`
			}
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			failedCodes = append(failedCodes, p.Code)
		}
	}
	assert.Equal(t, []string{"BUILDER_PATCH_POLICY_VIOLATION", core.CodeToolUnknown}, failedCodes)
}

func TestEngineFailureCarriesItsCode(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	final := h.wait(t, h.start(t, "say hi\nfail MODEL_PROVIDER_ERROR upstream said 400").ID)
	assert.Equal(t, core.RunFailed, final.Status)
	assert.Equal(t, "MODEL_PROVIDER_ERROR", final.ErrorCode)
	assert.Contains(t, final.ErrorMessage, "upstream said 400")
}

func TestPermissionPausesUntilResumed(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	for _, allow := range []bool{true, false} {
		run := h.start(t, "ask deploy Deploy the app?\nsay after")
		h.waitEvent(t, run.ID, core.EventRunPaused)
		paused, err := h.store.GetRun(context.Background(), run.ID)
		require.NoError(t, err)
		assert.Equal(t, core.RunPaused, paused.Status)
		assert.Equal(t, core.PauseForPermission, paused.PauseReason)

		require.NoError(t, h.orch.Resume(context.Background(), run.ID, engine.PermissionDecision{Allow: allow, Reason: "test"}))
		final := h.wait(t, run.ID)
		require.Equal(t, core.RunCompleted, final.Status)
		evs := h.store.Events(run.ID)
		requireWellFormed(t, evs)
		assert.Subset(t, types(evs), []core.EventType{core.EventPermissionRequest, core.EventRunPaused, core.EventPermissionResolved, core.EventRunResumed})
		if allow {
			assert.Equal(t, "after", final.OutputText)
		} else {
			assert.Contains(t, final.OutputText, "permission denied")
		}
		err = h.orch.Resume(context.Background(), run.ID, engine.PermissionDecision{Allow: true})
		assert.Equal(t, core.CodeRunNotPaused, core.CodeOf(err), "resuming a finished run")
	}
}

func TestCancel(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{CancelGrace: time.Second})
	t.Run("confirmed", func(t *testing.T) {
		run := h.start(t, "say working\nsleep 60s\nsay never")
		h.waitEvent(t, run.ID, core.EventAssistantDelta)
		require.NoError(t, h.orch.Cancel(context.Background(), run.ID))
		final := h.wait(t, run.ID)
		assert.Equal(t, core.RunCancelled, final.Status)
		requireWellFormed(t, h.store.Events(run.ID))
		assert.Equal(t, core.CodeRunFinished, core.CodeOf(h.orch.Cancel(context.Background(), run.ID)))
	})
	t.Run("unconfirmed fails closed", func(t *testing.T) {
		run := h.start(t, "say working\nhang 20s\nsay never")
		h.waitEvent(t, run.ID, core.EventAssistantDelta)
		require.NoError(t, h.orch.Cancel(context.Background(), run.ID))
		final := h.wait(t, run.ID)
		assert.Equal(t, core.RunFailed, final.Status)
		assert.Equal(t, core.CodeCancelUnconfirmed, final.ErrorCode)
		requireWellFormed(t, h.store.Events(run.ID))
	})
	t.Run("while paused for permission", func(t *testing.T) {
		run := h.start(t, "ask deploy Deploy?\nsay never")
		h.waitEvent(t, run.ID, core.EventRunPaused)
		require.NoError(t, h.orch.Cancel(context.Background(), run.ID))
		final := h.wait(t, run.ID)
		assert.Equal(t, core.RunCancelled, final.Status)
		requireWellFormed(t, h.store.Events(run.ID))
	})
}

func pidOf(t *testing.T, h *host, name string) int {
	s := h.waitHealthy(t, name)
	require.NotZero(t, s.PID)
	return s.PID
}

// TestPluginCrashes SIGKILLs each plugin kind in the middle of a run: that
// run fails with the kind's code, the plugin is relaunched and the next run
// succeeds.
func TestPluginCrashes(t *testing.T) {
	// The host's own side of its plugin connections (go-plugin's broker,
	// serving the callback services it offers each plugin) listens on
	// sockets in its temporary folder: one of the test's own, to count them.
	hostTmp, err := os.MkdirTemp("", "ahtmp-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(hostTmp) })
	// The sandboxes' root is made in it too: their uids must get through.
	require.NoError(t, os.Chmod(hostTmp, 0o711))
	t.Setenv("TMPDIR", hostTmp)
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	for _, name := range []string{"mock", "local", "patch"} {
		h.waitHealthy(t, name)
	}
	hostSockets := len(sockets(t, hostTmp))
	require.NotZero(t, hostSockets, "the host serves its plugins nothing over %s", hostTmp)
	next := func(t *testing.T) {
		t.Helper()
		for _, name := range []string{"mock", "local", "patch"} {
			h.waitHealthy(t, name)
		}
		final := h.wait(t, h.start(t, `tool coding_agent_write_file {"path":"a.txt","content":"ok"}`+"\nsay ok").ID)
		require.Equal(t, core.RunCompleted, final.Status, "run after relaunch: %s %s", final.ErrorCode, final.ErrorMessage)
	}
	restarts := func(name string) int {
		for _, s := range h.mgr.Statuses() {
			if s.Name == name {
				return s.Restarts
			}
		}
		return -1
	}

	t.Run("engine", func(t *testing.T) {
		run := h.start(t, "say before\nsleep 60s")
		h.waitEvent(t, run.ID, core.EventAssistantDelta)
		require.NoError(t, syscall.Kill(pidOf(t, h, "mock"), syscall.SIGKILL))
		final := h.wait(t, run.ID)
		assert.Equal(t, core.RunFailed, final.Status)
		assert.Equal(t, core.CodeEngineCrashed, final.ErrorCode)
		requireWellFormed(t, h.store.Events(run.ID))
		next(t)
		assert.Equal(t, 1, restarts("mock"))
	})
	t.Run("a run started right after a crash waits for the relaunch", func(t *testing.T) {
		before := restarts("mock")
		require.NoError(t, syscall.Kill(pidOf(t, h, "mock"), syscall.SIGKILL))
		// No wait: the crash is not even noticed yet.
		final := h.wait(t, h.start(t, "say ok").ID)
		assert.Equal(t, core.RunCompleted, final.Status, "%s %s", final.ErrorCode, final.ErrorMessage)
		assert.Equal(t, before+1, restarts("mock"))
	})
	t.Run("engine crashes itself", func(t *testing.T) {
		final := h.wait(t, h.start(t, "say before\ncrash").ID)
		assert.Equal(t, core.CodeEngineCrashed, final.ErrorCode)
		next(t)
	})
	t.Run("sandbox", func(t *testing.T) {
		run := h.start(t, "say before\nsleep 60s")
		h.waitEvent(t, run.ID, core.EventAssistantDelta)
		require.NoError(t, syscall.Kill(pidOf(t, h, "local"), syscall.SIGKILL))
		final := h.wait(t, run.ID)
		assert.Equal(t, core.RunFailed, final.Status)
		assert.Equal(t, core.CodeSandboxCrashed, final.ErrorCode)
		requireWellFormed(t, h.store.Events(run.ID))
		next(t)
	})
	t.Run("toolpack", func(t *testing.T) {
		// Freeze the sandbox so the tool call is certainly in flight inside
		// the toolpack when the toolpack dies. The engine calls the tool
		// over and over: one call alone may be done before the freeze
		// lands (and then none is ever in flight).
		sandboxPID := pidOf(t, h, "local")
		run := h.start(t, "say before\n"+`tools 1000000 coding_agent_write_file {"path":"b.txt","content":"x"}`+"\nsay after")
		h.waitEvent(t, run.ID, core.EventAssistantDelta)
		require.NoError(t, syscall.Kill(sandboxPID, syscall.SIGSTOP))
		thawed := false
		defer func() {
			if !thawed {
				_ = syscall.Kill(sandboxPID, syscall.SIGCONT)
			}
		}()
		require.Eventually(t, func() bool { return h.orch.ToolCallsInFlight(run.ID) == 1 }, 30*time.Second, 5*time.Millisecond)
		require.NoError(t, syscall.Kill(pidOf(t, h, "patch"), syscall.SIGKILL))
		final := h.wait(t, run.ID)
		require.NoError(t, syscall.Kill(sandboxPID, syscall.SIGCONT))
		thawed = true
		assert.Equal(t, core.RunFailed, final.Status)
		assert.Equal(t, core.CodeToolpackCrashed, final.ErrorCode, final.ErrorMessage)
		requireWellFormed(t, h.store.Events(run.ID))
		next(t)
	})
	t.Run("sandbox under a tool call", func(t *testing.T) {
		// The toolpack is inside a call to the sandbox plugin's own socket
		// (frozen, so the call certainly waits there) when the sandbox
		// plugin dies: the call fails, the run fails as a sandbox crash,
		// and the relaunched plugin (a new socket) serves the next run.
		sandboxPID := pidOf(t, h, "local")
		run := h.start(t, "say before\n"+`tools 1000000 coding_agent_write_file {"path":"c.txt","content":"x"}`+"\nsay after")
		h.waitEvent(t, run.ID, core.EventAssistantDelta)
		require.NoError(t, syscall.Kill(sandboxPID, syscall.SIGSTOP))
		// Never left frozen, should an assertion below fail first.
		defer func() { _ = syscall.Kill(sandboxPID, syscall.SIGCONT) }()
		require.Eventually(t, func() bool { return h.orch.ToolCallsInFlight(run.ID) == 1 }, 30*time.Second, 5*time.Millisecond)
		require.NoError(t, syscall.Kill(sandboxPID, syscall.SIGKILL))
		final := h.wait(t, run.ID)
		assert.Equal(t, core.RunFailed, final.Status)
		assert.Equal(t, core.CodeSandboxCrashed, final.ErrorCode, final.ErrorMessage)
		evs := h.store.Events(run.ID)
		requireWellFormed(t, evs)
		assert.Contains(t, types(evs), core.EventToolFailed, "the call in flight failed")
		next(t)
	})
	t.Run("no socket outlives its plugin", func(t *testing.T) {
		// Six plugin processes died above, none of them able to remove its
		// socket; the manager removed each once it saw the process gone.
		// What is left is one socket per live plugin.
		live := 0
		for _, s := range h.mgr.Statuses() {
			if s.State == pluginmgr.StateHealthy {
				live++
			}
		}
		require.Equal(t, 3, live)
		require.Eventually(t, func() bool { return len(sockets(t, h.sockets)) == live }, 10*time.Second, 10*time.Millisecond,
			"sockets left in %s: %v", h.sockets, sockets(t, h.sockets))
		// Nor does the host's side of a dead plugin's connection: its
		// listeners close with it, so the host holds as many as it did
		// before the first crash, not one more per death.
		require.Eventually(t, func() bool { return len(sockets(t, hostTmp)) == hostSockets }, 10*time.Second, 10*time.Millisecond,
			"the host's sockets in %s: %v, %d before the crashes", hostTmp, sockets(t, hostTmp), hostSockets)
	})
}

// sockets lists the Unix sockets in dir.
func sockets(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWrongChecksumRefusesPluginButHostStarts(t *testing.T) {
	cfgs := defaultConfigs(t)
	cfgs[2].SHA256 = strings.Repeat("ab", 32)
	h := newHost(t, cfgs, orchestrator.Options{})
	var patch pluginmgr.Status
	for _, s := range h.mgr.Statuses() {
		if s.Name == "patch" {
			patch = s
		}
	}
	assert.Equal(t, pluginmgr.StateFailed, patch.State)
	assert.Contains(t, patch.Reason, "sha256 mismatch")
	assert.Contains(t, patch.Reason, strings.Repeat("ab", 32))
	// The rest of the host works; the tool is simply not offered.
	final := h.wait(t, h.start(t, "tool coding_agent_write_file {\"path\":\"a\",\"content\":\"b\"}\nsay ok").ID)
	assert.Equal(t, core.RunCompleted, final.Status)
	assert.Contains(t, types(h.store.Events(final.ID)), core.EventToolFailed)
}

func TestStartRefusesUnavailablePlugins(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	_, err := h.orch.Start(context.Background(), orchestrator.StartRequest{AppID: "a", Prompt: "say x", Engine: "nope", Sandbox: "local"})
	assert.Equal(t, core.CodeEngineUnavailable, core.CodeOf(err))
	_, err = h.orch.Start(context.Background(), orchestrator.StartRequest{AppID: "a", Prompt: "say x", Engine: "mock", Sandbox: "nope"})
	assert.Equal(t, core.CodeSandboxRequired, core.CodeOf(err))
}
