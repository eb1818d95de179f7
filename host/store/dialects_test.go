package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
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

// TestSQLiteFilesArePrivate: sandboxed commands run as other uids on the
// host's machine, so the database (and its WAL) is the host user's alone,
// including a file an older host created world-readable.
func TestSQLiteFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "agenthost.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	st, err := Open(context.Background(), path, dir)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.EnsureTenant(context.Background(), "t", "T")) // writes through the WAL
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
}
