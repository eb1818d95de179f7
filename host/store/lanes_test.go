package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLanesWriteOnConnectionsOfTheirOwn: on PostgreSQL the event log's
// writers commit on connections set apart from the pool (lanePool), so a
// pool that other work holds whole does not hold up a run's events or its
// status changes, and each lane statement is prepared (and planned) on a
// few connections rather than on every one of the pool's.
func TestLanesWriteOnConnectionsOfTheirOwn(t *testing.T) {
	s := openPostgres(t)
	s.SetMaxConns(8) // the lease's, one of the lanes' (a quarter of 7, rounded down), a pool of 6
	require.Equal(t, 6, s.w.Stats().MaxOpenConnections)
	require.Equal(t, 1, s.lanePool.Stats().MaxOpenConnections)
	ctx := context.Background()
	run := newRun(core.NewID("run"))
	require.NoError(t, s.CreateRun(ctx, run))

	var held []*sql.Tx
	for range 6 {
		tx, err := s.w.BeginTx(ctx, nil)
		require.NoError(t, err)
		held = append(held, tx)
	}
	defer func() {
		for _, tx := range held {
			_ = tx.Rollback()
		}
	}()
	// The deadline only bounds a failure: a commit queued behind the
	// held pool would wait for as long as it is held.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.Append(wctx, run, core.EventInput{Type: core.EventAssistantDelta, Payload: json.RawMessage(`{"text":"hi"}`)})
	require.NoError(t, err, "the event's commit waited for the busy pool")
	running := *run
	running.Status = core.RunRunning
	_, err = s.TransitionInOrder(wctx, &running, []core.RunStatus{core.RunQueued})
	require.NoError(t, err, "the status change waited for the busy pool")

	var events int
	var status string
	require.NoError(t, held[0].QueryRowContext(ctx, `SELECT count(*) FROM run_events WHERE run_id = $1`, run.ID).Scan(&events))
	require.NoError(t, held[0].QueryRowContext(ctx, `SELECT status FROM runs WHERE id = $1`, run.ID).Scan(&status))
	assert.Equal(t, 1, events, "the event is committed")
	assert.Equal(t, string(core.RunRunning), status, "the change is committed")
	assert.Positive(t, s.lanePool.Stats().OpenConnections, "the lanes wrote on their own connection")
}

// TestLaneConnectionsCountTowardsTheLimit: however many connections
// SetMaxConns allows, the lease's, the lanes' and the pool's add up to
// it; below 5 the lanes set none apart and write with the pool.
func TestLaneConnectionsCountTowardsTheLimit(t *testing.T) {
	s := openPostgres(t)
	for _, c := range []struct{ max, pool, lanes int }{
		{max: 32, pool: 29, lanes: 2},
		{max: 9, pool: 6, lanes: 2},
		{max: 6, pool: 4, lanes: 1},
		{max: 5, pool: 3, lanes: 1},
		{max: 4, pool: 3, lanes: 0},
		{max: 2, pool: 1, lanes: 0},
	} {
		s.SetMaxConns(c.max)
		assert.Equal(t, c.pool, s.w.Stats().MaxOpenConnections, "pool of %d", c.max)
		if c.lanes == 0 {
			assert.Same(t, s.w, s.lanes(), "with %d the lanes write with the pool", c.max)
			continue
		}
		assert.Same(t, s.lanePool, s.lanes(), "with %d the lanes have their own", c.max)
		assert.Equal(t, c.lanes, s.lanePool.Stats().MaxOpenConnections, "lanes of %d", c.max)
		assert.Equal(t, c.max, 1+c.pool+c.lanes)
	}
	// Back to connections of their own after having none, and writing.
	s.SetMaxConns(8)
	run := newRun(core.NewID("run"))
	_, err := s.Append(context.Background(), run, core.EventInput{Type: core.EventAssistantDelta, Payload: json.RawMessage(`{"text":"hi"}`)})
	require.NoError(t, err)
	assert.Same(t, s.lanePool, s.lanes())
}

// TestSQLiteLanesWriteWithTheWriter: SQLite has one writer connection,
// and its one lane writes with it.
func TestSQLiteLanesWriteWithTheWriter(t *testing.T) {
	s := openSQLite(t)
	assert.Nil(t, s.lanePool)
	assert.Same(t, s.w, s.lanes())
}
