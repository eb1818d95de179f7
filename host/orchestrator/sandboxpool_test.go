package orchestrator_test

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatRun starts a run of chat session chat from revision base with files.
func (h *host) chatRun(t *testing.T, chat, base string, files map[string]string, prompt string) *core.Run {
	t.Helper()
	var fs []sandbox.File
	for p, c := range files {
		fs = append(fs, sandbox.File{Path: p, Data: []byte(c)})
	}
	run, err := h.orch.Start(context.Background(), orchestrator.StartRequest{
		AppID: "app_test", ChatSessionID: chat, BaseRevisionID: base, Prompt: prompt, Engine: "mock", Sandbox: "local", Files: fs,
	})
	require.NoError(t, err)
	return h.wait(t, run.ID)
}

// commandOutput returns the stdout of the run's only run_command call.
func commandOutput(t *testing.T, h *host, runID string) (string, int) {
	t.Helper()
	for _, e := range h.store.Events(runID) {
		if e.Event != core.EventToolCompleted {
			continue
		}
		var p struct {
			Output struct {
				Stdout   string `json:"stdout"`
				ExitCode int    `json:"exit_code"`
			} `json:"output"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		return p.Output.Stdout, p.Output.ExitCode
	}
	t.Fatalf("run %s ran no command", runID)
	return "", 0
}

func poolHost(t *testing.T, ttl time.Duration) *host {
	configs := defaultConfigs(t)
	configs[2].Permissions = map[string]plugin.Permission{"coding_agent_run_command": plugin.PermissionAllow}
	return newHost(t, configs, orchestrator.Options{SandboxReuse: true, SandboxTTL: ttl})
}

const (
	warmUp = `tool coding_agent_run_command {"command":"mkdir -p node_modules/dep && echo warm > node_modules/dep/index.js && echo stray > stray.txt"}`
	probe  = `tool coding_agent_run_command {"command":"cat a.txt; ls; cat node_modules/dep/index.js"}`
)

// TestChatSandboxIsReusedWarm: a chat's second run gets the first run's
// sandbox, installed dependencies included, with its app files refreshed to
// the second run's base (changed written, removed deleted).
func TestChatSandboxIsReusedWarm(t *testing.T) {
	h := poolHost(t, time.Hour)
	first := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, warmUp)
	require.Equal(t, core.RunCompleted, first.Status, first.ErrorMessage)

	second := h.chatRun(t, "c1", "r2", map[string]string{"a.txt": "two\n", "b.txt": "b\n"}, probe)
	require.Equal(t, core.RunCompleted, second.Status, second.ErrorMessage)
	assert.Equal(t, first.SandboxID, second.SandboxID, "the same sandbox")
	out, code := commandOutput(t, h, second.ID)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "warm\n", "installed dependencies survive")
	assert.Contains(t, out, "two\n", "app files refreshed to the run's base")
	assert.Contains(t, out, "b.txt")
	assert.NotContains(t, out, "stray.txt", "files the base does not have are removed")

	// Another chat gets its own.
	other := h.chatRun(t, "c2", "r2", map[string]string{"a.txt": "two\n"}, probe)
	assert.NotEqual(t, first.SandboxID, other.SandboxID)
	_, code = commandOutput(t, h, other.ID)
	assert.NotEqual(t, 0, code, "a fresh sandbox has no node_modules")
}

// TestIdleSandboxExpires: past the TTL the chat's next run gets a fresh
// sandbox.
func TestIdleSandboxExpires(t *testing.T) {
	h := poolHost(t, 200*time.Millisecond)
	first := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, warmUp)
	require.Equal(t, core.RunCompleted, first.Status)
	time.Sleep(700 * time.Millisecond) // several reaper rounds past the TTL
	second := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, probe)
	require.Equal(t, core.RunCompleted, second.Status)
	assert.NotEqual(t, first.SandboxID, second.SandboxID)
	out, code := commandOutput(t, h, second.ID)
	assert.NotEqual(t, 0, code)
	assert.NotContains(t, out, "warm")
}

// TestFailedRunSandboxIsNotKept: a run that fails leaves no warm sandbox.
func TestFailedRunSandboxIsNotKept(t *testing.T) {
	h := poolHost(t, time.Hour)
	first := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, warmUp+"\nfail BOOM it broke")
	require.Equal(t, core.RunFailed, first.Status)
	second := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, probe)
	require.Equal(t, core.RunCompleted, second.Status)
	assert.NotEqual(t, first.SandboxID, second.SandboxID)
}

// TestGoneSandboxIsReplacedAndSaid: a kept sandbox that did not survive
// its sandbox plugin's death is replaced by a fresh one, and the run's
// history says so. (While the process that held it runs, a backend with
// stable sandboxes is trusted to still hold it: see
// plugin.CapabilityStableSandboxes.)
func TestGoneSandboxIsReplacedAndSaid(t *testing.T) {
	h := poolHost(t, time.Hour)
	first := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, warmUp)
	require.Equal(t, core.RunCompleted, first.Status)
	client, _, err := h.mgr.Sandbox("local")
	require.NoError(t, err)
	require.NoError(t, client.Stop(context.Background(), first.SandboxID), "its folder goes")
	held := pidOf(t, h, "local")
	require.NoError(t, syscall.Kill(held, syscall.SIGKILL), "and so does the process that held it")
	h.waitRelaunched(t, "local", held)

	second := h.chatRun(t, "c1", "r1", map[string]string{"a.txt": "one\n"}, "history")
	require.Equal(t, core.RunCompleted, second.Status, second.ErrorMessage)
	assert.NotEqual(t, first.SandboxID, second.SandboxID)
	assert.Equal(t, "history=1 system", second.OutputText, "the run is told its sandbox is new")
}

// resultFiles is a run's result as path → content.
func resultFiles(h *host, runID string) map[string]string {
	out := map[string]string{}
	for _, f := range h.store.Result(runID) {
		out[f.Path] = string(f.Data)
	}
	return out
}

// TestWarmSandboxSnapshotsFollowChanges: snapshots taken since the last
// one (at create, at a saved state, at the result, across the runs of a
// chat) still give whole, exact results: changed, new and deleted files,
// and files untouched since the sandbox was created.
func TestWarmSandboxSnapshotsFollowChanges(t *testing.T) {
	h := poolHost(t, time.Hour)
	base := map[string]string{"a.txt": "A", "b.txt": "B", "c.txt": "C"}
	first := h.chatRun(t, "c1", "r1", base,
		`tool coding_agent_run_command {"command":"printf B2 > b.txt && rm c.txt && echo d > d.txt"}`+"\ncheckpoint\n"+
			`tool coding_agent_run_command {"command":"echo e > e.txt"}`+"\nsay ok")
	require.Equal(t, core.RunCompleted, first.Status, first.ErrorMessage)
	assert.Equal(t, map[string]string{"a.txt": "A", "b.txt": "B2", "d.txt": "d\n", "e.txt": "e\n"}, resultFiles(h, first.ID))

	// Refreshed to the base (d and e removed, b and c put back), then
	// changed again.
	second := h.chatRun(t, "c1", "r1", base, `tool coding_agent_run_command {"command":"rm a.txt && printf X > b.txt"}`+"\nsay ok")
	require.Equal(t, core.RunCompleted, second.Status, second.ErrorMessage)
	assert.Equal(t, first.SandboxID, second.SandboxID)
	assert.Equal(t, map[string]string{"b.txt": "X", "c.txt": "C"}, resultFiles(h, second.ID))

	third := h.chatRun(t, "c1", "r1", base, "say nothing changed")
	require.Equal(t, core.RunCompleted, third.Status, third.ErrorMessage)
	assert.Equal(t, base, resultFiles(h, third.ID))
}
