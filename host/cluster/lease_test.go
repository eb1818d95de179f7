package cluster_test

import (
	"context"
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

// TestLeaseRenewsWhileTakenOverRunsSettle: a host that takes over a lost
// host's runs keeps renewing its own lease while it settles them, however
// long that takes (restarting engines and making sandboxes for many runs
// took longer than a lease). When the renewals waited for the settling,
// the host's lease lapsed and another host took over the runs it was
// resuming.
func TestLeaseRenewsWhileTakenOverRunsSettle(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	open := func() *store.Store {
		s, err := store.Open(ctx, url, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	const ttl = time.Second

	// A host with one run, whose lease lapses a little after the
	// survivor has joined.
	dead := open()
	require.NoError(t, dead.EnsureTenant(ctx, "t1", "Tenant"))
	require.NoError(t, dead.CreateApp(ctx, store.App{ID: "app1", TenantID: "t1", Name: "demo"}))
	require.NoError(t, dead.RegisterHost(ctx, "dead/1", "dead", 2*ttl))
	dead.SetOwner("dead/1")
	now := time.Now().UTC().Truncate(time.Millisecond)
	run := &core.Run{ID: "run_settle", TenantID: "t1", AppID: "app1", Prompt: "p", Status: core.RunQueued, Engine: "mock",
		SandboxBackend: "local", CreatedAt: now, UpdatedAt: now}
	_, err := dead.StartRun(ctx, run, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)

	settling, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	survivor := open()
	m, err := cluster.Join(ctx, survivor, cluster.Options{HostID: "survivor", LeaseTTL: ttl, TakeOver: func(context.Context, []*core.Run) {
		once.Do(func() { close(settling) })
		<-release // settling takes longer than the lease
	}})
	require.NoError(t, err)
	defer m.Leave(ctx)
	defer close(release)

	select {
	case <-settling:
	case <-time.After(30 * time.Second):
		t.Fatal("the survivor never took the lost host's run over")
	}
	// While the takeover settles, for three leases, the survivor's lease
	// must not lapse: another host would take over what it settles.
	lease := func() time.Time {
		hosts, err := survivor.Hosts(ctx)
		require.NoError(t, err)
		for _, h := range hosts {
			if h.LeaseKey == m.LeaseKey() {
				return h.LeaseUntil
			}
		}
		t.Fatalf("the survivor's host row is gone")
		return time.Time{}
	}
	first := lease()
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		until := lease()
		require.True(t, until.After(time.Now()), "the survivor's lease lapsed at %s while it settled what it took over", until)
		time.Sleep(ttl / 10) // sampling the lease; nothing to wait on
	}
	assert.True(t, lease().After(first), "the lease was renewed meanwhile")
}

// TestLeaseRenewsWhileJoinSettles: a host that finds a lost host's runs
// when it joins settles them before Join returns, and renews its own lease
// meanwhile, however long that takes. When Join swept before it started
// renewing, the new host's first lease lapsed while it settled, and
// another host could take over what it was resuming.
func TestLeaseRenewsWhileJoinSettles(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	open := func() *store.Store {
		s, err := store.Open(ctx, url, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	const ttl = time.Second

	// A host with one run whose lease has lapsed already.
	dead := open()
	require.NoError(t, dead.EnsureTenant(ctx, "t1", "Tenant"))
	require.NoError(t, dead.CreateApp(ctx, store.App{ID: "app1", TenantID: "t1", Name: "demo"}))
	require.NoError(t, dead.RegisterHost(ctx, "gone/1", "gone", time.Millisecond))
	dead.SetOwner("gone/1")
	now := time.Now().UTC().Truncate(time.Millisecond)
	run := &core.Run{ID: "run_join_settle", TenantID: "t1", AppID: "app1", Prompt: "p", Status: core.RunQueued, Engine: "mock",
		SandboxBackend: "local", CreatedAt: now, UpdatedAt: now}
	_, err := dead.StartRun(ctx, run, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)

	settling, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
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
		close(release)
		t.Fatal("the joining host never took the lost host's run over")
	}
	lease := func() time.Time {
		hosts, err := joiner.Hosts(ctx)
		require.NoError(t, err)
		for _, h := range hosts {
			if h.HostID == "joiner" {
				return h.LeaseUntil
			}
		}
		t.Fatalf("the joining host's row is gone")
		return time.Time{}
	}
	first := lease()
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		until := lease()
		if !until.After(time.Now()) {
			close(release)
			t.Fatalf("the joining host's lease lapsed at %s while Join settled what it took over", until)
		}
		time.Sleep(ttl / 10) // sampling the lease; nothing to wait on
	}
	assert.True(t, lease().After(first), "the lease was renewed meanwhile")
	close(release)
	select {
	case m := <-joined:
		require.NotNil(t, m)
		m.Leave(ctx)
	case <-time.After(30 * time.Second):
		t.Fatal("Join did not return once the takeover settled")
	}
}
