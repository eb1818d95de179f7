package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nopWorkspace is a workspace whose calls do nothing; with services.
type nopWorkspace struct{ workspace.Workspace }

func (nopWorkspace) WriteFile(context.Context, string, []byte, uint32) (workspace.FileInfo, error) {
	return workspace.FileInfo{}, nil
}
func (nopWorkspace) Remove(context.Context, string, bool) error   { return nil }
func (nopWorkspace) Rename(context.Context, string, string) error { return nil }
func (nopWorkspace) Exec(context.Context, workspace.ExecRequest) (workspace.ExecResult, error) {
	return workspace.ExecResult{}, nil
}
func (nopWorkspace) ReadFile(context.Context, string, workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	return nil, workspace.FileInfo{}, nil
}
func (nopWorkspace) Stat(context.Context, string) (workspace.FileInfo, error) {
	return workspace.FileInfo{}, nil
}
func (nopWorkspace) List(context.Context, string, workspace.ListOptions) ([]workspace.FileInfo, bool, error) {
	return nil, false, nil
}
func (nopWorkspace) StartService(context.Context, workspace.ServiceSpec) (workspace.ServiceInfo, error) {
	return workspace.ServiceInfo{}, nil
}
func (nopWorkspace) ServiceStatus(context.Context, string) (workspace.ServiceInfo, error) {
	return workspace.ServiceInfo{}, nil
}
func (nopWorkspace) StopService(context.Context, string, time.Duration) error { return nil }

// TestUntouchedAccounting: after a snapshot the backend said was settled,
// the next one is skipped, passing the same files (left-out paths
// included, in path order), until any call that may change files: each
// write, removal, rename, command, service start or stop, a direct grant,
// and a call that was running while the snapshot was asked. Reads do not
// count. A snapshot that was not settled, or failed, is never skipped
// from.
func TestUntouchedAccounting(t *testing.T) {
	o, _ := snapOrch(t)
	kinds := map[string]int{}
	o.opts.OnSnapshot = func(kind string) { kinds[kind]++ }
	ctx := context.Background()
	settled := true
	var during func() // runs while the backend takes the snapshot
	c := &fakeSnapshots{}
	c.ChangesF = func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error) {
		if during != nil {
			during()
		}
		for _, f := range []sandbox.SnapshotFile{sent("a", "A"), {Path: "b", LeftOut: "symlink"}, sent("c", "C")} {
			if err := fn(f); err != nil {
				return sandbox.SnapshotResult{}, err
			}
		}
		return sandbox.SnapshotResult{Generation: "g" + string(rune('0'+len(c.since))), Settled: settled}, nil
	}
	ref := &sandboxRef{client: c, id: "sbx"}
	snap := func() []snapshotFile {
		t.Helper()
		files, err := o.streamSnapshot(ctx, ref)
		require.NoError(t, err)
		return files
	}
	asked := func() int { return len(c.since) }

	first := snap()
	require.Equal(t, 1, asked())
	again := snap()
	assert.Equal(t, 1, asked(), "settled and untouched: not asked")
	assert.Equal(t, first, again, "the same files, the left-out path in its place")
	assert.Equal(t, map[string]int{SnapshotWhole: 1, SnapshotSkipped: 1}, kinds)

	ws := ref.track(nopWorkspace{})
	_, _, _ = ws.ReadFile(ctx, "a", workspace.ReadOptions{})
	_, _ = ws.Stat(ctx, "a")
	_, _, _ = ws.List(ctx, "", workspace.ListOptions{})
	_, _ = ws.(workspace.Services).ServiceStatus(ctx, "dev")
	snap()
	assert.Equal(t, 1, asked(), "reads change nothing")

	for name, call := range map[string]func(){
		"write":         func() { _, _ = ws.WriteFile(ctx, "a", nil, 0o644) },
		"remove":        func() { _ = ws.Remove(ctx, "a", false) },
		"rename":        func() { _ = ws.Rename(ctx, "a", "z") },
		"exec":          func() { _, _ = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}}) },
		"start service": func() { _, _ = ws.(workspace.Services).StartService(ctx, workspace.ServiceSpec{Name: "dev"}) },
		"stop service":  func() { _ = ws.(workspace.Services).StopService(ctx, "dev", 0) },
		"direct grant": func() {
			end := ref.calls.begin() // as sandboxRef.direct counts a grant
			end()
		},
	} {
		n := asked()
		call()
		snap()
		assert.Equal(t, n+1, asked(), "%s: asked", name)
		snap()
		assert.Equal(t, n+1, asked(), "%s: untouched since: skipped", name)
	}
	assert.Equal(t, []string{"dev"}, ref.serviceNames(), "the service started is noted")

	// A call still running as the snapshot is asked, or made while it
	// runs: the next one asks.
	end := ref.calls.begin()
	n := asked()
	snap()
	end()
	snap()
	assert.Equal(t, n+2, asked(), "a call ran through the snapshot")
	during = func() { _, _ = ws.WriteFile(ctx, "a", nil, 0o644) }
	ref.forgetSettled() // so that the backend is asked, and the write made
	snap()
	during = nil
	snap()
	assert.Equal(t, n+4, asked(), "a call made while the snapshot ran")
	snap()
	assert.Equal(t, n+4, asked())

	// Not settled: always asked.
	settled = false
	_, _ = ws.WriteFile(ctx, "a", nil, 0o644)
	snap()
	snap()
	assert.Equal(t, n+6, asked())
	settled = true
	snap()
	snap()
	assert.Equal(t, n+7, asked())

	// A plugin relaunched: the mark is forgotten.
	ref.forgetSettled()
	snap()
	assert.Equal(t, n+8, asked())
}
