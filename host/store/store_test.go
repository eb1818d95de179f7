package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newRun(id string) *core.Run {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &core.Run{ID: id, TenantID: "t1", AppID: "app1", Prompt: "say hi", Status: core.RunQueued, Engine: "mock",
		SandboxBackend: "local", Context: json.RawMessage(`{"timing_metrics_ms":{"create_run":3}}`), CreatedAt: now, UpdatedAt: now}
}

func TestMigrations(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		latest, err := LatestVersion(s.Dialect())
		require.NoError(t, err)
		v, dirty, err := s.SchemaVersion()
		require.NoError(t, err)
		assert.Equal(t, latest, v)
		assert.False(t, dirty)
		require.NoError(t, s.MigrateUp(), "up again is a no-op")

		require.NoError(t, s.MigrateDown())
		v, _, err = s.SchemaVersion()
		require.NoError(t, err)
		assert.Equal(t, latest-1, v)
		require.NoError(t, s.MigrateUp())

		// A schema newer than this binary knows is refused.
		_, err = s.w.Exec(s.rebind(`UPDATE schema_migrations SET version = ?`), latest+1)
		require.NoError(t, err)
		err = s.MigrateUp()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "newer than this agenthost knows")
	})
}

func TestRunStore(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		r := newRun("run_1")
		r.IdempotencyKey = "k1"
		require.NoError(t, s.CreateRun(ctx, r))
		err := s.CreateRun(ctx, newRun("run_1"))
		assert.True(t, errors.Is(err, ErrConflict), "duplicate id: %v", err)
		dup := newRun("run_2")
		dup.IdempotencyKey = "k1"
		assert.True(t, errors.Is(s.CreateRun(ctx, dup), ErrConflict), "duplicate idempotency key")
		other := newRun("run_3")
		other.TenantID, other.IdempotencyKey = "t2", "k1"
		require.NoError(t, s.CreateRun(ctx, other), "idempotency keys are per tenant")

		got, err := s.GetRun(ctx, "run_1")
		require.NoError(t, err)
		assert.Equal(t, r.Prompt, got.Prompt)
		assert.Equal(t, core.RunQueued, got.Status)
		assert.JSONEq(t, string(r.Context), string(got.Context))
		assert.Equal(t, r.CreatedAt, got.CreatedAt)
		assert.Nil(t, got.FinishedAt)

		started := time.Now().UTC().Truncate(time.Millisecond)
		updated, err := s.UpdateRun(ctx, "run_1", func(run *core.Run) error {
			run.Status, run.SandboxID, run.SandboxStartedAt = core.RunCompleted, "sbx_1", &started
			run.FinishedAt, run.OutputText, run.InputTokens = &started, "done", 42
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, core.RunCompleted, updated.Status)
		got, err = s.GetRun(ctx, "run_1")
		require.NoError(t, err)
		assert.Equal(t, "sbx_1", got.SandboxID)
		assert.Equal(t, started, *got.SandboxStartedAt)
		assert.Equal(t, int64(42), got.InputTokens)
		assert.Equal(t, "k1", got.IdempotencyKey)

		_, err = s.UpdateRun(ctx, "run_1", func(*core.Run) error { return core.Errf(core.CodeInvalidRunTransition, "", "no") })
		assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(err), "fn's error is returned and nothing is written")

		_, err = s.GetRun(ctx, "missing")
		assert.True(t, errors.Is(err, ErrNotFound))
		assert.Equal(t, core.CodeNotFound, core.CodeOf(err))
		_, err = s.UpdateRun(ctx, "missing", func(*core.Run) error { return nil })
		assert.True(t, errors.Is(err, ErrNotFound))

		queued, err := s.ListRunsByStatus(ctx, core.RunQueued, core.RunRunning)
		require.NoError(t, err)
		require.Len(t, queued, 1)
		assert.Equal(t, "run_3", queued[0].ID)
	})
}

func TestEngineState(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		st, err := s.LoadEngineState(ctx, "r")
		require.NoError(t, err)
		assert.Nil(t, st)
		require.NoError(t, s.SaveEngineState(ctx, "r", []byte(`{"i":1}`), nil))
		_, ok, err := s.LoadWorkFiles(ctx, "r")
		require.NoError(t, err)
		assert.False(t, ok, "no files saved yet")

		// Files saved with a state come back with it; a later state saved
		// without files keeps them.
		work := []sandbox.File{{Path: "a.txt", Mode: 0o644, Data: []byte("one")}, {Path: "bin/run", Mode: 0o755, Data: []byte{0, 1}}, {Path: "empty", Mode: 0o644, Data: []byte{}}}
		refs := make([]core.FileRef, len(work))
		for i, f := range work {
			sha, err := s.PutBlob(ctx, f.Data)
			require.NoError(t, err)
			refs[i] = core.FileRef{Path: f.Path, Mode: f.Mode, SHA256: sha}
		}
		require.NoError(t, s.SaveEngineState(ctx, "r", []byte(`{"i":2}`), refs))
		require.NoError(t, s.SaveEngineState(ctx, "r", []byte{0, 1, 2, 255}, nil))
		st, err = s.LoadEngineState(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, []byte{0, 1, 2, 255}, st)
		got, ok, err := s.LoadWorkFiles(ctx, "r")
		require.NoError(t, err)
		require.True(t, ok)
		require.Len(t, got, 3)
		for i := range work {
			assert.Equal(t, work[i].Path, got[i].Path)
			assert.Equal(t, work[i].Mode, got[i].Mode)
			assert.Equal(t, string(work[i].Data), string(got[i].Data))
		}
		// An empty working copy is a saved working copy.
		require.NoError(t, s.SaveEngineState(ctx, "r", []byte(`{}`), []core.FileRef{}))
		got, ok, err = s.LoadWorkFiles(ctx, "r")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Empty(t, got)

		// A manifest naming content that is not stored saves nothing.
		err = s.SaveEngineState(ctx, "r", []byte(`{"i":3}`), []core.FileRef{{Path: "x", SHA256: strings.Repeat("ab", 32)}})
		require.Error(t, err)
		st, err = s.LoadEngineState(ctx, "r")
		require.NoError(t, err)
		assert.Equal(t, []byte(`{}`), st)
	})
}

func TestEventLog(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var seen []core.Envelope
		var mu sync.Mutex
		s.OnAppend(func(e core.Envelope) { mu.Lock(); seen = append(seen, e); mu.Unlock() })

		// 20 runs append concurrently; each run's appends are sequential
		// (as the orchestrator makes them), and every run gets 1..n.
		const runs, per = 20, 60
		var wg sync.WaitGroup
		for i := 0; i < runs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run := newRun(fmt.Sprintf("r%d", i))
				for j := 1; j <= per; j++ {
					typ := core.EventAssistantDelta
					if j == per {
						typ = core.EventRunCompleted
					}
					env, err := s.Append(ctx, run, core.EventInput{Type: typ, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, j))})
					if !assert.NoError(t, err) {
						return
					}
					assert.Equal(t, int64(j), env.Seq)
				}
			}()
		}
		wg.Wait()
		for i := 0; i < runs; i++ {
			evs, err := s.ListEvents(ctx, fmt.Sprintf("r%d", i), "app1", 0, 0)
			require.NoError(t, err)
			require.Len(t, evs, per)
			for j, e := range evs {
				assert.Equal(t, int64(j+1), e.Seq)
				assert.JSONEq(t, fmt.Sprintf(`{"n":%d}`, j+1), string(e.Payload))
			}
			assert.Equal(t, core.EventRunCompleted, evs[per-1].Event)
		}
		mu.Lock()
		assert.Len(t, seen, runs*per, "every committed event reaches the listeners")
		mu.Unlock()

		last, err := s.LastEvent(ctx, "r7", "app1")
		require.NoError(t, err)
		assert.Equal(t, int64(per), last.Seq)
		assert.Equal(t, "app1", last.AppID)
		none, err := s.LastEvent(ctx, "no-such-run", "app1")
		require.NoError(t, err)
		assert.Nil(t, none)
		require.NoError(t, s.Ping(ctx))

		// Follow from any seq, in pages.
		page, err := s.ListEvents(ctx, "r3", "app1", 57, 2)
		require.NoError(t, err)
		require.Len(t, page, 2)
		assert.Equal(t, []int64{58, 59}, []int64{page[0].Seq, page[1].Seq})

		// After the cached counter is dropped (terminal event), the next
		// append continues from the log, not from 1.
		env, err := s.Append(ctx, newRun("r3"), core.EventInput{Type: core.EventRunStatus, Diagnostics: json.RawMessage(`{"x":1}`)})
		require.NoError(t, err)
		assert.Equal(t, int64(per+1), env.Seq)
		tail, err := s.ListEvents(ctx, "r3", "app1", per, 0)
		require.NoError(t, err)
		require.Len(t, tail, 1)
		assert.JSONEq(t, `{"x":1}`, string(tail[0].Diagnostics))
	})
}

func TestEventLogSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	s, err := Open(ctx, path, "")
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err := s.Append(ctx, newRun("r"), core.EventInput{Type: core.EventAssistantDelta})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	_, err = s.Append(ctx, newRun("r"), core.EventInput{Type: core.EventAssistantDelta})
	assert.Error(t, err, "append after close")

	s, err = Open(ctx, path, "")
	require.NoError(t, err)
	defer s.Close()
	env, err := s.Append(ctx, newRun("r"), core.EventInput{Type: core.EventAssistantDelta})
	require.NoError(t, err)
	assert.Equal(t, int64(6), env.Seq)
}
