package pluginmgr

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/noopplugin"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// noop is the no-op plugin binary, built on first use (by the floor
// benchmark and TestKillFrozenPlugin) and removed by TestMain.
var noop struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if noop.dir != "" {
		_ = os.RemoveAll(noop.dir)
	}
	os.Exit(code)
}

func noopBinary(b testing.TB) string {
	b.Helper()
	noop.once.Do(func() { noop.dir, noop.err = testenv.BuildBinaries("host/internal/noopplugin/cmd/agenthost-noop") })
	if noop.err != nil {
		b.Fatal(noop.err)
	}
	return noop.dir + "/agenthost-noop"
}

// BenchmarkBareGoPluginHop is the floor of every plugin call: one unary
// call (go-plugin's own health check) to a plugin that does nothing,
// launched as the manager launches every plugin (pluginCmd, clientConfig:
// gRPC over go-plugin's socket, AutoMTLS), with a shipped toolpack's
// environment. A tool call crossed four such
// hops (engine → host → toolpack → host → sandbox), three since toolpacks
// reach the sandbox plugin directly; the ratio printer holds
// BenchmarkToolCallRoundTrip against four of these, as issue 16 counts.
// cpu-µs/op is the CPU a hop cost both processes (testenv.TreeCPU).
func BenchmarkBareGoPluginHop(b *testing.B) {
	hop := noopHop(b)
	cpu := testenv.TreeCPU()
	for b.Loop() {
		hop()
	}
	testenv.ReportCPU(b, cpu, b.N, "cpu-µs/op")
}

// BenchmarkBareGoPluginHopAfterIdle is the same hop made after the caller
// sat idle for hopIdle, as every process on a tool call's path does while
// the other hops run: by then both processes' threads have parked, and
// waking them is part of the hop. Its ns/op is the hop alone, without the
// idle time. It has no target; it says what a chain of hops can cost
// on this machine beside BenchmarkBareGoPluginHop's back-to-back hops.
func BenchmarkBareGoPluginHopAfterIdle(b *testing.B) {
	hop := noopHop(b)
	var spent time.Duration
	for b.Loop() {
		time.Sleep(hopIdle)
		start := time.Now()
		hop()
		spent += time.Since(start)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "ns/op")
}

// hopIdle is about how long each process of a tool call waits for the
// others (a call's three hops and their work take some 450 µs here).
const hopIdle = 300 * time.Microsecond

// noopHop launches the no-op plugin and returns one hop to it, made once
// already (the connection's first call is not a hop's cost).
func noopHop(b *testing.B) func() {
	b.Helper()
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr})
	// With the environment a shipped toolpack gets (its max_procs among
	// it): one core's worth of Go saves a hop a fifth of its CPU, and the
	// floor must not be the slower for lacking it.
	env := (&Manager{}).env(Config{MaxProcs: testenv.DefaultMaxProcs["patch"]})
	client := goplugin.NewClient(clientConfig(pluginCmd(noopBinary(b), nil, env), noopplugin.PluginSet(), nil, log, 30*time.Second))
	b.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense(noopplugin.Kind)
	if err != nil {
		b.Fatal(err)
	}
	c, ok := raw.(healthpb.HealthClient)
	if !ok {
		b.Fatalf("dispensed %T", raw)
	}
	ctx := context.Background()
	req := &healthpb.HealthCheckRequest{Service: goplugin.GRPCServiceName}
	hop := func() {
		resp, err := c.Check(ctx, req)
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			b.Fatal(fmt.Sprint(resp, err))
		}
	}
	hop()
	return hop
}
