package hostapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/pgserver"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The database's bad moments, on a PostgreSQL server each test starts and
// owns (pgserver), so that restarting it disturbs no other test.

// outageRuns is how many runs stream while the database goes away.
const outageRuns = 20

// pacedScript is a mock run that streams for a few seconds: long enough
// that a restart falls in the middle of it.
func pacedScript(rounds int) string {
	var b strings.Builder
	b.WriteString("say start\n")
	for range rounds {
		b.WriteString("deltas 5\nsleep 50ms\n")
	}
	b.WriteString("say end")
	return b.String()
}

// outageLoad starts outageRuns paced runs on h and follows each over SSE,
// returning once every run has streamed a delta.
type outageLoad struct {
	ids       []string
	followers []*follower
	wg        sync.WaitGroup
	errs      chan error
	started   chan struct{}
}

func startOutageLoad(ctx context.Context, t *testing.T, h *hostProc, appID string, rounds int) *outageLoad {
	return startOutageLoadN(ctx, t, h, appID, outageRuns, rounds)
}

// startOutageLoadN is startOutageLoad with n runs.
func startOutageLoadN(ctx context.Context, t *testing.T, h *hostProc, appID string, n, rounds int) *outageLoad {
	l := &outageLoad{errs: make(chan error, n), started: make(chan struct{})}
	var streaming sync.WaitGroup
	for range n {
		id := createRun(t, h, appID, pacedScript(rounds))
		f := &follower{}
		l.ids, l.followers = append(l.ids, id), append(l.followers, f)
		streaming.Add(1)
		var once sync.Once
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer once.Do(streaming.Done)
			// One stream per run, kept through the outage: a stream that
			// broke would show as an error here.
			done, err := streamFrom(ctx, h, appID, id, 0, func(e sseEvent) {
				f.mu.Lock()
				f.events = append(f.events, e)
				f.mu.Unlock()
				if e.Type == "assistant.delta" {
					once.Do(streaming.Done)
				}
			})
			if !done {
				l.errs <- fmt.Errorf("run %s: the stream ended before the run did: %v", id, err)
			}
		}()
	}
	go func() { streaming.Wait(); close(l.started) }()
	select {
	case <-l.started:
	case <-ctx.Done():
		t.Fatal("the runs did not start streaming")
	}
	return l
}

// ended waits for every stream to end, requires that none failed and
// returns each run's events, checked gap-free with one terminal event
// last (checkLog).
func (l *outageLoad) ended(t *testing.T, h *hostProc) [][]sseEvent {
	t.Helper()
	require.Empty(t, l.wait(), "host log:\n%s", h.logs.String())
	out := make([][]sseEvent, len(l.ids))
	for i, id := range l.ids {
		out[i] = l.followers[i].snapshot()
		checkLog(t, id, out[i])
	}
	return out
}

// createApp creates an app with one file on h.
func createApp(t *testing.T, h *hostProc, name string) string {
	t.Helper()
	var app struct{ ID string }
	require.Equal(t, http.StatusCreated, h.do("POST", "/admin/apps", map[string]any{"name": name, "files": map[string]string{"index.html": "<h1>hi</h1>\n"}}, &app))
	return app.ID
}

// wait waits for every stream to end and returns what went wrong.
func (l *outageLoad) wait() []error {
	l.wg.Wait()
	close(l.errs)
	var out []error
	for err := range l.errs {
		out = append(out, err)
	}
	return out
}

// TestPostgresRestartWhileRunsStream: PostgreSQL restarts (fast shutdown,
// as a managed restart does) while 20 runs stream. Every run completes,
// with a gap-free log, and each client saw every event exactly once, on
// the stream it opened before the restart.
func TestPostgresRestartWhileRunsStream(t *testing.T) {
	t.Parallel()
	pg := pgserver.Start(t)
	hosts, appID := startClusterOn(t, pg.URL(), 1, multiLease)
	h := hosts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	load := startOutageLoad(ctx, t, h, appID, 60)
	pg.Restart(t)
	for i, events := range load.ended(t, h) {
		id, term := load.ids[i], events[len(events)-1]
		require.Equal(t, "run.completed", term.Type, "run %s: %s", id, term.Payload)
		require.Equal(t, 60*5+2, countType(events, "assistant.delta"), "run %s: every delta, once", id)
		// The log read back is what the client saw live.
		var again follower
		require.NoError(t, again.follow(ctx, hosts, appID, id))
		require.Equal(t, len(events), len(again.events), "run %s: the log holds what the stream showed", id)
		var run killRun
		require.Equal(t, http.StatusOK, h.do("GET", "/admin/apps/"+appID+"/coding-agent/runs/"+id, nil, &run))
		require.Equal(t, "completed", run.Status, "run %s", id)
	}
	var ready map[string]any
	require.Equal(t, http.StatusOK, h.do("GET", "/readyz", nil, &ready), "%v", ready)
}

// TestPostgresDownPastOutageWindow: PostgreSQL stops for longer than the
// host's outage window while 20 runs stream. Meanwhile the host says so:
// /readyz is 503 naming the cause, new runs are refused with 503
// STORE_UNAVAILABLE and Retry-After, and each run reads as failed with
// STORE_UNAVAILABLE, not yet persisted. Once the database is back every
// run's log ends, gap-free, in run.failed with STORE_UNAVAILABLE, and its
// row says the same.
func TestPostgresDownPastOutageWindow(t *testing.T) {
	t.Parallel()
	pg := pgserver.Start(t)
	const window = 2 * time.Second
	h := startHostProc(t, []string{"AGENTHOST_DATA_DIR=" + t.TempDir(), "DATABASE_URL=" + pg.URL(), "AGENTHOST_PLUGIN_DIR=" + binDir,
		"AGENTHOST_PLUGIN_CONFIG_DIR=" + testenv.PluginConfigDir(t, "mock", "local"), "AGENTHOST_BOOTSTRAP_TOKEN=kill-token",
		"AGENTHOST_LEASE_TTL_MS=1000", "AGENTHOST_DATABASE_MAX_CONNS=8",
		fmt.Sprintf("AGENTHOST_STORE_OUTAGE_WINDOW_MS=%d", window.Milliseconds())})
	appID := createApp(t, h, "outage")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	load := startOutageLoad(ctx, t, h, appID, 400)
	stopping := time.Now()
	pg.Stop(t)

	// While it is down, past the window: every run is failed in memory.
	runPath := "/admin/apps/" + appID + "/coding-agent/runs/"
	for _, id := range load.ids {
		require.Eventually(t, func() bool {
			var run struct {
				Status    string `json:"status"`
				ErrorCode string `json:"error_code"`
				Persisted *bool  `json:"persisted"`
			}
			code := h.do("GET", runPath+id, nil, &run)
			return code == http.StatusOK && run.Status == "failed" && run.ErrorCode == "STORE_UNAVAILABLE" && run.Persisted != nil && !*run.Persisted
		}, time.Minute, 50*time.Millisecond, "run %s reads as failed, not persisted", id)
	}
	assert.GreaterOrEqual(t, time.Since(stopping), window, "no run failed before the window passed")
	var ready struct {
		Database string `json:"database"`
		Writes   struct {
			OK    bool   `json:"ok"`
			Cause string `json:"cause"`
		} `json:"database_writes"`
	}
	require.Equal(t, http.StatusServiceUnavailable, h.do("GET", "/readyz", nil, &ready))
	assert.NotEqual(t, "ok", ready.Database)
	var refused struct {
		Detail struct{ Code, Message string } `json:"detail"`
	}
	code, header := h.post(runPath, `{"engine":"mock","prompt":"say hi"}`, &refused)
	require.Equal(t, http.StatusServiceUnavailable, code, "%+v", refused)
	assert.Equal(t, "STORE_UNAVAILABLE", refused.Detail.Code)
	assert.NotEmpty(t, header.Get("Retry-After"))

	pg.Start(t)
	for i, events := range load.ended(t, h) {
		id, term := load.ids[i], events[len(events)-1]
		require.Equal(t, "run.failed", term.Type, "run %s", id)
		var payload struct {
			ErrorCode string `json:"error_code"`
		}
		require.NoError(t, json.Unmarshal(term.Payload, &payload))
		require.Equal(t, "STORE_UNAVAILABLE", payload.ErrorCode, "run %s: %s", id, term.Payload)
		var run struct {
			Status    string `json:"status"`
			ErrorCode string `json:"error_code"`
			Persisted *bool  `json:"persisted"`
		}
		require.Equal(t, http.StatusOK, h.do("GET", runPath+id, nil, &run))
		assert.Equal(t, "failed", run.Status)
		assert.Equal(t, "STORE_UNAVAILABLE", run.ErrorCode)
		assert.Nil(t, run.Persisted, "persisted now")
	}
	require.Eventually(t, func() bool { return h.do("GET", "/readyz", nil, nil) == http.StatusOK }, 30*time.Second, 50*time.Millisecond)
	// And the host takes runs again.
	id := createRun(t, h, appID, "say again")
	var again follower
	require.NoError(t, again.follow(ctx, []*hostProc{h}, appID, id))
	require.Equal(t, "run.completed", checkLog(t, id, again.events).Type)
}

// TestPostgresDownLongerThanLeaseNoHostTakesOver: with two hosts on one
// PostgreSQL, the database is down for three leases. When it is back,
// every host's lease looks lapsed, but each host, having failed to renew
// its own, gives the others a lease to renew before it sweeps: no run is
// taken over, and every run completes on the host that started it.
func TestPostgresDownLongerThanLeaseNoHostTakesOver(t *testing.T) {
	t.Parallel()
	pg := pgserver.Start(t)
	hosts, appID := startClusterOn(t, pg.URL(), 2, multiLease)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	loads := []*outageLoad{
		startOutageLoadN(ctx, t, hosts[0], appID, outageRuns/2, 100),
		startOutageLoadN(ctx, t, hosts[1], appID, outageRuns/2, 100),
	}
	pg.Stop(t)
	time.Sleep(3 * multiLease) // the outage itself: nothing to poll for
	pg.Start(t)
	for i, l := range loads {
		for j, events := range l.ended(t, hosts[i]) {
			id, term := l.ids[j], events[len(events)-1]
			require.Equal(t, "run.completed", term.Type, "run %s: %s", id, term.Payload)
			assert.False(t, hasEvent(events, "run.resumed"), "run %s was not taken over", id)
		}
	}
	for _, h := range hosts {
		resp, err := http.Get(h.url + "/metrics")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.NotContains(t, string(body), "agenthost_runs_taken_over_total{", "no host took runs over")
		assert.Contains(t, string(body), "\nagenthost_lease_lost_total 0\n", "no host lost its lease")
	}
}

// countType counts events of one type.
func countType(events []sseEvent, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}
