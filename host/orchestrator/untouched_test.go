package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/orchestrator/orchestratortest"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotCounts counts the orchestrator's snapshots by kind.
type snapshotCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *snapshotCounts) count(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[kind]++
}

func (c *snapshotCounts) of(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[kind]
}

func (c *snapshotCounts) skipped() int { return c.of(orchestrator.SnapshotSkipped) }

// chainedResults keeps results in memory and applies each as the app's
// next revision, named after its run, as the real applier does: the next
// turn of the chat starts from it, and finds its warm sandbox holding it.
type chainedResults struct{ *orchestratortest.Memory }

func (c chainedResults) ApplyResult(ctx context.Context, run *core.Run, res orchestrator.RunResult) (orchestrator.ApplyOutcome, error) {
	if _, err := c.Memory.ApplyResult(ctx, run, res); err != nil {
		return orchestrator.ApplyOutcome{}, err
	}
	return orchestrator.ApplyOutcome{RevisionID: "rev-" + run.ID, Result: []byte(`{"kind":"applied"}`)}, nil
}

// TestUntouchedSandboxIsNotSnapshottedAgain: in a chat's warm sandbox
// (real local sandbox plugin), a turn that only talks after a settled
// snapshot takes its result from that snapshot without asking the backend,
// and gets the same files; a turn whose command wrote is snapshotted; and
// a process a command left behind keeps every later turn asking, so that
// what it writes after the turns that started it (here once the test
// lets it) is in the next result. After the plugin is relaunched, the
// next turn asks again.
func TestUntouchedSandboxIsNotSnapshottedAgain(t *testing.T) {
	root := testenv.LocalSandboxRoot(t)
	configs := defaultConfigs(t)
	configs[1].Config = fmt.Appendf(nil, `{"root":%q}`, root)
	configs[2].Permissions = map[string]plugin.Permission{"coding_agent_run_command": plugin.PermissionAllow}
	counts := &snapshotCounts{n: map[string]int{}}
	store := orchestratortest.NewMemory()
	h := launchHost(t, configs, orchestrator.Options{SandboxReuse: true, SandboxTTL: time.Hour, OnSnapshot: counts.count},
		store, store, chainedResults{store})
	h.store = store
	// As root the local backend runs each sandbox's commands as a uid of
	// its own and can vouch that none is left; at its own uid it never
	// does, and nothing is skipped.
	vouches := testenv.AsRoot(t)
	base := "r1"
	next := func(prompt string) *core.Run {
		t.Helper()
		run := h.chatRun(t, "c1", base, map[string]string{"a.txt": "A"}, prompt)
		require.Equal(t, core.RunCompleted, run.Status, run.ErrorMessage)
		base = "rev-" + run.ID
		return run
	}
	turn := func(prompt string, wantFiles map[string]string, wantSkipped bool) *core.Run {
		t.Helper()
		before := counts.skipped()
		run := next(prompt)
		assert.Equal(t, wantFiles, resultFiles(h, run.ID), "%q", prompt)
		skipped := counts.skipped() - before
		assert.Equal(t, wantSkipped && vouches, skipped == 1, "%q: skipped %d", prompt, skipped)
		return run
	}
	files := map[string]string{"a.txt": "A", "b.txt": "b\n"}
	first := turn(`tool coding_agent_run_command {"command":"echo b > b.txt"}`+"\nsay ok", files, false)
	turn("say nothing to do", files, true)
	turn("say still nothing", files, true)

	files["c.txt"] = "c\n"
	turn(`tool coding_agent_run_command {"command":"echo c > c.txt"}`+"\nsay ok", files, false)
	turn("say done", files, true)

	// A process left behind, waiting for a file the test writes.
	turn(`tool coding_agent_run_command {"command":"(while [ ! -f go ]; do sleep 0.05; done; echo late > late.txt) >/dev/null 2>&1 &"}`+"\nsay ok", files, false)
	turn("say waiting", files, false)
	workspaceDir := filepath.Join(root, first.SandboxID, "workspace")
	require.NoError(t, os.WriteFile(filepath.Join(workspaceDir, "go"), nil, 0o644))
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(workspaceDir, "late.txt"))
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the process left behind never wrote")
	files["go"], files["late.txt"] = "", "late\n"
	// The process may still be on its way out: this turn asks, and the
	// next one skips once a snapshot found it gone.
	require.Eventually(t, func() bool {
		before := counts.skipped()
		run := next("say and now?")
		require.Equal(t, files, resultFiles(h, run.ID), "what the process wrote is in the result")
		return !vouches || counts.skipped() > before
	}, 20*time.Second, time.Millisecond, "the sandbox never settled after its last process ended")
	assert.NotZero(t, counts.of(orchestrator.SnapshotChanges), "the other turns asked for changes")

	// The plugin relaunched: what its last process vouched for is not
	// taken on trust; the next snapshot asks the new one.
	held := pidOf(t, h, "local")
	require.NoError(t, syscall.Kill(held, syscall.SIGKILL))
	h.waitRelaunched(t, "local", held)
	again := turn("say after the relaunch", files, false)
	assert.Equal(t, first.SandboxID, again.SandboxID, "the sandbox outlived its plugin")
	turn("say settled again", files, true)
}
