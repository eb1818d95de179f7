package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

// eachDialect runs fn on a fresh SQLite database and, when
// TEST_DATABASE_URL is set, on a fresh PostgreSQL schema. .ci/run always
// sets it, so CI runs both.
func eachDialect(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, openSQLite(t))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, openPostgres(t))
	})
}

func openSQLite(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openPostgres(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), testenv.PostgresURL(t), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
