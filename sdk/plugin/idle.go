package plugin

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// A plugin that has gone quiet gives its freed memory back to the system.
//
// Go returns a process's freed heap pages only gradually, and sizes what it
// keeps from the heap goal of its last collection; a process that then
// sits idle collects again only every two minutes. So an idle plugin's
// resident memory was wherever the load left its collector: the mock
// engine, with no growth at all, rested at 24.5 MiB after one round of the
// soak test and at 32.8 MiB after the next (which failed the soak's 10%
// check). Once a check finds that no call started since the previous one
// and none is in flight (idleReleaseAfter), a plugin collects and returns
// what is free (releaseMemory), once per quiet spell: an idle plugin then holds
// what it really uses, whatever came before, and a host with many plugins
// waiting for work holds less. A plugin under load never pays for it.

// idleReleaseAfter is how often a plugin checks whether it is quiet: no
// call started since the previous check and none in flight. The first
// check that finds it so releases, within twice this of the last call's
// end.
const idleReleaseAfter = 2 * time.Second

// IdleReleaseWithin is how long after its last call ended an idle plugin
// has returned its free memory (plus the moment the collection takes): a
// measure of its resident memory at rest waits that long.
const IdleReleaseWithin = 2 * idleReleaseAfter

// activity counts the calls a plugin process's servers serve.
type activity struct {
	inFlight atomic.Int64
	started  atomic.Int64 // calls ever started

	// Touched by tick only.
	seen     int64 // started at the last tick
	released int64 // started at the last release
}

func (a *activity) begin() { a.started.Add(1); a.inFlight.Add(1) }
func (a *activity) end()   { a.inFlight.Add(-1) }

// tick is the periodic check: it calls release when no call is in flight,
// none started since the last tick, and some started since the last
// release. It reports whether it released.
func (a *activity) tick(release func()) bool {
	started := a.started.Load()
	quiet := started == a.seen && a.inFlight.Load() == 0
	a.seen = started
	if !quiet || started == a.released {
		return false
	}
	a.released = started
	release()
	return true
}

func (a *activity) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	a.begin()
	defer a.end()
	return handler(ctx, req)
}

func (a *activity) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	a.begin()
	defer a.end()
	return handler(srv, ss)
}

// releaseMemory collects twice and returns the free pages to the system:
// what sync.Pools hold (gRPC's buffers) survives one collection in their
// victim caches and goes with the second, which debug.FreeOSMemory runs
// before it returns the pages.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// processActivity is the calls of every server of this plugin process.
var (
	processActivity activity
	watchIdle       sync.Once
)

// IdleReleaseOptions are the server options of a plugin process's own
// gRPC servers (the one go-plugin serves, and any other the plugin serves
// itself, such as a sandbox's direct workspace socket): their calls
// together decide when the process is idle and returns its free memory to
// the system (see idleReleaseAfter). Not for the host's servers: the host
// manages its own heap (its heap floor).
func IdleReleaseOptions() []grpc.ServerOption {
	watchIdle.Do(func() {
		go func() {
			for range time.Tick(idleReleaseAfter) {
				processActivity.tick(releaseMemory)
			}
		}()
	})
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(processActivity.unary),
		grpc.ChainStreamInterceptor(processActivity.stream),
	}
}

// NewPluginGRPCServer is NewGRPCServer for a plugin process's own servers,
// with IdleReleaseOptions.
func NewPluginGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return NewGRPCServer(append(opts, IdleReleaseOptions()...))
}
