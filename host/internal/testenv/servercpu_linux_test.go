package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
	"github.com/stretchr/testify/require"
)

// TestPostgresServerCPU: work done by one backend shows in the server's
// CPU time, also once that backend's connection has ended (the postmaster
// keeps the time of the backends it reaped).
func TestPostgresServerCPU(t *testing.T) {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("TEST_DATABASE_URL not set: PostgreSQL variant skipped (.ci/run sets it)")
	}
	admin, err := sqlx.Open("postgres", base)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	read, ok := PostgresServerCPU(t, admin)
	require.True(t, ok, "the test server runs on this machine (.ci/run starts it here)")
	before := read()

	// A connection of its own, busy for a while in its backend, then closed.
	busy, err := sqlx.Open("postgres", base)
	require.NoError(t, err)
	var n int64
	require.NoError(t, busy.Get(&n, `SELECT count(*) FROM generate_series(1, 3000000) AS s WHERE s % 7 = 0`))
	require.Equal(t, int64(428571), n)
	require.NoError(t, busy.Close())

	// A closed backend's time moves to the postmaster once it has reaped
	// it: until then the backend may have left /proc with its time not yet
	// in the postmaster's. The query above costs far more than 50 ms of CPU.
	deadline := time.Now().Add(20 * time.Second)
	for read()-before < 50*time.Millisecond {
		require.True(t, time.Now().Before(deadline), "the busy backend's CPU never showed in the server's (%v)", read()-before)
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadProcStat: a command whose name holds spaces and parentheses
// parses, with its parent.
func TestReadProcStat(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	odd := filepath.Join(t.TempDir(), "a (b) c")
	require.NoError(t, os.Symlink(sleep, odd))
	cmd := exec.Command(odd, "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child, ok := readProcStat(cmd.Process.Pid)
	require.True(t, ok)
	require.Equal(t, "a (b) c", child.comm)
	require.Equal(t, os.Getpid(), child.ppid)
	_, ok = readProcStat(-1)
	require.False(t, ok, "no such process")
	require.Zero(t, postmasterOf(os.Getpid()), "a test process is no PostgreSQL backend")
}
