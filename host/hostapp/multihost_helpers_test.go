package hostapp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

// Helpers of the multi-host tests and benchmarks: clusters of real hosts,
// SSE clients that follow a run across hosts, log checks.

// multiLease is the lease the multi-host tests give their hosts: short, so
// that a takeover costs the tests little time.
const multiLease = 1000 * time.Millisecond

// startCluster starts n real `agenthost serve` processes, one after the
// other, on one fresh PostgreSQL schema, with the mock engine and the local
// sandbox, and creates an app through the first.
func startCluster(t *testing.T, n int) (hosts []*hostProc, appID string) {
	return startClusterB(t, n)
}

// startClusterB is startCluster for tests and benchmarks.
func startClusterB(t testing.TB, n int) (hosts []*hostProc, appID string) {
	return startClusterLease(t, n, multiLease)
}

// startClusterLease is startClusterB with the hosts' lease length.
func startClusterLease(t testing.TB, n int, lease time.Duration) (hosts []*hostProc, appID string) {
	t.Helper()
	return startClusterOn(t, testenv.PostgresURL(t), n, lease)
}

// startClusterOn is startClusterLease on a given database.
func startClusterOn(t testing.TB, dbURL string, n int, lease time.Duration) (hosts []*hostProc, appID string) {
	t.Helper()
	configDir := testenv.PluginConfigDir(t, "mock", "local")
	for i := range n {
		env := []string{"AGENTHOST_DATA_DIR=" + t.TempDir(), "DATABASE_URL=" + dbURL, "AGENTHOST_PLUGIN_DIR=" + binDir,
			"AGENTHOST_PLUGIN_CONFIG_DIR=" + configDir, "AGENTHOST_BOOTSTRAP_TOKEN=kill-token",
			"AGENTHOST_HOST_ID=h" + strconv.Itoa(i), "AGENTHOST_LEASE_TTL_MS=" + strconv.Itoa(int(lease.Milliseconds())),
			// Other test packages share the server's 100 connections.
			"AGENTHOST_DATABASE_MAX_CONNS=8"}
		hosts = append(hosts, startHostProc(t, env))
	}
	var app struct{ ID string }
	require.Equal(t, http.StatusCreated, hosts[0].do("POST", "/admin/apps", map[string]any{"name": "multi", "files": map[string]string{"index.html": "<h1>hi</h1>\n"}}, &app))
	return hosts, app.ID
}

// createRun starts a mock run with the script on h.
func createRun(t *testing.T, h *hostProc, appID, script string) string {
	return createRunB(t, h, appID, script)
}

// createRunB is createRun for tests and benchmarks.
func createRunB(t testing.TB, h *hostProc, appID, script string) string {
	t.Helper()
	var run struct{ ID string }
	require.Equal(t, http.StatusCreated, h.do("POST", "/admin/apps/"+appID+"/coding-agent/runs", map[string]any{"engine": "mock", "prompt": script}, &run))
	return run.ID
}

// sseEvent is one event as a stream client saw it.
type sseEvent struct {
	Seq     int64
	Type    string
	Payload json.RawMessage
}

// streamFrom reads a run's stream from h after seq `after` until the
// terminal event, the stream ends or ctx ends; each event goes to seen.
// It returns whether it saw the terminal event.
func streamFrom(ctx context.Context, h *hostProc, appID, runID string, after int64, seen func(sseEvent)) (bool, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+"/admin/apps/"+appID+"/coding-agent/runs/"+runID+"/stream", nil)
	req.Header.Set("Authorization", "Bearer kill-token")
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return true, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("stream answered %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.Seq, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var env struct {
				Payload json.RawMessage `json:"payload"`
			}
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &env)
			ev.Payload = env.Payload
		case line == "" && ev.Type != "":
			seen(ev)
			if ev.Type == "run.completed" || ev.Type == "run.failed" || ev.Type == "run.cancelled" {
				return true, nil
			}
			ev = sseEvent{}
		}
	}
	return false, sc.Err()
}

// follower streams one run to its end, moving to the next host of the list
// whenever its stream breaks, resuming with Last-Event-ID.
type follower struct {
	mu     sync.Mutex
	events []sseEvent
	// markSeq, when set, is the last event seen before a fault; markedAt
	// is when the first event after it arrived.
	markSeq  int64
	markedAt time.Time
}

func (f *follower) last() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		return 0
	}
	return f.events[len(f.events)-1].Seq
}

func (f *follower) follow(ctx context.Context, hosts []*hostProc, appID, runID string) error {
	for i := 0; ctx.Err() == nil; i++ {
		h := hosts[i%len(hosts)]
		done, err := streamFrom(ctx, h, appID, runID, f.last(), func(e sseEvent) {
			f.mu.Lock()
			f.events = append(f.events, e)
			if f.markSeq > 0 && e.Seq > f.markSeq && f.markedAt.IsZero() {
				f.markedAt = time.Now()
			}
			f.mu.Unlock()
		})
		if done {
			return nil
		}
		_ = err // a host went away: go on with the next one
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return ctx.Err()
}

// checkLog asserts events are seqs 1..n with no gap or repeat and exactly
// one terminal event, last; it returns the terminal event.
func checkLog(t *testing.T, runID string, events []sseEvent) sseEvent {
	t.Helper()
	require.NotEmpty(t, events, "run %s", runID)
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "run %s: event %d (%s) out of place", runID, i, e.Type)
		terminal := e.Type == "run.completed" || e.Type == "run.failed" || e.Type == "run.cancelled"
		require.Equal(t, i == len(events)-1, terminal, "run %s: terminal event at %d of %d", runID, i, len(events))
	}
	return events[len(events)-1]
}

// streamLoad creates runs round-robin on hosts, each saying `deltas`
// deltas, streams each live from the next host (the same one when there is
// one host) and checks every log is gap-free and complete. With replay,
// each is read again from the host after that, and must be the same. It
// returns what went wrong.
func streamLoad(ctx context.Context, t testing.TB, hosts []*hostProc, appID string, runs, deltas int, replay bool) []error {
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	n := len(hosts)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runID := createRunB(t, hosts[i%n], appID, fmt.Sprintf("say start\ndeltas %d\nsay end", deltas))
			var live follower
			if err := live.follow(ctx, []*hostProc{hosts[(i+1)%n]}, appID, runID); err != nil {
				errs <- fmt.Errorf("run %s: %w", runID, err)
				return
			}
			if err := gapFree(live.events); err != nil {
				errs <- fmt.Errorf("run %s: %w", runID, err)
				return
			}
			if term := live.events[len(live.events)-1]; term.Type != "run.completed" {
				errs <- fmt.Errorf("run %s ended %s: %s", runID, term.Type, term.Payload)
				return
			}
			if want := deltas + 5; len(live.events) < want {
				errs <- fmt.Errorf("run %s: %d events, want at least %d", runID, len(live.events), want)
				return
			}
			if !replay {
				return
			}
			var again follower
			if err := again.follow(ctx, []*hostProc{hosts[(i+2)%n]}, appID, runID); err != nil {
				errs <- err
				return
			}
			if !slices.EqualFunc(live.events, again.events, func(a, b sseEvent) bool {
				return a.Seq == b.Seq && a.Type == b.Type && string(a.Payload) == string(b.Payload)
			}) {
				errs <- fmt.Errorf("run %s: the replay differs from the live stream", runID)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// gapFree is checkLog as an error: seqs 1..n, one terminal event, last.
func gapFree(events []sseEvent) error {
	if len(events) == 0 {
		return fmt.Errorf("no events")
	}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			return fmt.Errorf("event %d (%s) has seq %d", i, e.Type, e.Seq)
		}
		terminal := e.Type == "run.completed" || e.Type == "run.failed" || e.Type == "run.cancelled"
		if terminal != (i == len(events)-1) {
			return fmt.Errorf("terminal event at %d of %d", i, len(events))
		}
	}
	return nil
}

// tracked is one run of TestDeadHostsRunsAreTakenOver.
type tracked struct {
	id        string
	resumable bool
	f         *follower
}

func (tr *tracked) sawBefore() bool {
	for _, e := range tr.f.snapshot() {
		if e.Type == "assistant.delta" {
			return true
		}
	}
	return false
}

func hasEvent(events []sseEvent, typ string) bool {
	for _, e := range events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func (f *follower) snapshot() []sseEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sseEvent(nil), f.events...)
}

// post sends a raw JSON body and returns the status and headers.
func (h *hostProc) post(path, body string, out any) (int, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.url+path, strings.NewReader(body))
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer kill-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(h.t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode, resp.Header
}
