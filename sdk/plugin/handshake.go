package plugin

import (
	"os"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Handshake is the go-plugin handshake every agenthost plugin uses. The magic
// cookie only stops a plugin binary from being run by hand by mistake; it is
// not a security measure (checksums and mTLS are).
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  APIVersion,
	MagicCookieKey:   "AGENTHOST_PLUGIN",
	MagicCookieValue: "a7c1d9e4-agenthost-plugin-v1",
}

// MaxMessageBytes raises gRPC's 4 MiB default so that a chunk, a large tool
// output or a snapshot manifest never hits the limit; files themselves are
// still streamed in chunks of ChunkBytes.
const MaxMessageBytes = 64 << 20

// ChunkBytes is the size of one streamed file chunk: big enough to amortise
// per-message cost, small enough to keep memory flat.
const ChunkBytes = 256 << 10

// GRPCServerOptions are the options plugin and host callback servers use.
func GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.InitialWindowSize(streamWindowBytes),
		grpc.InitialConnWindowSize(connWindowBytes),
		grpc.NumStreamWorkers(streamWorkers),
	}
}

// streamWorkers is how many goroutines each plugin and callback server
// keeps to serve calls. gRPC otherwise starts a goroutine per call, whose
// stack then grows, by copying, to the handler's depth: 6–8% of a plugin's
// CPU in a tool call's profile. A worker keeps its grown stack for the next
// call (gRPC renews it every 65,536). Calls past the pool, and long
// streams that hold a worker (a run's events), get their own goroutine as
// before. A tool call costs 5% less CPU over the host and its plugins
// (BenchmarkToolCallRoundTrip/memory, six paired runs).
const streamWorkers = 8

// Flow-control windows of every plugin connection. Fixed windows turn off
// gRPC's bandwidth estimator, which pings the peer on most data frames:
// an extra write and read on each side of most small calls, on a local
// socket whose bandwidth is never in doubt. 4 MiB per stream and 16 MiB
// per connection keep a file's chunks (plugin.ChunkBytes) streaming
// without waiting for window updates.
const (
	streamWindowBytes = 4 << 20
	connWindowBytes   = 16 << 20
)

// GRPCDialOptions are the options plugin and host callback clients use.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(MaxMessageBytes),
		grpc.MaxCallSendMsgSize(MaxMessageBytes),
	), grpc.WithInitialWindowSize(streamWindowBytes), grpc.WithInitialConnWindowSize(connWindowBytes)}
}

// NewGRPCServer builds a gRPC server with the go-plugin options plus ours.
func NewGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, GRPCServerOptions()...)...)
}

// Logger returns the hclog JSON logger on stderr that plugins log with; the
// host parses these lines and re-logs them under the plugin's name. Nothing
// may be written to stdout, which carries the handshake.
func Logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(envOr("AGENTHOST_PLUGIN_LOG_LEVEL", "info")),
		Output:     os.Stderr,
		JSONFormat: true,
	})
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
