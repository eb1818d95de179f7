package testenv

import (
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// PostgresServerCPU reads the CPU time, user and system, that the
// PostgreSQL server db is connected to has used so far, when that server
// runs on this machine: the postmaster, its live backends and the ones
// that ended. TreeCPU leaves the server out, yet on PostgreSQL it spends
// about as much CPU on a turn as the host and its plugins together, and it
// is the one process that every host sharing the database loads.
// Everything the server does meanwhile counts (other databases' work
// too): take both readings around the work alone. ok is false when the
// server is on another machine (or off Linux).
func PostgresServerCPU(tb testing.TB, db *sqlx.DB) (read func() time.Duration, ok bool) {
	tb.Helper()
	var backend int
	require.NoError(tb, db.Get(&backend, `SELECT pg_backend_pid()`))
	root := postmasterOf(backend) // read from /proc already: serverCPU can read it
	if root == 0 {
		return nil, false
	}
	return func() time.Duration {
		d, _ := serverCPU(root)
		return d
	}, true
}
