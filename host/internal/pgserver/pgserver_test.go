package pgserver_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"syscall"
	"testing"

	_ "github.com/lib/pq" // the driver the host's store uses
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agenthost/agenthost/host/internal/pgserver"
)

// TestRestartAndStop shows what a client of the store sees when its
// server restarts or stays down, as tests of reconnect logic rely on.
func TestRestartAndStop(t *testing.T) {
	t.Parallel()
	srv := pgserver.Start(t)
	ctx := t.Context()
	db, err := sql.Open("postgres", srv.URL())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	_, err = db.ExecContext(ctx, `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO items VALUES (1, 'kept')`)
	require.NoError(t, err)
	// A connection held across the restart, so we see what it gets rather
	// than what the pool hides.
	held, err := db.Conn(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { held.Close() })
	require.NoError(t, held.PingContext(ctx))

	srv.Restart(t)

	// (a) The old session died with the server: lib/pq turns the FATAL
	// admin-shutdown message into driver.ErrBadConn...
	var one int
	err = held.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
	assert.ErrorIs(t, err, driver.ErrBadConn, "query on a connection from before the restart")
	// ...on which database/sql drops the pooled connection and dials anew,
	// and (b) the committed row survived.
	var name string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT name FROM items WHERE id = 1`).Scan(&name))
	assert.Equal(t, "kept", name)

	// (c) While the server is down, a query fails to connect.
	srv.Stop(t)
	err = db.QueryRowContext(ctx, `SELECT name FROM items WHERE id = 1`).Scan(&name)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "query while stopped")

	srv.Start(t)
	require.NoError(t, db.QueryRowContext(ctx, `SELECT name FROM items WHERE id = 1`).Scan(&name))
	assert.Equal(t, "kept", name)
}

// TestKillRecovers crashes the server and checks that Start brings it back
// through crash recovery with committed data intact.
func TestKillRecovers(t *testing.T) {
	t.Parallel()
	srv := pgserver.Start(t)
	ctx := t.Context()
	db, err := sql.Open("postgres", srv.URL())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.ExecContext(ctx, `CREATE TABLE items (id int PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO items VALUES (1)`)
	require.NoError(t, err)
	port := srv.Port()

	srv.Kill(t)
	require.Error(t, db.PingContext(ctx), "ping after kill")
	srv.Start(t)

	assert.Equal(t, port, srv.Port(), "port after restart")
	assert.Equal(t, 1, count(ctx, t, db))
}

// TestServersAreSeparate checks two servers in one test do not share data
// or a port.
func TestServersAreSeparate(t *testing.T) {
	t.Parallel()
	a, b := pgserver.Start(t), pgserver.Start(t)
	require.NotEqual(t, a.URL(), b.URL())
	ctx := t.Context()
	dbA, err := sql.Open("postgres", a.URL())
	require.NoError(t, err)
	t.Cleanup(func() { dbA.Close() })
	dbB, err := sql.Open("postgres", b.URL())
	require.NoError(t, err)
	t.Cleanup(func() { dbB.Close() })
	_, err = dbA.ExecContext(ctx, `CREATE TABLE items (id int)`)
	require.NoError(t, err)

	b.Stop(t)
	// a is untouched by b's stop.
	assert.Equal(t, 0, count(ctx, t, dbA))
}

func count(ctx context.Context, t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&n))
	return n
}
