package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// enqueued queues ev and returns a function that waits for its outcome.
func enqueued(t *testing.T, s *Store, r *core.Run, ev core.EventInput) func() (core.Envelope, error) {
	t.Helper()
	type res struct {
		env core.Envelope
		err error
	}
	ch := make(chan res, 1)
	require.NoError(t, s.Enqueue(context.Background(), r, ev, func(env core.Envelope, err error) { ch <- res{env, err} }))
	return func() (core.Envelope, error) { r := <-ch; return r.env, r.err }
}

// TestEnqueueKeepsOrder: events queued without waiting are logged in queue
// order with gap-free seqs, and listeners see each only once committed.
func TestEnqueueKeepsOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r := newRun("run_q")
		_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		var mu sync.Mutex
		var seen []int64
		s.OnAppend(func(e core.Envelope) { mu.Lock(); seen = append(seen, e.Seq); mu.Unlock() })
		const n = 300
		waits := make([]func() (core.Envelope, error), n)
		for i := range n {
			waits[i] = enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"x"}`)})
		}
		for i, wait := range waits {
			env, err := wait()
			require.NoError(t, err)
			assert.Equal(t, int64(i+2), env.Seq)
		}
		evs, err := s.ListEvents(ctx, r.ID, r.AppID, 0, 1000)
		require.NoError(t, err)
		require.Len(t, evs, n+1)
		for i, e := range evs {
			assert.Equal(t, int64(i+1), e.Seq)
		}
		// A batch's listeners run after its appends are answered: the
		// last batch's may still be on their way.
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= n }, 10*time.Second, time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, seen, n)
		for i, seq := range seen {
			assert.Equal(t, int64(i+2), seq, "listeners see commit order")
		}
	})
}

// TestEnqueueFailureHoldsBackTheRun: when a run's event fails to commit,
// the events the run queued behind it fail too (a hole under gap-free seqs
// would lose what the engine said), other runs go on, and the run's
// terminal event is logged after what did commit.
func TestEnqueueFailureHoldsBackTheRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r, other := newRun("run_broken"), newRun("run_fine")
		for _, run := range []*core.Run{r, other} {
			_, err := s.StartRun(ctx, run, nil, core.EventInput{Type: core.EventRunAccepted})
			require.NoError(t, err)
		}
		// A row the writer does not know of takes the run's next seq, so
		// its next event collides with it.
		_, err := s.w.Exec(s.rebind(`INSERT INTO run_events (run_id, seq, type, payload, ts) VALUES (?, 2, 'run.status', '{}', 0)`), r.ID)
		require.NoError(t, err)
		_, err = enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta})()
		require.Error(t, err, "the colliding event fails")
		_, err = enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta})()
		assert.True(t, errors.Is(err, errEarlierLost), "the next one is held back: %v", err)
		env, err := enqueued(t, s, other, core.EventInput{Type: core.EventAssistantDelta})()
		require.NoError(t, err, "another run is not held back")
		assert.Equal(t, int64(2), env.Seq)

		end, err := s.Append(ctx, r, core.EventInput{Type: core.EventRunFailed})
		require.NoError(t, err, "the terminal event goes through")
		assert.Equal(t, int64(3), end.Seq, "after what the log holds")
		evs, err := s.ListEvents(ctx, r.ID, r.AppID, 0, 10)
		require.NoError(t, err)
		require.Len(t, evs, 3)
		assert.Equal(t, core.EventRunFailed, evs[2].Event)
	})
}

// TestFinishRun: the terminal event, the assistant's turn and the final row
// in one transaction; a refused transition keeps the event and says why.
func TestFinishRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
		require.NoError(t, err)
		r := newRun("run_f")
		r.UserID, r.ChatSessionID = user, "chat_f"
		// Turn ids sort in creation order (api.MessageID): two turns written
		// in the same millisecond are ordered by id.
		_, err = s.StartRun(ctx, r, &core.ChatTurn{MessageID: "msg_1_user", Content: "say hi", NewSession: true}, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		running := *r
		running.Status = core.RunRunning
		_, err = s.TransitionRun(ctx, &running, core.Sources(core.RunRunning))
		require.NoError(t, err)
		delta := enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"hi"}`)})

		done := running
		done.Status, done.OutputText = core.RunCompleted, "hi"
		env, got, err := s.FinishRun(ctx, &done, core.Sources(core.RunCompleted), core.EventInput{Type: core.EventRunCompleted}, &core.ChatTurn{MessageID: "msg_2_assistant", Content: "hi"})
		require.NoError(t, err)
		_, derr := delta()
		require.NoError(t, derr)
		assert.Equal(t, int64(3), env.Seq, "after the delta queued before it")
		require.NotNil(t, got)
		assert.Equal(t, core.RunCompleted, got.Status)
		stored, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, core.RunCompleted, stored.Status)
		assert.Equal(t, "hi", stored.OutputText)
		msgs, err := s.ChatMessages(ctx, "chat_f")
		require.NoError(t, err)
		require.Len(t, msgs, 2)
		assert.Equal(t, "assistant", msgs[1].Role)
		assert.Equal(t, "hi", msgs[1].Content)
		session, err := s.GetChatSession(ctx, "chat_f")
		require.NoError(t, err)
		assert.Equal(t, env.TS.UnixMilli(), session.UpdatedAt, "the session's last activity is the end's")

		again := done
		again.Status = core.RunFailed
		env, got, err = s.FinishRun(ctx, &again, core.Sources(core.RunFailed), core.EventInput{Type: core.EventRunFailed}, nil)
		assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(err), "%v", err)
		assert.Nil(t, got)
		assert.Equal(t, int64(4), env.Seq, "the event is logged; the row is left alone")
		stored, err = s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, core.RunCompleted, stored.Status)
	})
}

// TestFinishRunAfterALostEvent: the orchestrator ends a run without
// waiting for its queued events (they usually share the end's
// transaction). When one of them fails, the end fails with it if it shared
// the transaction, and then goes through alone after what the log holds;
// either way the run ends with no hole in its seqs.
func TestFinishRunAfterALostEvent(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r := newRun("run_lost")
		_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		running := *r
		running.Status = core.RunRunning
		_, err = s.TransitionRun(ctx, &running, core.Sources(core.RunRunning))
		require.NoError(t, err)
		// A row the writer does not know of takes the run's next seq.
		_, err = s.w.Exec(s.rebind(`INSERT INTO run_events (run_id, seq, type, payload, ts) VALUES (?, 2, 'run.status', '{}', 0)`), r.ID)
		require.NoError(t, err)
		lost := enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta})
		done := running
		done.Status = core.RunFailed
		end := core.EventInput{Type: core.EventRunFailed}
		env, got, err := s.FinishRun(ctx, &done, core.Sources(core.RunFailed), end, nil)
		_, lerr := lost()
		require.Error(t, lerr, "the colliding event fails")
		if err != nil {
			// It shared the failed transaction: nothing of it was written.
			env, got, err = s.FinishRun(ctx, &done, core.Sources(core.RunFailed), end, nil)
		}
		require.NoError(t, err)
		require.NotNil(t, got)
		assert.Equal(t, core.RunFailed, got.Status)
		assert.Equal(t, int64(3), env.Seq, "after what the log holds")
		evs, err := s.ListEvents(ctx, r.ID, r.AppID, 0, 10)
		require.NoError(t, err)
		require.Len(t, evs, 3)
		assert.Equal(t, core.EventRunFailed, evs[2].Event)
	})
}

// TestTransitionInOrder: a status change written in the run's order on the
// log lands after the events queued before it; a refused one (another
// state, no such run) fails alone, not the events sharing its transaction.
func TestTransitionInOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r := newRun("run_o")
		_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		before := enqueued(t, s, r, core.EventInput{Type: core.EventRunStatus, Payload: []byte(`{"stage":"sandbox_starting"}`)})
		running := *r
		running.Status = core.RunRunning
		got, err := s.TransitionInOrder(ctx, &running, core.Sources(core.RunRunning))
		require.NoError(t, err)
		assert.Equal(t, core.RunRunning, got.Status)
		env, err := before()
		require.NoError(t, err, "the event queued before it is logged")
		assert.Equal(t, int64(2), env.Seq)

		after := enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta})
		queued := running
		queued.Status = core.RunQueued
		_, err = s.TransitionInOrder(ctx, &queued, []core.RunStatus{core.RunQueued})
		assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(err), "%v", err)
		missing := newRun("run_missing")
		missing.Status = core.RunRunning
		_, err = s.TransitionInOrder(ctx, missing, core.Sources(core.RunRunning))
		assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
		_, err = after()
		require.NoError(t, err, "a refused change does not take the events with it")
		stored, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, core.RunRunning, stored.Status)
	})
}

// TestEnqueueTransition: a status change queued without waiting is written
// in the run's order among the events queued around it, and reports its
// outcome (a refusal too) through its callback without taking those events
// with it.
func TestEnqueueTransition(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r := newRun("run_qt")
		_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		type outcome struct {
			run *core.Run
			err error
		}
		transition := func(to core.RunStatus, from []core.RunStatus) func() outcome {
			next := *r
			next.Status = to
			ch := make(chan outcome, 1)
			require.NoError(t, s.EnqueueTransition(ctx, &next, from, func(run *core.Run, err error) { ch <- outcome{run, err} }))
			return func() outcome { return <-ch }
		}
		var mu sync.Mutex
		var seen []core.EventType
		s.OnAppend(func(e core.Envelope) {
			if e.RunID == r.ID {
				mu.Lock()
				seen = append(seen, e.Event)
				mu.Unlock()
			}
		})
		before := enqueued(t, s, r, core.EventInput{Type: core.EventRunStatus, Payload: []byte(`{"stage":"sandbox_starting"}`)})
		running := transition(core.RunRunning, core.Sources(core.RunRunning))
		after := enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta})
		got := running()
		require.NoError(t, got.err)
		assert.Equal(t, core.RunRunning, got.run.Status)
		for _, wait := range []func() (core.Envelope, error){before, after} {
			_, err := wait()
			require.NoError(t, err)
		}
		stored, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, core.RunRunning, stored.Status)

		refused := transition(core.RunQueued, []core.RunStatus{core.RunQueued})
		next := enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta})
		assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(refused().err))
		_, err = next()
		require.NoError(t, err, "a refused change does not take the events with it")
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []core.EventType{core.EventRunStatus, core.EventAssistantDelta, core.EventAssistantDelta}, seen)
	})
}

// TestLanesKeepEachRunInOrder: runs spread over the log's lanes (several on
// PostgreSQL), each queueing events at once; every run's events are logged
// gap-free in its own order, and a run always takes the same lane.
func TestLanesKeepEachRunInOrder(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		const runs, each = 12, 40
		lanes := map[*eventWriter]bool{}
		var waits []func() (core.Envelope, error)
		rs := make([]*core.Run, runs)
		for i := range rs {
			rs[i] = newRun(fmt.Sprintf("run_lane_%d", i))
			_, err := s.StartRun(ctx, rs[i], nil, core.EventInput{Type: core.EventRunAccepted})
			require.NoError(t, err)
			lanes[s.lane(rs[i].ID)] = true
			assert.Same(t, s.lane(rs[i].ID), s.lane(rs[i].ID))
		}
		if s.Dialect() == Postgres {
			assert.Greater(t, len(lanes), 1, "runs spread over lanes")
		}
		for j := range each {
			for _, r := range rs {
				waits = append(waits, enqueued(t, s, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(fmt.Sprintf(`{"text":"%d"}`, j))}))
			}
		}
		for _, wait := range waits {
			_, err := wait()
			require.NoError(t, err)
		}
		for _, r := range rs {
			evs, err := s.ListEvents(ctx, r.ID, r.AppID, 1, 1000)
			require.NoError(t, err)
			require.Len(t, evs, each)
			for j, e := range evs {
				assert.Equal(t, int64(j+2), e.Seq)
				assert.JSONEq(t, fmt.Sprintf(`{"text":"%d"}`, j), string(e.Payload), "queue order")
			}
		}
	})
}

// TestBigBatchIsOneTransaction: a batch of more events than one statement
// takes on SQLite (rowsPerInsert) is written in several statements of one
// transaction: all in order, or, when one row collides, none.
func TestBigBatchIsOneTransaction(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		const n = 150
		commit := func(r *core.Run) []error {
			batch := make([]*appendReq, n)
			errs := make([]error, n)
			for i := range batch {
				batch[i] = &appendReq{run: r, ev: core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(fmt.Sprintf(`{"i":%d}`, i))},
					done: func(res appendResult) { errs[i] = res.err }}
			}
			// The lane's goroutine is idle: nothing else is queued.
			s.lane(r.ID).commit(batch)
			return errs
		}
		ok := newRun("run_big")
		_, err := s.StartRun(ctx, ok, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		for _, err := range commit(ok) {
			require.NoError(t, err)
		}
		evs, err := s.ListEvents(ctx, ok.ID, ok.AppID, 0, 1000)
		require.NoError(t, err)
		require.Len(t, evs, n+1)
		for i, e := range evs[1:] {
			require.Equal(t, int64(i+2), e.Seq)
			require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, i), string(e.Payload))
		}

		bad := newRun("run_big_bad")
		_, err = s.StartRun(ctx, bad, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		// A row the writer does not know of takes the 100th event's seq.
		_, err = s.w.Exec(s.rebind(`INSERT INTO run_events (run_id, seq, type, payload, ts) VALUES (?, 101, 'run.status', '{}', 0)`), bad.ID)
		require.NoError(t, err)
		for _, err := range commit(bad) {
			require.Error(t, err, "the whole batch fails")
		}
		evs, err = s.ListEvents(ctx, bad.ID, bad.AppID, 0, 1000)
		require.NoError(t, err)
		assert.Len(t, evs, 2, "run.accepted and the stray row: nothing of the batch")
	})
}

// TestTransitionInOrderAnswerLost: a batch holding only a status change
// commits, but its answer is lost (the connection dropped after COMMIT);
// the writer tries it again, which finds the run already in the new state.
// That is the first try's own change: the caller gets the run, not a
// refusal.
func TestTransitionInOrderAnswerLost(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		r := newRun("run_lost_answer")
		_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		lane := s.lane(r.ID)
		var lostOnce atomic.Bool
		// Set before the writer sees a request of this test: the queue's
		// send happens before the writer's receive.
		lane.loseAnswer = func() bool { return lostOnce.CompareAndSwap(false, true) }
		running := *r
		running.Status = core.RunRunning
		// Only from queued: the retry, finding it running, is refused.
		got, err := s.TransitionInOrder(ctx, &running, []core.RunStatus{core.RunQueued})
		require.NoError(t, err, "the retry finds the first try's change, and says so")
		require.True(t, lostOnce.Load(), "the first try's answer was lost")
		assert.Equal(t, core.RunRunning, got.Status)

		// A real refusal on a retried batch is still one.
		queued := running
		queued.Status = core.RunQueued
		lostOnce.Store(false)
		_, err = s.TransitionInOrder(ctx, &queued, []core.RunStatus{core.RunQueued})
		assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(err), "%v", err)
	})
}
