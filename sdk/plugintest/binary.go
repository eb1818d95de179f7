package plugintest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
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
func SandboxBinary(t testing.TB, cmd *exec.Cmd, config json.RawMessage) (*sandbox.Client, *os.Process) {
	t.Helper()
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
