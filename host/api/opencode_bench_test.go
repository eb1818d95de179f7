package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/require"
)

// BenchmarkOpenCodeChunkOverhead is what the OpenCode engine and the host
// add to each streamed chunk over OpenCode's own event stream, measured on
// the same chunks: the fake model writes each chunk with its write time in
// it (5 ms apart, as a fast model would); a client subscribed straight to
// the engine's opencode server's /event notes when each chunk's delta
// arrives there (raw), and the run's SSE client when it arrives through
// the engine, the host's durable log and the API (host). added is host −
// raw per chunk. Runs are turns of one chat, so the server is warm.
func BenchmarkOpenCodeChunkOverhead(b *testing.B) {
	srv := fakellm.New()
	defer srv.Close()
	const chunks = 50
	e, model := startOpenCodeEnv(b, srv, "oc-bench", "")
	turns := make([]fakellm.Turn, 200)
	for i := range turns {
		turns[i] = fakellm.Turn{Stamps: chunks, StampEvery: 5 * time.Millisecond}
	}
	srv.Script("oc-bench", turns...)
	app := e.createApp(e.tokenA)

	// A first run starts the server; the raw client then subscribes to it.
	first := e.ocRun(app, model, "", "warm up")
	require.Equal(b, "completed", e.ocWait(app, first).Status)
	chat := e.chatOf(app, first)
	raw := subscribeOpenCode(b)

	var hostAt = map[int64]time.Time{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i >= len(turns)-2 {
			b.Fatalf("more iterations than scripted turns (%d)", len(turns))
		}
		run := e.ocRun(app, model, chat, fmt.Sprintf("turn %d", i))
		resp := e.openStream(e.tokenA, app, run, "")
		frames, _ := readSSE(b, resp, nil)
		resp.Body.Close()
		for _, f := range frames {
			if text, ok := deltaText(b, f); ok {
				for _, ns := range stampsIn(text) {
					hostAt[ns] = f.at
				}
			}
		}
	}
	b.StopTimer()
	rawAt := raw.stop()
	var rawLat, hostLat, added []time.Duration
	for ns, h := range hostAt {
		r, ok := rawAt[ns]
		if !ok {
			continue
		}
		sent := time.Unix(0, ns)
		rawLat, hostLat, added = append(rawLat, r.Sub(sent)), append(hostLat, h.Sub(sent)), append(added, h.Sub(r))
	}
	require.GreaterOrEqual(b, len(added), b.N*chunks*9/10, "most chunks were seen on both streams")
	b.ReportMetric(float64(percentile(rawLat, 0.5).Microseconds()), "raw-p50-µs/chunk")
	b.ReportMetric(float64(percentile(hostLat, 0.5).Microseconds()), "host-p50-µs/chunk")
	b.ReportMetric(float64(percentile(added, 0.5).Microseconds()), "added-p50-µs/chunk")
	b.ReportMetric(float64(percentile(added, 0.99).Microseconds()), "added-p99-µs/chunk")
}

// stampsIn parses the "<unix nanos>;" stamps in a text; a stamp split
// across deltas is not counted.
func stampsIn(text string) []int64 {
	var out []int64
	for _, s := range strings.Split(text, ";") {
		if ns, err := strconv.ParseInt(s, 10, 64); err == nil && ns > 1e18 {
			out = append(out, ns)
		}
	}
	return out
}

// rawOpenCode is a client of the one opencode server the test's host runs,
// noting when each stamped delta arrives.
type rawOpenCode struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	at     map[int64]time.Time
}

// subscribeOpenCode finds the opencode server (its port on the command
// line, its password in its environment: the test runs as its user or
// root) and follows its /event stream, from inside its network namespace
// when it has one of its own.
func subscribeOpenCode(t testing.TB) *rawOpenCode {
	t.Helper()
	base, password := opencodeServerAuth(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/event", nil)
	require.NoError(t, err)
	req.SetBasicAuth("opencode", password)
	client := http.DefaultClient
	if dial := netnsDial(opencodeServers(t)[0]); dial != nil {
		// On bwrap: straight into the server's own network namespace, so
		// the raw figure leaves out the plugin's relay and added has it.
		client = &http.Client{Transport: &http.Transport{DialContext: dial}}
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := &rawOpenCode{cancel: cancel, done: make(chan struct{}), at: map[int64]time.Time{}}
	go r.read(resp)
	return r
}

// opencodeServerAuth is the base URL and password of the one opencode
// server running: its port from its command line, its password from its
// environment (the test runs as its user, or as root).
func opencodeServerAuth(t testing.TB) (base, password string) {
	t.Helper()
	pids := opencodeServers(t)
	require.Len(t, pids, 1, "one opencode server runs")
	cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "cmdline"))
	require.NoError(t, err)
	args := strings.Split(string(cmd), "\x00")
	port := ""
	for i, a := range args {
		if a == "--port" && i+1 < len(args) {
			port = args[i+1]
		}
	}
	require.NotEmpty(t, port, "opencode's command line names its port: %q", args)
	environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "environ"))
	require.NoError(t, err)
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if v, ok := strings.CutPrefix(string(kv), "OPENCODE_SERVER_PASSWORD="); ok {
			password = v
		}
	}
	return "http://127.0.0.1:" + port, password
}

// read notes the stamped deltas of the stream until it ends.
func (r *rawOpenCode) read(resp *http.Response) {
	defer close(r.done)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		now := time.Now()
		var ev struct {
			Type       string `json:"type"`
			Properties struct {
				Field string `json:"field"`
				Delta string `json:"delta"`
			} `json:"properties"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil || ev.Type != "message.part.delta" || ev.Properties.Field != "text" {
			continue
		}
		r.mu.Lock()
		for _, ns := range stampsIn(ev.Properties.Delta) {
			r.at[ns] = now
		}
		r.mu.Unlock()
	}
}

// stop ends the subscription and returns what it saw.
func (r *rawOpenCode) stop() map[int64]time.Time {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at
}

// BenchmarkOpenCodeWarmFirstToken is a warm chat's next run, from the
// create-run request to the first assistant.delta on its SSE stream: the
// chat's sandbox and its opencode server and session are kept, and the
// fake model answers at once, so what is left is the host's and the
// engine's work and OpenCode's own before its first model request.
func BenchmarkOpenCodeWarmFirstToken(b *testing.B) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(b, srv, "oc-first", "")
	turns := make([]fakellm.Turn, 200)
	for i := range turns {
		turns[i] = fakellm.Turn{Text: []string{"ok"}}
	}
	srv.Script("oc-first", turns...)
	app := e.createApp(e.tokenA)
	first := e.ocRun(app, model, "", "warm up")
	require.Equal(b, "completed", e.ocWait(app, first).Status)
	chat := e.chatOf(app, first)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i >= len(turns)-2 {
			b.Fatalf("more iterations than scripted turns (%d)", len(turns))
		}
		start := time.Now()
		run := e.ocRun(app, model, chat, fmt.Sprintf("turn %d", i))
		resp := e.openStream(e.tokenA, app, run, "")
		var firstAt time.Time
		frames, _ := readSSE(b, resp, func(f frame) bool {
			if f.Event == "assistant.delta" && firstAt.IsZero() {
				firstAt = f.at
			}
			return false
		})
		resp.Body.Close()
		require.False(b, firstAt.IsZero(), "run %s streamed no text: %d frames", run, len(frames))
		lat = append(lat, firstAt.Sub(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat, "/run")
}

// BenchmarkOpenCodeColdFirstToken is a chat's first run, from the
// create-run request to the first assistant.delta on its SSE stream: a new
// sandbox, a new opencode server (its start is the run's engine_start) and
// OpenCode's first prompt in that folder, with a model that answers at
// once. The server's start alone is reported beside it.
func BenchmarkOpenCodeColdFirstToken(b *testing.B) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnv(b, srv, "oc-cold", "")
	srv.Script("oc-cold", fakellm.Turn{Text: []string{"ok"}})
	app := e.createApp(e.tokenA)
	lat := make([]time.Duration, 0, b.N)
	var starts []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		run := e.ocRun(app, model, "", fmt.Sprintf("cold %d", i))
		resp := e.openStream(e.tokenA, app, run, "")
		var firstAt time.Time
		readSSE(b, resp, func(f frame) bool {
			if f.Event == "assistant.delta" && firstAt.IsZero() {
				firstAt = f.at
			}
			return false
		})
		resp.Body.Close()
		require.False(b, firstAt.IsZero(), "run %s streamed no text", run)
		lat = append(lat, firstAt.Sub(start))
		var timed struct {
			Context struct {
				Timings map[string]int64 `json:"timing_metrics_ms"`
			} `json:"context"`
		}
		require.Equal(b, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run, nil, &timed))
		starts = append(starts, time.Duration(timed.Context.Timings["engine_start"])*time.Millisecond)
	}
	b.StopTimer()
	reportPercentiles(b, lat, "/run")
	b.ReportMetric(float64(percentile(starts, 0.5).Milliseconds()), "engine-start-p50-ms")
}
