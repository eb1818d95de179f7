package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
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

// postgresURL returns a URL for a new, empty schema, dropped after the test.
func postgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("TEST_DATABASE_URL not set: PostgreSQL tests skipped (.ci/run sets it)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sqlx.Open("postgres", base)
	require.NoError(t, err)
	_, err = admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPostgres(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), postgresURL(t), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
