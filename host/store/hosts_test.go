package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoHosts opens two stores on one PostgreSQL schema, as two host
// processes would, with lease keys a and b registered for ttl.
func twoHosts(t *testing.T, ttlA time.Duration) (a, b *Store) {
	t.Helper()
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	open := func(key string, ttl time.Duration) *Store {
		s, err := Open(ctx, url, "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		require.NoError(t, s.RegisterHost(ctx, key, key[:1], ttl))
		s.SetOwner(key)
		return s
	}
	return open("a/1", ttlA), open("b/1", time.Minute)
}

// TestLeaseRenewsWhileThePoolIsBusy: with every pool connection held (a
// host whose event commits and run writes use them all), the lease is
// still renewed, on its own connection: a host's own load must not make
// the other hosts declare it dead.
func TestLeaseRenewsWhileThePoolIsBusy(t *testing.T) {
	a, _ := twoHosts(t, time.Minute)
	a.SetMaxConns(2) // the lease's connection and a pool of one
	ctx := context.Background()
	tx, err := a.w.BeginTx(ctx, nil) // takes the pool's only connection
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	// The deadline only bounds a failure: a renewal queued behind tx
	// would wait until tx ends, which it does not before this returns.
	renewCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := a.RenewHost(renewCtx, "a/1", time.Minute)
	require.NoError(t, err, "the renewal waited for the busy pool")
	assert.True(t, ok)
	var until int64
	require.NoError(t, tx.QueryRowContext(ctx, `SELECT lease_until FROM hosts WHERE lease_key = 'a/1'`).Scan(&until))
	assert.Greater(t, until, time.Now().Add(50*time.Second).UnixMilli(), "the renewal committed")
}

// TestLeaseFencesEveryWrite: once host b has taken host a's run over (a's
// lease lapsed), every write a makes for it is refused with
// RUN_LEASE_LOST and changes nothing — events, status, engine state — and
// a learns at its next renewal that it was declared dead. Nor can a
// store a revision for the run. b's own events
// continue the log with no gap.
func TestLeaseFencesEveryWrite(t *testing.T) {
	a, b := twoHosts(t, time.Minute)
	ctx := context.Background()
	seedApp(t, a)
	r := newRun("run_fenced")
	_, err := a.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)
	assert.Equal(t, "a/1", r.Owner)
	_, err = a.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"from a"}`)})
	require.NoError(t, err)
	require.NoError(t, a.SaveEngineState(ctx, r.ID, []byte("state-a"), nil))

	// A live lease is not taken.
	owners, err := b.LostOwners(ctx, time.Now())
	require.NoError(t, err)
	assert.NotContains(t, owners, "a/1")
	claimed, err := b.ClaimRuns(ctx, "a/1", time.Now().Add(-time.Hour))
	require.NoError(t, err)
	assert.Empty(t, claimed, "a's lease was live at that time")

	// a's lease lapses: a renewal that ends it at once stands for a host
	// that stopped renewing (no sleep, so a loaded machine cannot make the
	// live-lease checks above see it lapsed too early).
	ok, err := a.RenewHost(ctx, "a/1", -time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	owners, err = b.LostOwners(ctx, time.Now())
	require.NoError(t, err)
	assert.Contains(t, owners, "a/1")
	claimed, err = b.ClaimRuns(ctx, "a/1", time.Now())
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	assert.Equal(t, "b/1", claimed[0].Owner)

	_, err = a.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"stale"}`)})
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(err), "%v", err)
	next := *r
	next.Status = core.RunFailed
	_, err = a.TransitionRun(ctx, &next, []core.RunStatus{core.RunQueued})
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(err), "%v", err)
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(a.SaveEngineState(ctx, r.ID, []byte("stale"), nil)))
	_, _, err = a.FinishRun(ctx, &next, []core.RunStatus{core.RunQueued}, core.EventInput{Type: core.EventRunFailed}, nil)
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(err), "%v", err)
	_, _, err = a.CreateRevision(ctx, NewRevision{ID: "rev_stale", AppID: "app1", Source: "run", RunID: r.ID,
		Files: []sandbox.File{{Path: "index.html", Data: []byte("stale"), Mode: 0o644}}})
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(err), "%v", err)
	_, _, err = b.GetRevision(ctx, "rev_stale")
	assert.ErrorIs(t, err, ErrNotFound, "no revision of the stale host's result")
	ok, err = a.RenewHost(ctx, "a/1", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "a finds out it was declared dead")

	env, err := b.Append(ctx, claimed[0], core.EventInput{Type: core.EventRunPaused, Payload: []byte(`{"reason":"host_lost"}`)})
	require.NoError(t, err)
	assert.Equal(t, int64(3), env.Seq, "b continues the log right after a's last committed event")
	state, err := b.LoadEngineState(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, "state-a", string(state), "a's refused save changed nothing")
	evs, err := b.ListEvents(ctx, r.ID, r.AppID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	for _, e := range evs {
		assert.NotContains(t, string(e.Payload), "stale")
	}
	got, err := b.GetRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, core.RunQueued, got.Status)
}

// TestClaimGoesToOneHost: hosts claiming a lost host's runs at once each
// get a share, and every run goes to exactly one of them.
func TestClaimGoesToOneHost(t *testing.T) {
	url := testenv.PostgresURL(t)
	ctx := context.Background()
	dead, err := Open(ctx, url, "")
	require.NoError(t, err)
	defer dead.Close()
	require.NoError(t, dead.RegisterHost(ctx, "dead/1", "dead", time.Millisecond))
	dead.SetOwner("dead/1")
	seedApp(t, dead)
	const runs = 40
	for i := range runs {
		_, err := dead.StartRun(ctx, newRun("run_c"+string(rune('A'+i))), nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
	}
	time.Sleep(5 * time.Millisecond)
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for h := range 4 {
		s, err := Open(ctx, url, "")
		require.NoError(t, err)
		defer s.Close()
		key := string(rune('p'+h)) + "/1"
		require.NoError(t, s.RegisterHost(ctx, key, key[:1], time.Minute))
		s.SetOwner(key)
		wg.Add(1)
		go func() {
			defer wg.Done()
			claimed, err := s.ClaimRuns(ctx, "dead/1", time.Now())
			assert.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			for _, r := range claimed {
				assert.Empty(t, got[r.ID], "run %s claimed twice", r.ID)
				got[r.ID] = key
			}
		}()
	}
	wg.Wait()
	assert.Len(t, got, runs)
	hosts, err := dead.Hosts(ctx)
	require.NoError(t, err)
	for _, h := range hosts {
		assert.NotEqual(t, "dead/1", h.LeaseKey, "the lost host's row is gone")
	}
}

// TestCommandsRoundTrip: a command is open until its owner answers it,
// answered once, and the answer reads back.
func TestCommandsRoundTrip(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r := newRun("run_cmd")
		_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		id, err := s.SendCommand(ctx, r.ID, "owner/1", "cancel", []byte(`{"x":1}`))
		require.NoError(t, err)
		open, err := s.OpenCommands(ctx, "owner/1")
		require.NoError(t, err)
		require.Len(t, open, 1)
		assert.Equal(t, "cancel", open[0].Kind)
		assert.JSONEq(t, `{"x":1}`, string(open[0].Body))
		require.NoError(t, s.AnswerCommand(ctx, id, 202, []byte(`{"status":"cancelling"}`)))
		require.NoError(t, s.AnswerCommand(ctx, id, 500, []byte(`{}`)))
		cmd, err := s.Command(ctx, id)
		require.NoError(t, err)
		assert.True(t, cmd.Answered)
		assert.Equal(t, 202, cmd.Status, "the first answer stands")
		open, err = s.OpenCommands(ctx, "owner/1")
		require.NoError(t, err)
		assert.Empty(t, open)
	})
}

// TestHostsMigrateTogether: stores opened at the same moment on an empty
// database all come up on the newest schema: one migrates while the others
// wait, none reads the schema half-way through another's migration.
func TestHostsMigrateTogether(t *testing.T) {
	for range 3 {
		url := testenv.PostgresURL(t)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(context.Background(), url, "")
				if err != nil {
					errs <- err
					return
				}
				s.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}
