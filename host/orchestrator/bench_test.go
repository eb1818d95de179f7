package orchestrator_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
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
// host workspace → sandbox and back, through the real binaries. The run's
// setup is amortised over b.N calls in one run.
func BenchmarkToolCallRoundTrip(b *testing.B) {
	h := newHost(b, defaultConfigs(b), orchestrator.Options{})
	runScript(b, h, "say warm-up") // first-run costs out of the loop
	b.ResetTimer()
	runScript(b, h, fmt.Sprintf(`tools %d coding_agent_read_file {"path":"README.md"}`, b.N))
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
