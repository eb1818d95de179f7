// Package plugintest connects a plugin implementation to its host-side client
// in-process, over real gRPC (go-plugin's test connection), so plugin authors
// and the conformance kits test exactly what crosses the wire without
// building a binary.
package plugintest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	goplugin "github.com/hashicorp/go-plugin"
)

func dispense(t testing.TB, kind plugin.Kind, p goplugin.Plugin) any {
	t.Helper()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{string(kind): p})
	// Close asks the server to shut down through go-plugin's controller;
	// stopping the server as well races inside go-plugin.
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(string(kind))
	if err != nil {
		t.Fatalf("dispense %s: %v", kind, err)
	}
	return raw
}

// Engine connects impl and configures it with config and services.
func Engine(t testing.TB, impl engine.Engine, config json.RawMessage, services engine.HostServices) *engine.Client {
	t.Helper()
	c := dispense(t, plugin.KindEngine, &engine.GRPCPlugin{Impl: impl}).(*engine.Client)
	if err := c.Configure(context.Background(), config, services); err != nil {
		t.Fatalf("configure engine: %v", err)
	}
	return c
}

// Sandbox connects impl and configures it with config.
func Sandbox(t testing.TB, impl sandbox.Provider, config json.RawMessage) *sandbox.Client {
	t.Helper()
	c := dispense(t, plugin.KindSandbox, &sandbox.GRPCPlugin{Impl: impl}).(*sandbox.Client)
	if err := c.Configure(context.Background(), config); err != nil {
		t.Fatalf("configure sandbox: %v", err)
	}
	return c
}

// Toolpack connects impl and configures it; its calls reach workspaces
// through resolve.
func Toolpack(t testing.TB, impl toolpack.Toolpack, config json.RawMessage, resolve workspace.Resolver) *toolpack.Client {
	t.Helper()
	c := dispense(t, plugin.KindToolpack, &toolpack.GRPCPlugin{Impl: impl}).(*toolpack.Client)
	if err := c.Configure(context.Background(), config, resolve); err != nil {
		t.Fatalf("configure toolpack: %v", err)
	}
	return c
}
