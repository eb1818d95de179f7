package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/pgserver"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTransientCause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err       error
		transient bool
		cause     string
	}{
		{&pq.Error{Code: "57P01", Message: "terminating connection due to administrator command"}, true, "server restarting"},
		{&pq.Error{Code: "57P03", Message: "the database system is shutting down"}, true, "server restarting"},
		{&pq.Error{Code: "08006", Message: "connection failure"}, true, "connection lost"},
		{&pq.Error{Code: "53100", Message: "could not extend file"}, true, "disk full"},
		{&pq.Error{Code: "40001", Message: "could not serialize access"}, true, "transaction conflict"},
		{fmt.Errorf("append: %w", &pq.Error{Code: "23505", Message: "duplicate key"}), false, ""},
		{&pq.Error{Code: "22021", Message: "invalid byte sequence"}, false, ""},
		{fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true, "connection refused"},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true, "connection reset"},
		{driver.ErrBadConn, true, "connection lost"},
		{io.ErrUnexpectedEOF, true, "connection lost"},
		{errors.New("constraint failed"), false, ""},
		{core.Errf(core.CodeNotFound, "", "run x not found"), false, ""},
		{ErrNotFound, false, ""},
		{nil, false, ""},
	} {
		cause, ok := Transient(tc.err)
		assert.Equal(t, tc.transient, ok, "%v", tc.err)
		assert.Contains(t, cause, tc.cause, "%v", tc.err)
	}
}

// TestOutageWindow: writes failing for a transient cause are retried for
// the window, counted from the outage's first failure, then fail with
// STORE_UNAVAILABLE; Health says so until a write succeeds.
func TestOutageWindow(t *testing.T) {
	t.Parallel()
	s := openSQLite(t)
	s.SetOutageWindow(300 * time.Millisecond)
	ctx := context.Background()
	down := &pq.Error{Code: "57P03", Message: "the database system is shutting down"}

	tries := 0
	begin := time.Now()
	err := s.Retry(ctx, "a test write", func(context.Context) error { tries++; return down })
	assert.GreaterOrEqual(t, time.Since(begin), 300*time.Millisecond)
	assert.Equal(t, core.CodeStoreUnavailable, core.CodeOf(err), "%v", err)
	assert.ErrorIs(t, err, down, "the cause is kept")
	assert.Contains(t, err.Error(), "a test write")
	assert.Greater(t, tries, 3, "retried with backoff")
	h := s.Health()
	assert.False(t, h.OK)
	assert.Contains(t, h.Cause, "server restarting")

	// A write that fails for another reason is not retried.
	tries = 0
	other := errors.New("no such column")
	assert.Equal(t, other, s.Retry(ctx, "x", func(context.Context) error { tries++; return other }))
	assert.Equal(t, 1, tries)
	assert.False(t, s.Health().OK, "a failure of another kind says nothing of the outage")

	// A write that goes through ends the outage.
	require.NoError(t, s.Retry(ctx, "x", func(context.Context) error { return nil }))
	assert.True(t, s.Health().OK)

	// A write that succeeds within the window waits, then goes through.
	tries = 0
	require.NoError(t, s.Retry(ctx, "x", func(context.Context) error {
		tries++
		if tries < 3 {
			return down
		}
		return nil
	}))
	assert.Equal(t, 3, tries)
	assert.True(t, s.Health().OK)

	// The caller's context ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = s.Retry(cctx, "x", func(context.Context) error { return down })
	assert.ErrorIs(t, err, down)
	assert.True(t, s.Health().OK, "a write its caller abandoned leaves no outage behind")
}

// TestAppendsWaitOutRestart: on a private PostgreSQL that stops and comes
// back, appends queued meanwhile wait, then commit in order with no gap,
// and Health says the database is away while it is.
func TestAppendsWaitOutRestart(t *testing.T) {
	t.Parallel()
	pg := pgserver.Start(t)
	s, err := Open(context.Background(), pg.URL(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	r := newRun("run_1")
	require.NoError(t, s.CreateRun(ctx, r))
	_, err = s.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"0"}`)})
	require.NoError(t, err)

	pg.Stop(t)
	done := make(chan error, 1)
	go func() {
		for i := 1; i <= 20; i++ {
			if _, err := s.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: fmt.Appendf(nil, `{"text":"%d"}`, i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	require.Eventually(t, func() bool { return !s.Health().OK }, 10*time.Second, 10*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("an append returned while the database was down: %v", err)
	default:
	}
	pg.Start(t)
	require.NoError(t, <-done)
	evs, err := s.ListEvents(ctx, r.ID, r.AppID, 0, 100)
	require.NoError(t, err)
	require.Len(t, evs, 21)
	for i, e := range evs {
		assert.Equal(t, int64(i+1), e.Seq)
		assert.JSONEq(t, fmt.Sprintf(`{"text":"%d"}`, i), string(e.Payload))
	}
	assert.True(t, s.Health().OK)
}

// BenchmarkOutageRecovery times, per restart of a private PostgreSQL,
// from the moment the server accepts connections again to the commit of
// the first event that waited for it (a run paused by the outage).
func BenchmarkOutageRecovery(b *testing.B) {
	pg := pgserver.Start(b)
	s, err := Open(context.Background(), pg.URL(), b.TempDir())
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	r := newRun("run_1")
	require.NoError(b, s.CreateRun(ctx, r))
	// The server is back when a new connection's ping succeeds: probed
	// every millisecond while it starts.
	probe, err := sql.Open("postgres", pg.URL())
	require.NoError(b, err)
	defer probe.Close()
	probe.SetMaxIdleConns(0)
	var total time.Duration
	for b.Loop() {
		pg.Stop(b)
		committed := make(chan time.Time, 1)
		go func() {
			_, err := s.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"x"}`)})
			if err != nil {
				b.Error(err)
			}
			committed <- time.Now()
		}()
		for s.Health().OK {
			time.Sleep(time.Millisecond)
		}
		backAt := make(chan time.Time, 1)
		go func() {
			for probe.PingContext(ctx) != nil {
				time.Sleep(time.Millisecond)
			}
			backAt <- time.Now()
		}()
		pg.Start(b)
		back := <-backAt
		total += (<-committed).Sub(back)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-first-commit/op")
}
