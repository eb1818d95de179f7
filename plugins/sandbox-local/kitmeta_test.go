package local

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/sandboxtest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sandbox kit's own tests, as the engine and toolpack kits have: the
// real local backend with one rule broken at a time must fail the kit, in
// the subtest that checks that rule. They live here rather than in
// sdk/sandboxtest because the sdk may not import a backend.

// brokenProvider is the local backend breaking the rule broken names.
type brokenProvider struct {
	*Provider
	broken string
}

func (b brokenProvider) Create(ctx context.Context, spec sandbox.CreateSpec) (sandbox.Info, error) {
	if b.broken == "create_drops_files" && len(spec.Files) > 0 {
		spec.Files = spec.Files[1:]
	}
	return b.Provider.Create(ctx, spec)
}

func (b brokenProvider) Stop(ctx context.Context, id string) error {
	if b.broken == "stop_keeps" {
		return nil
	}
	return b.Provider.Stop(ctx, id)
}

func (b brokenProvider) Snapshot(ctx context.Context, id string, exclude []string, emit func(sandbox.SnapshotEntry) error) error {
	first := true
	return b.Provider.Snapshot(ctx, id, exclude, func(e sandbox.SnapshotEntry) error {
		if b.broken == "snapshot_drops" && first {
			first = false
			return nil
		}
		return emit(e)
	})
}

// SnapshotSince is the path the gRPC server takes for a ChangeTracker.
func (b brokenProvider) SnapshotSince(ctx context.Context, id string, exclude []string, since string, emit func(sandbox.SnapshotEntry) error) (string, error) {
	first := true
	return b.Provider.SnapshotSince(ctx, id, exclude, since, func(e sandbox.SnapshotEntry) error {
		if b.broken == "snapshot_drops" && first {
			first = false
			return nil
		}
		return emit(e)
	})
}

// Settled vouches for the sandbox even while a process runs in it.
func (b brokenProvider) Settled(id, generation string) bool {
	if b.broken == "settles_always" {
		return true
	}
	return b.Provider.Settled(id, generation)
}

func (b brokenProvider) Workspace(ctx context.Context, id string) (workspace.Workspace, error) {
	ws, err := b.Provider.Workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	svc, _ := ws.(workspace.Services)
	return brokenWorkspace{Workspace: ws, Services: svc, broken: b.broken}, nil
}

// brokenWorkspace breaks the file and exec API.
type brokenWorkspace struct {
	workspace.Workspace
	workspace.Services
	broken string
}

func (w brokenWorkspace) ReadFile(ctx context.Context, path string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	if w.broken == "escape" && (filepath.IsAbs(path) || strings.Contains(path, "..")) {
		b, err := os.ReadFile(path)
		return b, workspace.FileInfo{Path: path, Size: int64(len(b))}, err
	}
	return w.Workspace.ReadFile(ctx, path, opts)
}

func (w brokenWorkspace) Exec(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	res, err := w.Workspace.Exec(ctx, req)
	if w.broken == "exit_code_lost" {
		res.ExitCode = 0
	}
	return res, err
}

// metaEnv tells TestKitMetaHelper which rule to break.
const metaEnv = "SANDBOXTEST_BROKEN"

// TestKitMetaHelper runs the kit against a broken backend when started by
// TestKitCatchesBrokenSandboxes; the kit failing must fail this process.
func TestKitMetaHelper(t *testing.T) {
	broken := os.Getenv(metaEnv)
	if broken == "" {
		t.Skip("helper for TestKitCatchesBrokenSandboxes")
	}
	sandboxtest.Run(t, func(t *testing.T) *sandbox.Client {
		cfg, err := json.Marshal(Config{Root: filepath.Join(reachableDir(t), "sandboxes")})
		require.NoError(t, err)
		return plugintest.Sandbox(t, brokenProvider{Provider: testProvider(t), broken: broken}, cfg)
	}, sandboxtest.Options{LocalProcesses: true})
}

// TestKitCatchesBrokenSandboxes: each broken backend fails the kit in the
// subtest of the rule it breaks.
func TestKitCatchesBrokenSandboxes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child test process per case")
	}
	cases := map[string]string{
		"create_drops_files": "--- FAIL: TestKitMetaHelper/create_and_read_back",
		"stop_keeps":         "--- FAIL: TestKitMetaHelper/stop",
		"snapshot_drops":     "--- FAIL: TestKitMetaHelper/snapshot",
		"escape":             "--- FAIL: TestKitMetaHelper/confinement",
		"exit_code_lost":     "--- FAIL: TestKitMetaHelper/exec",
		"settles_always":     "--- FAIL: TestKitMetaHelper/settled_only_when_nothing_runs",
	}
	for broken, want := range cases {
		t.Run(broken, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKitMetaHelper$", "-test.v")
			cmd.Env = append(os.Environ(), metaEnv+"="+broken)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the kit passed a sandbox that breaks %q:\n%s", broken, out)
			assert.Contains(t, string(out), want, "the kit failed %q elsewhere than in its rule's check", broken)
		})
	}
}
