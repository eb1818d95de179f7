package plugintest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// SandboxBinary launches a built sandbox plugin binary as the host does
// (gRPC only, AutoMTLS, none of the test's environment beyond cmd.Env),
// configures it with config and returns its client and process (to kill it
// as a crash would). The plugin is killed when the test ends. For tests
// that need the real process: crashes, signals, what its children can see.
// Unless cmd.Env names a PLUGIN_UNIX_SOCKET_DIR, the plugin makes its
// sockets in a folder of the test's own, removed when the test ends, so
// that one killed with SIGKILL leaves none behind in the temporary folder.
func SandboxBinary(t testing.TB, cmd *exec.Cmd, config json.RawMessage) (*sandbox.Client, *os.Process) {
	t.Helper()
	if !namesSocketDir(cmd.Env) {
		var runAs *syscall.Credential
		if cmd.SysProcAttr != nil {
			runAs = cmd.SysProcAttr.Credential
		}
		cmd.Env = append(cmd.Env, SocketDirEnv+"="+SocketDir(t, runAs))
	}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: sdk.HostPluginSet(),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
		GRPCDialOptions:  plugin.GRPCDialOptions(),
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	raw, err := rpc.Dispense(string(plugin.KindSandbox))
	if err != nil {
		t.Fatalf("dispense %s: %v", cmd.Path, err)
	}
	c := raw.(*sandbox.Client)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Configure(ctx, config); err != nil {
		t.Fatalf("configure %s: %v", cmd.Path, err)
	}
	return c, cmd.Process
}

// SocketDirEnv is the variable that tells a go-plugin plugin where to make
// its Unix sockets.
const SocketDirEnv = "PLUGIN_UNIX_SOCKET_DIR"

// SocketDir makes a folder for a plugin's sockets, owned by runAs's user
// (nil: the test's own), and removes it when the test ends (after the
// plugins SandboxBinary started in the test are killed). Its path is
// short, unlike t.TempDir's: a Unix socket's path has at most 107 bytes.
// Tests that start several plugins which must share the folder pass it to
// each in cmd.Env, as SocketDirEnv.
func SocketDir(t testing.TB, runAs *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugintest-sock-")
	if err != nil {
		t.Fatalf("make a socket folder: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if runAs != nil {
		if err := os.Chown(dir, int(runAs.Uid), int(runAs.Gid)); err != nil {
			t.Fatalf("give the socket folder to uid %d: %v", runAs.Uid, err)
		}
	}
	return dir
}

func namesSocketDir(env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, SocketDirEnv+"=") {
			return true
		}
	}
	return false
}
