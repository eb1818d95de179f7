// Package sdk is what an agenthost plugin's main calls: ServeEngine,
// ServeSandbox or ServeToolpack. The contracts live in the sub-packages
// engine, sandbox, toolpack and workspace; conformance kits in enginetest,
// sandboxtest and toolpacktest; an in-process harness in plugintest.
package sdk

import (
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/toolpack"
	goplugin "github.com/hashicorp/go-plugin"
)

// ServeEngine serves an engine plugin until the host ends the process.
func ServeEngine(e engine.Engine) {
	serve(e.Info().Name, plugin.KindEngine, &engine.GRPCPlugin{Impl: e})
}

// ServeSandbox serves a sandbox plugin until the host ends the process.
func ServeSandbox(p sandbox.Provider) {
	gp := &sandbox.GRPCPlugin{Impl: p}
	defer gp.Close()
	serve(p.Info().Name, plugin.KindSandbox, gp)
}

// ServeToolpack serves a toolpack plugin until the host ends the process.
func ServeToolpack(t toolpack.Toolpack) {
	serve(t.Info().Name, plugin.KindToolpack, &toolpack.GRPCPlugin{Impl: t})
}

func serve(name string, kind plugin.Kind, p goplugin.Plugin) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: plugin.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{
			plugin.APIVersion: {string(kind): p},
		},
		GRPCServer: plugin.NewPluginGRPCServer,
		Logger:     plugin.Logger(name),
	})
}

// HostPluginSet is the plugin set the host dispenses from: one entry per
// kind, with no implementation (the host only holds clients).
func HostPluginSet() map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		plugin.APIVersion: {
			string(plugin.KindEngine):   &engine.GRPCPlugin{},
			string(plugin.KindSandbox):  &sandbox.GRPCPlugin{},
			string(plugin.KindToolpack): &toolpack.GRPCPlugin{},
		},
	}
}
