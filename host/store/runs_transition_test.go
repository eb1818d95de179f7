package store

import (
	"context"
	"errors"
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

		// Running to running: recording the sandbox keeps the state.
		next = *got
		next.SandboxStatus = "running"
		got, err = s.TransitionRun(ctx, &next, core.Sources(core.RunRunning))
		require.NoError(t, err)

		done := *got
		done.Status, done.FinishedAt, done.OutputText, done.InputTokens = core.RunCompleted, &started, "ok", 42
		got, err = s.TransitionRun(ctx, &done, core.Sources(core.RunCompleted))
		require.NoError(t, err)
		stored, err := s.GetRun(ctx, "run_1")
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
