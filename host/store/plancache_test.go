package store

import (
	"context"
	"net/url"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eventInsertPlans appends n events to one run on s and reports how often
// the connection planned the log's insert for its arguments (custom) and
// how often it reused its one plan (generic). s must have a single pooled
// connection: pg_prepared_statements shows the asking session's own.
func eventInsertPlans(t *testing.T, s *Store, n int) (custom, generic int64) {
	t.Helper()
	s.SetMaxConns(2)
	run := newRun("plans")
	for range n {
		_, err := s.Append(context.Background(), run, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"x"}`)})
		require.NoError(t, err)
	}
	require.NoError(t, s.r.QueryRowx(`SELECT COALESCE(sum(custom_plans), 0), COALESCE(sum(generic_plans), 0)
 FROM pg_prepared_statements WHERE statement LIKE '%INSERT INTO run_events%'`).Scan(&custom, &generic))
	return custom, generic
}

// TestEventInsertsArePlannedOnce: PostgreSQL plans the event log's insert
// once per connection, not at every commit (connectionDefaults), and a
// database URL that names plan_cache_mode keeps its own choice.
func TestEventInsertsArePlannedOnce(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		s := openPostgres(t)
		var mode string
		require.NoError(t, s.r.Get(&mode, `SHOW plan_cache_mode`))
		assert.Equal(t, "force_generic_plan", mode)
		custom, generic := eventInsertPlans(t, s, 12)
		assert.Zero(t, custom, "no commit planned the insert for its own arguments")
		assert.GreaterOrEqual(t, generic, int64(12))
	})
	t.Run("the URL's own choice", func(t *testing.T) {
		u, err := url.Parse(testenv.PostgresURL(t))
		require.NoError(t, err)
		q := u.Query()
		q.Set("plan_cache_mode", "auto")
		u.RawQuery = q.Encode()
		s, err := Open(context.Background(), u.String(), "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		var mode string
		require.NoError(t, s.r.Get(&mode, `SHOW plan_cache_mode`))
		assert.Equal(t, "auto", mode)
		// Left to choose, PostgreSQL plans this insert anew each time:
		// what the default above saves.
		custom, _ := eventInsertPlans(t, s, 12)
		assert.Positive(t, custom)
	})
}
