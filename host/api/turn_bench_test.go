package api_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"
)

// BenchmarkMockTurn: one chat turn as a client sees it, sequential in one
// chat: POST …/runs, then the stream until the terminal event (mock engine
// saying "ok": 7 events; real plugins). On PostgreSQL it also reports the
// transactions committed per turn, from the server's own statistics for a
// database the benchmark has to itself. cpu-µs/turn is the CPU the host,
// the client and the plugins spent per turn (testenv.TreeCPU);
// pg-cpu-µs/turn the PostgreSQL server's, when it runs on this machine
// (testenv.PostgresServerCPU).
//
// Reading the server's statistics closes the host's idle connections (see
// pgStats.commits), so warmTurns turns reopen them before the timer
// starts: otherwise the first timed turns would also pay for new
// connections and their prepared statements. The transactions are read
// across the warm-up and the timed turns, and divided by both.
func BenchmarkMockTurn(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			configDir := testenv.PluginConfigDir(b, "mock", "local", "patch")
			var e *env
			var stats *pgStats
			if dialect == "postgres" {
				stats = ownDatabase(b)
				e = startEnvIn(b, "sqlite", configDir, func(c *config.Host) { c.DatabaseURL = stats.url })
			} else {
				e = startEnvIn(b, dialect, configDir)
			}
			app := e.createApp(e.tokenA)
			first := e.mockTurn(app, "", "say ok")
			require.Equal(b, "run.completed", first.terminal, first.payload)
			before := stats.commits(e, first.runID)
			last := first.runID
			const warmTurns = 5
			for range warmTurns {
				turn := e.mockTurn(app, first.chatID, "say ok")
				require.Equal(b, "run.completed", turn.terminal, turn.payload)
				last = turn.runID
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			cpu, pgCPU := testenv.TreeCPU(), stats.cpu()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				turn := e.mockTurn(app, first.chatID, "say ok")
				lat = append(lat, time.Since(start))
				last = turn.runID
				if turn.terminal != "run.completed" {
					b.Fatalf("turn %d: %s", i, turn.payload)
				}
			}
			b.StopTimer()
			testenv.ReportCPU(b, cpu, b.N, "cpu-µs/turn")
			stats.reportCPU(b, pgCPU, b.N, "turn")
			reportPercentiles(b, lat, "")
			if stats != nil {
				b.ReportMetric(float64(stats.commits(e, last)-before)/float64(warmTurns+b.N), "xacts/turn")
			}
		})
	}
}

// pgStats reads a benchmark's own PostgreSQL database's statistics.
type pgStats struct {
	url   string
	name  string
	admin *sqlx.DB // connected to TEST_DATABASE_URL's database, not url's
	tb    testing.TB
	// serverCPU reads the server's CPU time (testenv.PostgresServerCPU);
	// nil when the server runs on another machine.
	serverCPU func() time.Duration
}

// cpu is the server's CPU time so far (0 when it cannot be read).
func (p *pgStats) cpu() time.Duration {
	if p == nil || p.serverCPU == nil {
		return 0
	}
	return p.serverCPU()
}

// reportCPU reports, as pg-cpu-µs/<per>, the CPU the PostgreSQL server
// spent since the cpu reading since, per one of ops operations: the
// database's own cost of the work, which TreeCPU's cpu-µs leaves out.
// Nothing is reported when the server runs on another machine.
func (p *pgStats) reportCPU(b *testing.B, since time.Duration, ops int, per string) {
	if p == nil || p.serverCPU == nil || ops == 0 {
		return
	}
	b.ReportMetric(float64((p.serverCPU()-since).Microseconds())/float64(ops), "pg-cpu-µs/"+per)
}

// ownDatabase makes a database for the benchmark alone (a schema, as the
// tests use, would share its statistics with everything else run on the
// server), dropped at the end.
func ownDatabase(tb testing.TB) *pgStats {
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		tb.Skip("TEST_DATABASE_URL not set: PostgreSQL variant skipped")
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	name := "bench_" + hex.EncodeToString(r[:])
	admin, err := sqlx.Open("postgres", base)
	require.NoError(tb, err)
	_, err = admin.Exec("CREATE DATABASE " + name)
	require.NoError(tb, err)
	// Registered before the host starts, so it runs after the host closed.
	tb.Cleanup(func() {
		_, _ = admin.Exec("DROP DATABASE " + name + " WITH (FORCE)")
		admin.Close()
	})
	u, err := url.Parse(base)
	require.NoError(tb, err)
	u.Path = "/" + name
	st := &pgStats{url: u.String(), name: name, admin: admin, tb: tb}
	if read, ok := testenv.PostgresServerCPU(tb, admin); ok {
		st.serverCPU = read
	}
	return st
}

// commits is the database's committed transactions once the run (the
// latest) has finished recording itself. A backend reports its counts to
// the server's statistics only from time to time and when it exits, so the
// host's idle connections are closed and their backends awaited: then every
// transaction so far is counted.
func (p *pgStats) commits(e *env, runID string) int64 {
	if p == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.h.Orch.AwaitFinished(ctx, runID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.h.Store.DropIdleConnections()
		var n int
		// The host's listening connection stays open; it runs no
		// transactions of the turn.
		require.NoError(p.tb, p.admin.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2`, p.name, store.ListenerApplicationName))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			var open []string
			_ = p.admin.Select(&open, `SELECT application_name || ' ' || state || ' ' || query FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2`, p.name, store.ListenerApplicationName)
			p.tb.Fatalf("%d backends of %s still open: %q", n, p.name, open)
		}
		time.Sleep(5 * time.Millisecond) // polling the server's view; no event to wait on
	}
	var commits int64
	require.NoError(p.tb, p.admin.Get(&commits, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, p.name))
	return commits
}
