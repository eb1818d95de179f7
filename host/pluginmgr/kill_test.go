package pluginmgr

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/noopplugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/require"
)

// TestKillFrozenPlugin: a plugin that cannot answer go-plugin's shutdown
// request (here stopped with SIGSTOP, as a wedged one would be) is killed
// once the grace runs out, rather than holding the host's shutdown forever.
func TestKillFrozenPlugin(t *testing.T) {
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr})
	// SIGKILL leaves the plugin's socket: in a folder of the test's own.
	cmd := pluginCmd(noopBinary(t), nil, []string{plugintest.SocketDirEnv + "=" + plugintest.SocketDir(t, nil)})
	client := goplugin.NewClient(clientConfig(cmd, noopplugin.PluginSet(), nil, log, 30*time.Second))
	t.Cleanup(client.Kill)
	_, err := client.Client()
	require.NoError(t, err)
	pid := cmd.Process.Pid
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })

	killed := make(chan struct{})
	go func() {
		(&instance{client: client, pgid: pid}).kill()
		close(killed)
	}()
	select {
	case <-killed:
	case <-time.After(killGrace + time.Minute): // liveness, not timing: without the bound it never returns
		t.Fatal("kill did not return for a frozen plugin")
	}
	require.True(t, client.Exited(), "the plugin process is gone")
	require.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "no process %d left", pid)
}
