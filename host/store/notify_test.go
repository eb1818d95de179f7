package store

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEventsNotifiedOnlyWhenHeard: a host alone on the database commits
// its runs' events without notifying (no other host to hear, and every
// notifying commit would hold PostgreSQL's notify lock until it is on
// disk); once another host is registered, each commit notifies again, a
// plain insert and a run's end with its terminal event alike.
func TestEventsNotifiedOnlyWhenHeard(t *testing.T) {
	ctx := context.Background()
	a := openPostgres(t)
	url := a.connStr
	require.NoError(t, a.RegisterHost(ctx, "a/1", "a", time.Minute))
	a.SetOwner("a/1")
	seedApp(t, a)

	l := pq.NewListener(url, time.Millisecond, time.Second, nil)
	t.Cleanup(func() { _ = l.Close() })
	require.NoError(t, l.Listen(EventsChannel))
	notes := make(chan string, 16)
	go func() {
		for n := range l.Notify {
			if n != nil {
				_, run, _, _, _ := parseEventNote(n.Extra, "")
				notes <- run
			}
		}
	}()

	alone := newRun("run_alone")
	_, err := a.StartRun(ctx, alone, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)
	_, err = a.Append(ctx, alone, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"unheard"}`)})
	require.NoError(t, err)
	end := *alone
	end.Status = core.RunCompleted
	_, _, err = a.FinishRun(ctx, &end, []core.RunStatus{core.RunQueued}, core.EventInput{Type: core.EventRunCompleted}, nil)
	require.NoError(t, err)

	require.NoError(t, a.RegisterHost(ctx, "b/1", "b", time.Minute))
	heard := newRun("run_heard")
	_, err = a.StartRun(ctx, heard, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)
	_, err = a.Append(ctx, heard, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"heard"}`)})
	require.NoError(t, err)
	end = *heard
	end.Status = core.RunCompleted
	_, _, err = a.FinishRun(ctx, &end, []core.RunStatus{core.RunQueued}, core.EventInput{Type: core.EventRunCompleted}, nil)
	require.NoError(t, err)

	// Notifications arrive in commit order: the first is the heard run's,
	// so the lone host's commits sent none.
	for i := range 2 {
		select {
		case run := <-notes:
			assert.Equal(t, "run_heard", run, "notification %d", i)
		case <-time.After(time.Minute): // liveness only
			t.Fatalf("notification %d of the heard run never came", i)
		}
	}
	events, err := a.ListEvents(ctx, alone.ID, alone.AppID, 0, 10)
	require.NoError(t, err)
	assert.Len(t, events, 3, "the lone host's events are in the log all the same")
}

// TestWaitOutOlderTransactions: the wait returns only once the
// transactions that began before it have ended; one still open past the
// limit is named in the error.
func TestWaitOutOlderTransactions(t *testing.T) {
	ctx := context.Background()
	s := openPostgres(t)
	require.NoError(t, s.WaitOutOlderTransactions(ctx, time.Minute), "nothing older is open")

	other, err := sqlx.Open("postgres", s.connStr+"&application_name=older-session")
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	tx, err := other.BeginTxx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `SELECT 1`)
	require.NoError(t, err)

	err = s.WaitOutOlderTransactions(ctx, 50*time.Millisecond)
	require.Error(t, err, "an older transaction is still open")
	assert.Contains(t, err.Error(), "older-session")

	done := make(chan error, 1)
	go func() { done <- s.WaitOutOlderTransactions(ctx, time.Minute) }()
	require.NoError(t, tx.Commit())
	select {
	case err := <-done:
		require.NoError(t, err, "the older transaction ended")
	case <-time.After(2 * time.Minute): // liveness only
		t.Fatal("the wait did not end with the older transaction")
	}
}
