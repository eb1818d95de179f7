package local

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDirectWorkspaceNeedsAGrant: the plugin process serves its workspaces
// on a socket of its own (what toolpacks use instead of the host's relay),
// and there only to a call that carries a grant for that very sandbox,
// signed with the key of the host's latest ServeDirect and not expired; a
// grant the toolpack side released is refused before it leaves.
func TestDirectWorkspaceNeedsAGrant(t *testing.T) {
	ctx := context.Background()
	p := launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, nil, nil)
	for _, id := range []string{"box", "other"} {
		_, err := p.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "a.txt", Data: []byte("in " + id)}}})
		require.NoError(t, err)
	}
	_, ok := p.Direct("box", time.Now().Add(time.Minute))
	require.False(t, ok, "no grant before the plugin serves directly")
	require.NoError(t, p.EnableDirect(ctx))
	grant, ok := p.Direct("box", time.Now().Add(time.Minute))
	require.True(t, ok)

	fi, err := os.Stat(filepath.Dir(grant.Address))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "only the host's user reaches the socket")

	var conns workspace.DirectConns
	t.Cleanup(conns.Close)
	read := func(d workspace.Direct) (string, error) {
		ws, release, err := conns.Open(d)
		require.NoError(t, err)
		defer release()
		data, _, err := ws.ReadFile(ctx, "a.txt", workspace.ReadOptions{})
		return string(data), err
	}
	got, err := read(grant)
	require.NoError(t, err)
	assert.Equal(t, "in box", got)

	// A write there is the sandbox's, as the host sees it.
	ws, release, err := conns.Open(grant)
	require.NoError(t, err)
	_, err = ws.WriteFile(ctx, "b.txt", []byte("direct"), 0o644)
	require.NoError(t, err)
	data, _, err := p.Workspace("box").ReadFile(ctx, "b.txt", workspace.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "direct", string(data))
	release()
	_, _, err = ws.ReadFile(ctx, "a.txt", workspace.ReadOptions{})
	assert.True(t, plugin.HasCode(err, plugin.CodePermissionDenied), "a released grant: %v", err)

	denied := func(name string, d workspace.Direct) {
		t.Helper()
		got, err := read(d)
		assert.True(t, plugin.HasCode(err, plugin.CodePermissionDenied), "%s: read %q, %v", name, got, err)
	}
	other, _ := p.Direct("other", time.Now().Add(time.Minute))
	denied("another sandbox's grant", workspace.Direct{Address: grant.Address, WorkspaceID: "box", Token: other.Token})
	expired, _ := p.Direct("box", time.Now().Add(-time.Second))
	denied("an expired grant", expired)
	denied("no token", workspace.Direct{Address: grant.Address, WorkspaceID: "box"})
	denied("a forged signature", workspace.Direct{Address: grant.Address, WorkspaceID: "box", Token: grant.Token[:len(grant.Token)-4] + "AAAA"})
	denied("garbage", workspace.Direct{Address: grant.Address, WorkspaceID: "box", Token: "not.a-token"})

	// The host's ServeDirect again (a new key) voids every earlier grant
	// and keeps the socket.
	require.NoError(t, p.EnableDirect(ctx))
	again, _ := p.Direct("box", time.Now().Add(time.Minute))
	assert.Equal(t, grant.Address, again.Address)
	denied("a grant under the old key", grant)
	got, err = read(again)
	require.NoError(t, err)
	assert.Equal(t, "in box", got)
}

// TestDirectSocketOutOfCommandsReach: run as root, a sandbox's commands
// (their own uid) cannot even reach the socket's folder.
func TestDirectSocketOutOfCommandsReach(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	p := launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, nil, nil)
	_, err := p.Create(ctx, sandbox.CreateSpec{ID: "box"})
	require.NoError(t, err)
	require.NoError(t, p.EnableDirect(ctx))
	grant, ok := p.Direct("box", time.Now().Add(time.Minute))
	require.True(t, ok)
	res := run(t, p.Client, "box", "ls", filepath.Dir(grant.Address))
	assert.NotEqual(t, 0, res.ExitCode, "a command listed the socket's folder: %s", res.Stdout)
	assert.Contains(t, string(res.Stderr), "Permission denied")
}

// TestDirectSocketFolderOfAKilledPluginIsSwept: a plugin SIGKILLed cannot
// remove its socket's folder; the next plugin to serve directly does.
func TestDirectSocketFolderOfAKilledPluginIsSwept(t *testing.T) {
	ctx := context.Background()
	// One socket folder for both plugins, as one host gives its plugins.
	sockets := []string{plugintest.SocketDirEnv + "=" + plugintest.SocketDir(t, nil)}
	first := launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, sockets, nil)
	require.NoError(t, first.EnableDirect(ctx))
	grant, ok := first.Direct("box", time.Now().Add(time.Minute))
	require.True(t, ok)
	require.NoError(t, syscall.Kill(first.pid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return syscall.Kill(first.pid, 0) == syscall.ESRCH }, 10*time.Second, 20*time.Millisecond)
	_, err := os.Stat(filepath.Dir(grant.Address))
	require.NoError(t, err, "a killed plugin leaves its folder")

	second := launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, sockets, nil)
	require.NoError(t, second.EnableDirect(ctx))
	_, err = os.Stat(filepath.Dir(grant.Address))
	assert.True(t, os.IsNotExist(err), "the next plugin swept it: %v", err)
}
