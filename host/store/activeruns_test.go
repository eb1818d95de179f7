package store

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planOf returns how the database would run query: SQLite's EXPLAIN QUERY
// PLAN, or PostgreSQL's EXPLAIN with sequential scans priced out, so that
// any index it can use for the query is used (the tables here are nearly
// empty, and a scan would otherwise win on cost alone).
func planOf(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	explain := "EXPLAIN QUERY PLAN "
	if s.Dialect() == Postgres {
		explain = "EXPLAIN "
		s.SetMaxConns(2) // one pooled connection: the SET below holds for the EXPLAIN
		_, err := s.w.Exec(`SET enable_seqscan = off`)
		require.NoError(t, err)
	}
	rows, err := s.r.Queryx(s.rebind(explain+query), args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		cols, err := rows.SliceScan()
		require.NoError(t, err)
		for _, c := range cols {
			if b, ok := c.([]byte); ok {
				c = string(b)
			}
			if text, ok := c.(string); ok {
				plan.WriteString(text + "\n")
			}
		}
	}
	require.NoError(t, rows.Err())
	return plan.String()
}

// TestActiveRunsUseTheirIndex: the queries of a host's active runs
// (recovery, takeover of a lost host's runs, forgetting lapsed hosts) are
// served by the small partial index runs_active, on both databases. A
// query that names the states in other words than the index's predicate
// would scan every run ever made.
func TestActiveRunsUseTheirIndex(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.SetOwner("host-a")
		for i, status := range []core.RunStatus{core.RunQueued, core.RunRunning, core.RunPaused, core.RunCompleted, core.RunFailed} {
			r := newRun("run" + string(rune('a'+i)))
			r.Status = status
			require.NoError(t, s.CreateRun(ctx, r))
		}
		runs, err := s.ListRunsByStatus(ctx, core.RunPaused, core.RunQueued, core.RunRunning)
		require.NoError(t, err)
		assert.Len(t, runs, 3, "the active runs, in any order of states")
		runs, err = s.ListRunsByStatus(ctx, core.RunCompleted)
		require.NoError(t, err)
		assert.Len(t, runs, 1, "another set of states still works")

		for name, q := range map[string]string{
			"recovery":    `SELECT ` + runColumns + ` FROM runs WHERE ` + activeRunsWhere + ` ORDER BY created_at, id`,
			"lost owners": `SELECT DISTINCT owner FROM runs WHERE ` + activeRunsWhere + ` AND owner NOT IN (SELECT lease_key FROM hosts WHERE lease_until >= 0)`,
			"takeover":    `SELECT id FROM runs WHERE owner = 'host-a' AND ` + activeRunsWhere,
		} {
			assert.Contains(t, planOf(t, s, q), "runs_active", name)
		}
	})
}
