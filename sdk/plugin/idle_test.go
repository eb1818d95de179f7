package plugin

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestIdleReleaseOncePerQuietSpell: memory is returned only after a whole
// tick with no call started and none in flight, once per quiet spell, and
// never by a process that served nothing.
func TestIdleReleaseOncePerQuietSpell(t *testing.T) {
	var a activity
	releases := 0
	release := func() { releases++ }

	require.False(t, a.tick(release), "nothing served yet: nothing to give back")
	require.False(t, a.tick(release))

	a.begin()
	a.end()
	require.False(t, a.tick(release), "a call started since the last tick")
	require.True(t, a.tick(release), "a whole tick quiet")
	require.False(t, a.tick(release), "once per quiet spell")
	require.False(t, a.tick(release))

	// A long call (a run's event stream) keeps the process busy.
	a.begin()
	require.False(t, a.tick(release), "a call started since the last tick")
	require.False(t, a.tick(release), "a call in flight")
	require.False(t, a.tick(release), "still in flight")
	a.end()
	require.True(t, a.tick(release), "quiet once it ended")
	require.Equal(t, 2, releases)
}

// TestPluginServerCountsCalls: unary and streaming calls to a server made
// with NewPluginGRPCServer are counted, and are no longer in flight once
// they returned.
func TestPluginServerCountsCalls(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewPluginGRPCServer(nil)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	c := healthpb.NewHealthClient(conn)

	before := processActivity.started.Load()
	_, err = c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, before+1, processActivity.started.Load(), "the unary call")
	require.Zero(t, processActivity.inFlight.Load(), "it returned")

	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv() // the server is in the stream's handler now
	require.NoError(t, err)
	require.Equal(t, before+2, processActivity.started.Load(), "the stream")
	require.Equal(t, int64(1), processActivity.inFlight.Load(), "in flight while it streams")
	cancel()
	require.Eventually(t, func() bool { return processActivity.inFlight.Load() == 0 }, 10*time.Second, time.Millisecond, "the stream's handler returned")
}
