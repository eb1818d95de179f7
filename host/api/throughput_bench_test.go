package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

// streamedTurn creates a run (in chat when chatID is set) and reads its
// stream to the terminal event; it returns the events read and whether the
// run completed.
func (e *env) streamedTurn(tb testing.TB, appID, chatID, prompt string) (int, bool) {
	body := map[string]any{"prompt": prompt}
	if chatID != "" {
		body["chat_session_id"] = chatID
	}
	var created struct {
		ID string `json:"id"`
	}
	if code := e.do(e.tokenA, "POST", "/admin/apps/"+appID+"/coding-agent/runs", body, &created); code != http.StatusCreated {
		tb.Errorf("create run: %d", code)
		return 0, false
	}
	resp := e.openStream(e.tokenA, appID, created.ID, "")
	defer resp.Body.Close()
	frames, _ := readSSE(tb, resp, nil)
	return len(frames), len(frames) > 0 && frames[len(frames)-1].Event == "run.completed"
}

// BenchmarkMockTurnSessions20: 20 chat sessions take mock turns at once
// (each: create, stream to the end, next turn), b.N turns each; events/s is
// every event the clients read over the wall time, p99-µs a turn's,
// cpu-µs/turn the CPU the host, its clients and its plugins spent per turn
// (testenv.TreeCPU; the PostgreSQL server's is not counted); on
// PostgreSQL xacts/turn counts the database's transactions per turn
// (pg_stat_database.xact_commit; reads outside a transaction count too)
// and pg-cpu-µs/turn the server's CPU per turn, when it runs on this
// machine (testenv.PostgresServerCPU).
// postgres-far reaches the database through BenchmarkMockTurnFarDatabase's
// delaying proxy, as hosts sharing a database across a network do.
//
// Before the timer starts, every session takes warmTurns turns at once: the
// figures are the host's steady state, not its first second under load.
// On PostgreSQL the two differ a lot: the pool opens its connections as the
// load arrives (20 at once took up to 460 ms each here), and each connection
// prepares and plans every statement it runs (about 2 ms of server CPU a
// plan). The transaction count used to be read just before the timer, and
// reading it closes the host's idle connections, so every timed round began
// with an empty pool; a 1 s round is about 6 turns a session, and that start
// was most of what was measured (700 events/s, against 4,000 over 1,500
// turns a session). warmup-ms reports how long the warm-up took, so a slower
// start still shows.
func BenchmarkMockTurnSessions20(b *testing.B) {
	const sessions = 20
	for _, dialect := range []string{"sqlite", "postgres", "postgres-far"} {
		b.Run(dialect, func(b *testing.B) {
			configDir := testenv.PluginConfigDir(b, "mock", "local", "patch")
			var e *env
			var db *pgStats
			if dialect != "sqlite" {
				db = ownDatabase(b)
				dbURL := db.url
				if dialect == "postgres-far" {
					// Across a network (see BenchmarkMockTurnFarDatabase).
					u, err := url.Parse(dbURL)
					require.NoError(b, err)
					u.Host = startDelayProxy(b, u.Host, farDelay).addr
					dbURL = u.String()
				}
				e = startEnvIn(b, "sqlite", configDir, func(c *config.Host) { c.DatabaseURL = dbURL })
			} else {
				e = startEnvIn(b, dialect, configDir)
			}
			app := e.createApp(e.tokenA)
			const warmTurns = 10
			chats := make([]string, sessions)
			for i := range chats {
				t := e.mockTurn(app, "", "say ok")
				chats[i] = t.chatID
			}
			var mu sync.Mutex
			var lat []time.Duration
			events := 0
			// turns has every session take n turns at once.
			turns := func(n int) {
				var wg sync.WaitGroup
				for _, chat := range chats {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range n {
							start := time.Now()
							got, ok := e.streamedTurn(b, app, chat, "say ok")
							d := time.Since(start)
							if !ok {
								b.Errorf("a turn did not complete")
								return
							}
							mu.Lock()
							lat, events = append(lat, d), events+got
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
			}
			// Read before the warm-up: reading closes the host's idle
			// connections (so that their backends report), and the timed
			// turns must start with the pool the warm-up opened.
			before := db.commits(e, "")
			warmStart := time.Now()
			turns(warmTurns)
			warmup := time.Since(warmStart)
			warmed := len(lat)
			lat, events = nil, 0
			b.ResetTimer()
			cpu, pgCPU := testenv.TreeCPU(), db.cpu()
			turns(b.N)
			b.StopTimer()
			db.reportCPU(b, pgCPU, len(lat), "turn")
			b.ReportMetric(float64(warmup.Milliseconds()), "warmup-ms")
			if db != nil {
				// Every statement outside a transaction is one: the
				// database's round trips that commit, per turn.
				// The warm-up's turns count too: the transactions are
				// read across both.
				b.ReportMetric(float64(db.commits(e, "")-before)/float64(warmed+len(lat)), "xacts/turn")
			}
			testenv.ReportCPU(b, cpu, len(lat), "cpu-µs/turn")
			reportPercentiles(b, lat, "")
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkStreamThroughput: runs each emitting deltas as fast as the mock
// engine can, with one SSE client per run reading to the end; events/s is
// every event read over the wall time, runs streaming at once.
func BenchmarkStreamThroughput(b *testing.B) {
	const perRun = 2000
	for _, dialect := range []string{"sqlite", "postgres"} {
		for _, runs := range []int{1, 50} {
			b.Run(fmt.Sprintf("%s/runs=%d", dialect, runs), func(b *testing.B) {
				e := startEnv(b, dialect)
				app := e.createApp(e.tokenA)
				events := 0
				var mu sync.Mutex
				b.ResetTimer()
				for range b.N {
					var wg sync.WaitGroup
					for range runs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							n, ok := e.streamedTurn(b, app, "", fmt.Sprintf("deltas %d", perRun))
							if !ok {
								b.Errorf("a run did not complete")
							}
							mu.Lock()
							events += n
							mu.Unlock()
						}()
					}
					wg.Wait()
				}
				b.StopTimer()
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
