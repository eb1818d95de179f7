package local

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countScans makes every /proc scan for a sandbox's leftovers count in the
// returned counter, for the rest of the test.
func countScans(t *testing.T) *atomic.Int32 {
	var scans atomic.Int32
	real := anyUID
	anyUID = func(match func(int) bool) bool { scans.Add(1); return real(match) }
	t.Cleanup(func() { anyUID = real })
	return &scans
}

// snapshotSince takes a snapshot of sandbox id since generation since and
// returns the new generation.
func snapshotSince(t *testing.T, p *Provider, id, since string) string {
	t.Helper()
	gen, err := p.SnapshotSince(context.Background(), id, nil, since, func(sandbox.SnapshotEntry) error { return nil })
	require.NoError(t, err)
	return gen
}

// TestFreshSandboxSnapshotsWithoutAProcessScan: a sandbox this plugin just
// made has a uid nothing runs as, so its snapshots skip the walk without
// reading every process's status, until a command runs; then one scan
// vouches for the quiet again, and the next snapshot needs none.
func TestFreshSandboxSnapshotsWithoutAProcessScan(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	scans := countScans(t)
	p := configured(t, filepath.Join(reachableDir(t), "sandboxes"))
	info, err := p.Create(ctx, sandbox.CreateSpec{ID: "box", Files: []sandbox.File{{Path: "a.txt", Data: []byte("a")}}})
	require.NoError(t, err)
	gen := snapshotSince(t, p, "box", info.SnapshotGeneration)
	gen = snapshotSince(t, p, "box", gen)
	assert.Zero(t, scans.Load(), "no command ran as the new uid: nothing to look for")

	ws, err := p.Workspace(ctx, "box")
	require.NoError(t, err)
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}, Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	gen = snapshotSince(t, p, "box", gen)
	assert.Equal(t, int32(1), scans.Load(), "after a command, a scan vouches that it left nothing")
	snapshotSince(t, p, "box", gen)
	assert.Equal(t, int32(1), scans.Load(), "and holds until the next command")
}

// TestUIDKeptWhileItsProcessesLive: Stop gives a sandbox's uid back only
// once a kill pass found nothing running as it; a uid whose processes
// outran every pass stays claimed, so no new sandbox starts with them.
func TestUIDKeptWhileItsProcessesLive(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	root := filepath.Join(reachableDir(t), "sandboxes")
	p := configured(t, root)
	stopWith := func(id string, cleared bool) int {
		_, err := p.Create(ctx, sandbox.CreateSpec{ID: id})
		require.NoError(t, err)
		uid := workspaceUID(p.config(), filepath.Join(root, id))
		require.NotZero(t, uid, "the sandbox has a uid of its own")
		real := killUIDs
		killUIDs = func(match func(int) bool) (int, bool) {
			n, _ := real(match)
			return n, cleared
		}
		defer func() { killUIDs = real }()
		require.NoError(t, p.Stop(ctx, id))
		return uid
	}

	uid := stopWith("clean", true)
	_, claimed := claimOwner(uid)
	assert.False(t, claimed, "a uid nothing runs as is given back")

	uid = stopWith("stubborn", false)
	t.Cleanup(func() { releaseUID(uid, root) })
	owner, claimed := claimOwner(uid)
	assert.True(t, claimed, "a uid something may still run as stays claimed")
	assert.Equal(t, root, owner)
}
