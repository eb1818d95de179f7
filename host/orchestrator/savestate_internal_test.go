package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedQueue is an EventQueue whose queued events commit only when the
// test says so, like a log writer behind a slow database.
type gatedQueue struct {
	mu      sync.Mutex
	pending []queuedEvent
	logged  []core.EventType
}

type queuedEvent struct {
	ev   NewEvent
	done func(core.Envelope, error)
}

func (q *gatedQueue) Append(_ context.Context, _ *core.Run, ev NewEvent) (core.Envelope, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.logged = append(q.logged, ev.Type)
	return core.Envelope{Event: ev.Type}, nil
}

func (q *gatedQueue) Enqueue(_ context.Context, _ *core.Run, ev NewEvent, done func(core.Envelope, error)) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, queuedEvent{ev, done})
	return nil
}

// commitAll commits every queued event, as one batch, failing them all
// with err when it is not nil.
func (q *gatedQueue) commitAll(err error) int {
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	if err == nil {
		for _, p := range batch {
			q.logged = append(q.logged, p.ev.Type)
		}
	}
	q.mu.Unlock()
	for _, p := range batch {
		p.done(core.Envelope{Event: p.ev.Type}, err)
	}
	return len(batch)
}

func (q *gatedQueue) types() []core.EventType {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]core.EventType(nil), q.logged...)
}

// stateStore is the part of a RunStore SaveState uses: it records which
// events were logged when each state was saved.
type stateStore struct {
	RunStore
	q      *gatedQueue
	mu     sync.Mutex
	states [][]core.EventType
}

func (s *stateStore) SaveEngineState(_ context.Context, _ string, _ []byte, _ []core.FileRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, s.q.types())
	return nil
}

// TestSaveStateWaitsForTheRunsEvents: an engine's state is saved only once
// every event it emitted before is committed, a held tool.started
// included. A host that dies right after the save resumes the run from
// that state and never emits those events again, so a state saved ahead
// of its events would lose them (TestNativeRunSurvivesSIGKILL saw a run's
// tool call vanish from its log that way). A commit that fails fails the
// save, and no state is written.
func TestSaveStateWaitsForTheRunsEvents(t *testing.T) {
	q := &gatedQueue{}
	runs := &stateStore{q: q}
	ar := newActiveRun(&core.Run{ID: "run_1", AppID: "app_1"}, StartRequest{})
	o := &Orchestrator{events: q, runs: runs, log: hclog.NewNullLogger(), active: map[string]*activeRun{"run_1": ar}}
	ctx := context.Background()

	require.NoError(t, o.emit(ctx, ar, core.EventAssistantDelta, map[string]any{"text": "Editing."}))
	require.NoError(t, o.emitToolStarted(ctx, ar, "c1", "t", json.RawMessage("{}")))
	saved := make(chan error, 1)
	go func() { saved <- o.SaveState(ctx, "run_1", []byte(`{"turn":1}`)) }()

	// The held tool.started is queued by the save itself, behind the delta.
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.pending) == 2
	}, 10*time.Second, time.Millisecond, "the save queues the held tool.started")
	select {
	case err := <-saved:
		t.Fatalf("the state was saved (err %v) with its events still uncommitted", err)
	default:
	}
	require.Equal(t, 2, q.commitAll(nil))
	require.NoError(t, <-saved)
	require.Len(t, runs.states, 1)
	assert.Equal(t, []core.EventType{core.EventAssistantDelta, core.EventToolStarted}, runs.states[0],
		"what the log held when the state was written")

	// A failed commit fails the save.
	require.NoError(t, o.emit(ctx, ar, core.EventAssistantDelta, map[string]any{"text": "more"}))
	go func() { saved <- o.SaveState(ctx, "run_1", []byte(`{"turn":2}`)) }()
	lost := errors.New("connection reset")
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.pending) == 1
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, 1, q.commitAll(lost))
	require.ErrorIs(t, <-saved, lost)
	assert.Len(t, runs.states, 1, "no state is saved past events that were not logged")
	assert.NoError(t, ar.ctx.Err(), "a failure of its own does not stop the run")

	// Taken over by another host: the run stops, as when an emit learns it.
	taken := newActiveRun(&core.Run{ID: "run_2", AppID: "app_1"}, StartRequest{})
	o.active["run_2"] = taken
	require.NoError(t, o.emit(ctx, taken, core.EventAssistantDelta, map[string]any{"text": "late"}))
	go func() { saved <- o.SaveState(ctx, "run_2", []byte(`{"turn":1}`)) }()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.pending) == 1
	}, 10*time.Second, time.Millisecond)
	q.commitAll(core.Errf(core.CodeLeaseLost, "run_id", "run_2 is owned by another host"))
	require.Equal(t, core.CodeLeaseLost, core.CodeOf(<-saved))
	assert.ErrorIs(t, taken.ctx.Err(), context.Canceled, "the run stops")
	assert.True(t, taken.leaseLost())
	assert.Len(t, runs.states, 1)
}
