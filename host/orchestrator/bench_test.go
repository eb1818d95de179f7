package orchestrator_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/apply"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// runScript runs one mock-engine script through the real plugins and fails
// the benchmark unless it completes.
func runScript(b *testing.B, h *host, script string) {
	b.Helper()
	run := h.start(b, script)
	final := h.wait(b, run.ID)
	require.Equal(b, core.RunCompleted, final.Status, "%s: %s", final.ErrorCode, final.ErrorMessage)
}

// BenchmarkToolCallRoundTrip: one tool call engine → host → toolpack →
// sandbox (the toolpack's file call goes to the sandbox plugin's own
// socket, granted by the host) and back, through the real binaries, with its
// tool.started and tool.completed events appended to an in-memory log, to
// SQLite or to PostgreSQL. The run's setup is amortised over b.N calls in
// one run. Its floor is four BenchmarkBareGoPluginHop (host/pluginmgr).
// cpu-µs/op is the CPU a call cost the host and every plugin
// (testenv.TreeCPU), steadier than ns/op on a shared machine.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	for _, log := range []string{"memory", "sqlite", "postgres"} {
		b.Run(log, func(b *testing.B) {
			var h *host
			if log == "memory" {
				h = newHost(b, defaultConfigs(b), orchestrator.Options{})
			} else {
				h = storeHost(b, log)
			}
			runScript(b, h, "say warm-up") // first-run costs out of the loop
			b.ResetTimer()
			cpu := testenv.TreeCPU()
			runScript(b, h, fmt.Sprintf(`tools %d coding_agent_read_file {"path":"README.md"}`, b.N))
			testenv.ReportCPU(b, cpu, b.N, "cpu-µs/op")
		})
	}
}

// storeHost is a host whose runs, event log and results are the real
// store's on a fresh database of the dialect, as hostapp wires them, with
// an app to run on.
func storeHost(b *testing.B, dialect string) *host {
	ctx := context.Background()
	url := filepath.Join(b.TempDir(), "a.db")
	if dialect == "postgres" {
		url = testenv.PostgresURL(b)
	}
	st, err := store.Open(ctx, url, b.TempDir())
	require.NoError(b, err)
	// Registered first, so it runs after the host has shut down.
	b.Cleanup(func() { st.Close() })
	require.NoError(b, st.EnsureTenant(ctx, "t1", "T"))
	require.NoError(b, st.CreateApp(ctx, store.App{ID: "app_bench", TenantID: "t1", Name: "demo"}))
	rev, _, err := st.CreateRevision(ctx, store.NewRevision{ID: "rev_base", AppID: "app_bench", Source: "upload", Files: demoFiles(), AdvanceDraft: true})
	require.NoError(b, err)
	h := launchHost(b, defaultConfigs(b), orchestrator.Options{}, st, st, apply.New(st))
	h.app = orchestrator.StartRequest{TenantID: "t1", AppID: "app_bench", BaseRevisionID: rev.ID, Files: demoFiles()}
	return h
}

// BenchmarkEventThroughput: one assistant delta engine → host event log.
func BenchmarkEventThroughput(b *testing.B) {
	h := newHost(b, defaultConfigs(b), orchestrator.Options{})
	runScript(b, h, "say warm-up")
	b.ResetTimer()
	runScript(b, h, fmt.Sprintf("deltas %d", b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkBareGRPCRoundTrip is the floor: one unary gRPC call over loopback
// TCP on this machine, without TLS, plugins or the host.
func BenchmarkBareGRPCRoundTrip(b *testing.B) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(b, err)
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}
