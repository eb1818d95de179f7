// Package noopplugin is the smallest plugin the host can launch, for the
// benchmark floor of one bare plugin hop: it speaks go-plugin's real
// handshake over gRPC with our handshake config, server options and logger,
// and serves nothing of its own. Its one unary no-op method is the gRPC
// health check go-plugin registers on every plugin's server (a second
// registration of the same service would panic), so a call pays only what
// every plugin call pays: go-plugin's connection, AutoMTLS, gRPC framing.
// Only benchmarks use it.
package noopplugin

import (
	"context"

	"github.com/agenthost/agenthost/sdk/plugin"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Kind is the name the no-op plugin is dispensed by.
const Kind = "noop"

// Plugin is the no-op plugin on both sides: the server registers nothing
// beyond go-plugin's own services; the client is a health client on the
// plugin's connection.
type Plugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

// GRPCServer registers nothing: go-plugin has registered the health
// service already.
func (Plugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }

// GRPCClient returns a healthpb.HealthClient on the plugin's connection.
func (Plugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return healthpb.NewHealthClient(conn), nil
}

// PluginSet is the set both sides use, under our API version.
func PluginSet() map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{plugin.APIVersion: {Kind: Plugin{}}}
}

// Serve serves the no-op plugin as sdk.ServeEngine serves an engine, until
// the host ends the process.
func Serve() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: PluginSet(),
		GRPCServer:       plugin.NewGRPCServer,
		Logger:           plugin.Logger(Kind),
	})
}
