package cluster_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/cluster"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lostHostWithRun opens stores on a fresh PostgreSQL database (open) and
// leaves in it a host, key, with one queued run, whose lease lasts lease.
func lostHostWithRun(t *testing.T, key string, lease time.Duration) (open func() *store.Store) {
	t.Helper()
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	open = func() *store.Store {
		s, err := store.Open(ctx, url, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	dead := open()
	require.NoError(t, dead.EnsureTenant(ctx, "t1", "Tenant"))
	require.NoError(t, dead.CreateApp(ctx, store.App{ID: "app1", TenantID: "t1", Name: "demo"}))
	require.NoError(t, dead.RegisterHost(ctx, key, "dead", lease))
	dead.SetOwner(key)
	now := time.Now().UTC().Truncate(time.Millisecond)
	run := &core.Run{ID: "run_of_" + strings.ReplaceAll(key, "/", "_"), TenantID: "t1", AppID: "app1", Prompt: "p", Status: core.RunQueued, Engine: "mock",
		SandboxBackend: "local", CreatedAt: now, UpdatedAt: now}
	_, err := dead.StartRun(ctx, run, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)
	return open
}

// leaseTestTTL is the lease of the two settling tests. They do not depend
// on it being long: they count renewals, not the slack between them.
const leaseTestTTL = time.Second

// renewalsWhileSettling is how many renewals the settling tests wait for
// while the takeover is blocked: more than one lease's worth (a host
// renews every fifth of it), so a lease that only lasted until the
// settling began cannot pass.
const renewalsWhileSettling = 8

// leaseKeepsRenewing waits until the host whose row is its (st reads the
// hosts table) has renewed its lease renewalsWhileSettling times, and
// fails the test, after calling stop, if it has not within a minute or its
// row goes. It counts renewals instead of checking that the lease never
// lapses: the property is that renewals go on while the takeover settles
// (when they waited for it, none came), and a lapse on a loaded 2-core
// CI machine was once only a late renewal (twice, with leases of 1 s and
// of 3 s), which says nothing about that property.
func leaseKeepsRenewing(t *testing.T, st *store.Store, its func(store.HostRecord) bool, ttl time.Duration, stop func()) {
	t.Helper()
	heartbeat := func() time.Time {
		hosts, err := st.Hosts(context.Background())
		require.NoError(t, err)
		for _, h := range hosts {
			if its(h) {
				return h.HeartbeatAt
			}
		}
		stop()
		t.Fatalf("the host's row is gone")
		return time.Time{}
	}
	seen := []time.Time{heartbeat()}
	deadline := time.Now().Add(time.Minute)
	for len(seen) <= renewalsWhileSettling {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the host renewed its lease %d times in a minute while it settled what it took over (heartbeats %v); want %d", len(seen)-1, seen, renewalsWhileSettling)
		}
		if beat := heartbeat(); beat.After(seen[len(seen)-1]) {
			seen = append(seen, beat)
		}
		time.Sleep(ttl / 20) // sampling the hosts table; nothing to wait on
	}
}

// TestLeaseRenewsWhileTakenOverRunsSettle: a host that takes over a lost
// host's runs keeps renewing its own lease while it settles them, however
// long that takes (restarting engines and making sandboxes for many runs
// took longer than a lease). When the renewals waited for the settling,
// the host's lease lapsed and another host took over the runs it was
// resuming.
func TestLeaseRenewsWhileTakenOverRunsSettle(t *testing.T) {
	const ttl = leaseTestTTL
	ctx := context.Background()
	// A host with one run, whose lease lapses a little after the
	// survivor has joined.
	open := lostHostWithRun(t, "dead/1", 2*ttl)

	settling, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	survivor := open()
	m, err := cluster.Join(ctx, survivor, cluster.Options{HostID: "survivor", LeaseTTL: ttl, TakeOver: func(context.Context, []*core.Run) {
		once.Do(func() { close(settling) })
		<-release // settling takes longer than the lease
	}})
	require.NoError(t, err)
	defer m.Leave(ctx)
	var stop sync.Once
	defer stop.Do(func() { close(release) })

	select {
	case <-settling:
	case <-time.After(30 * time.Second):
		t.Fatal("the survivor never took the lost host's run over")
	}
	// While the takeover settles, the survivor must keep renewing its
	// lease: were it to lapse, another host would take over what it
	// settles.
	leaseKeepsRenewing(t, survivor, func(h store.HostRecord) bool { return h.LeaseKey == m.LeaseKey() }, ttl, func() {})
}

// TestLeaseRenewsWhileJoinSettles: a host that finds a lost host's runs
// when it joins settles them before Join returns, and renews its own lease
// meanwhile, however long that takes. When Join swept before it started
// renewing, the new host's first lease lapsed while it settled, and
// another host could take over what it was resuming.
func TestLeaseRenewsWhileJoinSettles(t *testing.T) {
	const ttl = leaseTestTTL
	ctx := context.Background()
	// A host with one run whose lease has lapsed already.
	open := lostHostWithRun(t, "gone/1", time.Millisecond)

	settling, release := make(chan struct{}), make(chan struct{})
	var once, stop sync.Once
	unblock := func() { stop.Do(func() { close(release) }) }
	defer unblock()
	joiner := open()
	joined := make(chan *cluster.Member, 1)
	go func() {
		m, err := cluster.Join(ctx, joiner, cluster.Options{HostID: "joiner", LeaseTTL: ttl, TakeOver: func(context.Context, []*core.Run) {
			once.Do(func() { close(settling) })
			<-release // settling takes longer than the lease
		}})
		assert.NoError(t, err)
		joined <- m
	}()
	select {
	case <-settling:
	case <-time.After(30 * time.Second):
		t.Fatal("the joining host never took the lost host's run over")
	}
	leaseKeepsRenewing(t, joiner, func(h store.HostRecord) bool { return h.HostID == "joiner" }, ttl, unblock)
	unblock()
	select {
	case m := <-joined:
		require.NotNil(t, m)
		m.Leave(ctx)
	case <-time.After(30 * time.Second):
		t.Fatal("Join did not return once the takeover settled")
	}
}
