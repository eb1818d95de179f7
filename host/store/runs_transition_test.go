package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTransitionRun: a status change is written whole, in one statement,
// only from a state that allows it; the stored run comes back.
func TestTransitionRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		r := newRun("run_1")
		r.IdempotencyKey = "k1"
		require.NoError(t, s.CreateRun(ctx, r))

		next := *r
		started := time.Now().UTC().Truncate(time.Millisecond)
		next.Status, next.SandboxID, next.SandboxStartedAt = core.RunRunning, "sbx_1", &started
		next.Context = []byte(`{"timing_metrics_ms":{"create_run":3}}`)
		got, err := s.TransitionRun(ctx, &next, core.Sources(core.RunRunning))
		require.NoError(t, err)
		assert.Equal(t, core.RunRunning, got.Status)
		assert.Equal(t, "sbx_1", got.SandboxID)
		assert.Equal(t, started, *got.SandboxStartedAt)
		assert.Equal(t, "k1", got.IdempotencyKey, "what a transition does not change is kept")
		assert.Equal(t, r.Prompt, got.Prompt)
		assert.JSONEq(t, `{"timing_metrics_ms":{"create_run":3}}`, string(got.Context))
		// What comes back is the stored row, not the caller's copy: times
		// to the millisecond the log keeps.
		next.UpdatedAt = time.Now()
		got, err = s.TransitionRun(ctx, &next, core.Sources(core.RunRunning))
		require.NoError(t, err)
		stored, err := s.GetRun(ctx, "run_1")
		require.NoError(t, err)
		assert.Equal(t, stored, got)

		// Running to running: recording the sandbox keeps the state.
		next = *got
		next.SandboxStatus = "running"
		got, err = s.TransitionRun(ctx, &next, core.Sources(core.RunRunning))
		require.NoError(t, err)

		done := *got
		done.Status, done.FinishedAt, done.OutputText, done.InputTokens = core.RunCompleted, &started, "ok", 42
		got, err = s.TransitionRun(ctx, &done, core.Sources(core.RunCompleted))
		require.NoError(t, err)
		stored, err = s.GetRun(ctx, "run_1")
		require.NoError(t, err)
		assert.Equal(t, got, stored)
		assert.Equal(t, core.RunCompleted, stored.Status)
		assert.Equal(t, "running", stored.SandboxStatus)
		assert.Equal(t, int64(42), stored.InputTokens)

		// A finished run stays finished: nothing is written.
		again := *stored
		again.Status, again.OutputText = core.RunRunning, "overwritten"
		_, err = s.TransitionRun(ctx, &again, core.Sources(core.RunRunning))
		assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(err), "%v", err)
		assert.Contains(t, err.Error(), "a completed run cannot become running")
		stored, err = s.GetRun(ctx, "run_1")
		require.NoError(t, err)
		assert.Equal(t, "ok", stored.OutputText)

		missing := *r
		missing.ID = "missing"
		_, err = s.TransitionRun(ctx, &missing, core.Sources(core.RunRunning))
		assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
	})
}

// TestStartRun: a new run, its chat session and turn and its run.accepted
// are written together, or (a duplicate idempotency key) not at all; the
// run's next event follows run.accepted, and listeners see it.
func TestStartRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
		require.NoError(t, err)
		var mu sync.Mutex
		var seen []core.Envelope
		s.OnAppend(func(e core.Envelope) { mu.Lock(); seen = append(seen, e); mu.Unlock() })
		accepted := core.EventInput{Type: core.EventRunAccepted, Payload: []byte(`{"engine":"mock"}`)}

		r := newRun("run_1")
		r.UserID, r.ChatSessionID, r.IdempotencyKey = user, "chat_1", "k1"
		env, err := s.StartRun(ctx, r, &core.ChatTurn{MessageID: "msg_1", Content: "say hi", NewSession: true, Title: "say hi"}, accepted)
		require.NoError(t, err)
		assert.Equal(t, int64(1), env.Seq)
		mu.Lock()
		assert.Equal(t, []core.Envelope{env}, seen, "listeners see run.accepted when it is committed")
		mu.Unlock()
		stored, err := s.GetRun(ctx, "run_1")
		require.NoError(t, err)
		assert.Equal(t, r.ID, stored.ID)
		assert.Equal(t, r.Status, stored.Status)
		assert.Equal(t, "k1", stored.IdempotencyKey)
		assert.Equal(t, "chat_1", stored.ChatSessionID)
		assert.Equal(t, r.Prompt, stored.Prompt)
		assert.Equal(t, r.CreatedAt.UnixMilli(), stored.CreatedAt.UnixMilli())
		cs, err := s.GetChatSession(ctx, "chat_1")
		require.NoError(t, err)
		assert.Equal(t, "say hi", cs.Title)
		assert.Equal(t, user, cs.UserID)
		msgs, err := s.ChatMessages(ctx, "chat_1")
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		assert.Equal(t, "run_1", msgs[0].RunID.String)
		assert.Equal(t, "user", msgs[0].Role)
		next, err := s.Append(ctx, r, core.EventInput{Type: core.EventRunStatus})
		require.NoError(t, err)
		assert.Equal(t, int64(2), next.Seq, "the log goes on after run.accepted")
		evs, err := s.ListEvents(ctx, "run_1", "app1", 0, 10)
		require.NoError(t, err)
		require.Len(t, evs, 2)
		assert.Equal(t, core.EventRunAccepted, evs[0].Event)
		assert.JSONEq(t, `{"engine":"mock"}`, string(evs[0].Payload))

		// A second turn in the session; then one whose key is taken.
		r2 := newRun("run_2")
		r2.UserID, r2.ChatSessionID = user, "chat_1"
		_, err = s.StartRun(ctx, r2, &core.ChatTurn{MessageID: "msg_2", Content: "again"}, accepted)
		require.NoError(t, err)
		dup := newRun("run_3")
		dup.UserID, dup.ChatSessionID, dup.IdempotencyKey = user, "chat_2", "k1"
		_, err = s.StartRun(ctx, dup, &core.ChatTurn{MessageID: "msg_3", Content: "dup", NewSession: true}, accepted)
		assert.True(t, errors.Is(err, ErrConflict), "%v", err)
		_, err = s.GetChatSession(ctx, "chat_2")
		assert.True(t, errors.Is(err, ErrNotFound), "the new session is not left behind: %v", err)
		msgs, err = s.ChatMessages(ctx, "chat_1")
		require.NoError(t, err)
		assert.Len(t, msgs, 2, "nor the turn")
		evs, err = s.ListEvents(ctx, "run_3", "app1", 0, 10)
		require.NoError(t, err)
		assert.Empty(t, evs, "nor run.accepted")
	})
}
