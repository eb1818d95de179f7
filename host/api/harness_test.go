package api_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

var binDir string

func TestMain(m *testing.M) {
	// Every client the tests use validates its traffic with the hosts
	// they start against api/openapi.yaml (openapi_test.go).
	base := http.DefaultTransport.(*http.Transport).Clone()
	// Concurrent clients (the 20-session benchmark, the soak-like tests)
	// keep their connections, as that many browsers would, instead of
	// all but two dialling anew for every request (the default keeps 2
	// idle connections per host).
	base.MaxIdleConnsPerHost = 64
	http.DefaultTransport = specTransport{base: base}
	testenv.Main(m, &binDir, testenv.DefaultPluginPackages()...)
}

// env is a running host behind a real HTTP server, with tokens for two
// tenants.
type env struct {
	t      testing.TB
	h      *hostapp.Host
	srv    *httptest.Server
	tokenA string // admin of tenant "default"
	tokenB string // admin of tenant "other"
	readA  string // apps.read only, tenant "default"
}

// eachDialect runs fn against a host on SQLite and on PostgreSQL.
func eachDialect(t *testing.T, fn func(e *env)) {
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) { fn(startEnv(t, d)) })
	}
}

// startEnv starts a host with the default plugins on a fresh database of
// the dialect.
func startEnv(t testing.TB, dialect string) *env {
	return startEnvWith(t, dialect, "mock", "local", "patch")
}

// startEnvWith starts a host with the named default plugins only.
func startEnvWith(t testing.TB, dialect string, plugins ...string) *env {
	return startEnvIn(t, dialect, testenv.PluginConfigDir(t, plugins...))
}

// startEnvIn starts a host with the plugin configs of configDir; mods
// change its config before it starts.
func startEnvIn(t testing.TB, dialect, configDir string, mods ...func(*config.Host)) *env {
	dataDir := t.TempDir()
	cfg := config.Host{DataDir: dataDir, PluginDir: binDir, PluginConfigDir: configDir, DatabaseURL: filepath.Join(dataDir, "a.db")}
	// Key-to-endpoint bindings come from the environment, as config.Load
	// reads them (tests bind their fake providers' keys this way).
	providers, err := config.ParseKeyEndpoints(os.Getenv(config.KeyEndpointsEnv))
	require.NoError(t, err)
	cfg.Providers = providers
	for _, m := range mods {
		m(&cfg)
	}
	if dialect == "postgres" {
		cfg.DatabaseURL = testenv.PostgresURL(t)
	}
	t.Setenv("AGENTHOST_BOOTSTRAP_TOKEN", "token-a")
	ctx := context.Background()
	h, err := hostapp.Start(ctx, cfg, testenv.Logger(t))
	require.NoError(t, err)
	srv := httptest.NewServer(h.Handler)
	checkAgainstSpec(t, srv)
	t.Cleanup(func() {
		srv.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Close(cctx)
	})
	require.NoError(t, h.Store.EnsureTenant(ctx, "other", "Other"))
	ub, err := h.Store.EnsureUser(ctx, "other", "usr_b", "b@other")
	require.NoError(t, err)
	_, err = h.Store.CreateToken(ctx, "other", ub, "b", "token-b", []string{"admin"})
	require.NoError(t, err)
	_, err = h.Store.CreateToken(ctx, hostapp.DefaultTenant, "usr_admin", "ro", "token-read", []string{"apps.read"})
	require.NoError(t, err)
	return &env{t: t, h: h, srv: srv, tokenA: "token-a", tokenB: "token-b", readA: "token-read"}
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (e *env) do(token, method, path string, body any, out any) int {
	e.t.Helper()
	return e.send(false, token, method, path, body, out)
}

// doInvalid is do for a request that is invalid on purpose: only the
// answer is held to the spec (markInvalid).
func (e *env) doInvalid(token, method, path string, body any, out any) int {
	e.t.Helper()
	return e.send(true, token, method, path, body, out)
}

func (e *env) send(invalid bool, token, method, path string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = strings.NewReader(string(js))
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if invalid {
		markInvalid(req)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	if out != nil && len(raw) > 0 {
		require.NoError(e.t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode
}

type apiError struct {
	Detail struct {
		Code, Message, Field string
	} `json:"detail"`
}

func (e *env) createApp(token string) string {
	e.t.Helper()
	var app struct{ ID string }
	require.Equal(e.t, http.StatusCreated, e.do(token, "POST", "/admin/apps", map[string]any{"name": "demo", "files": map[string]string{"index.html": "<h1>hi</h1>\n"}}, &app))
	return app.ID
}

type runOut struct {
	ID, Status, ErrorCode, OutputText, BaseRevisionID string
}

func (r *runOut) UnmarshalJSON(b []byte) error {
	var raw struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		ErrorCode      string `json:"error_code"`
		OutputText     string `json:"output_text"`
		BaseRevisionID string `json:"base_revision_id"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = runOut{raw.ID, raw.Status, raw.ErrorCode, raw.OutputText, raw.BaseRevisionID}
	return nil
}

func (e *env) createRun(token, appID, prompt string) runOut {
	e.t.Helper()
	var r runOut
	require.Equal(e.t, http.StatusCreated, e.do(token, "POST", "/admin/apps/"+appID+"/coding-agent/runs", map[string]any{"prompt": prompt}, &r))
	return r
}

// waitRun polls GET until the run is finished.
func (e *env) waitRun(appID, runID string) runOut {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var r runOut
		require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+appID+"/coding-agent/runs/"+runID, nil, &r))
		switch r.Status {
		case "completed", "failed", "cancelled":
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("run %s did not finish", runID)
	return runOut{}
}

// frame is one SSE event.
type frame struct {
	ID, Event, Data string
	// at is when the frame was fully read.
	at time.Time
}

// readSSE reads frames until the stream ends or stop says so; it returns
// the frames and whether the stream ended by itself.
func readSSE(t testing.TB, resp *http.Response, stop func(frame) bool) ([]frame, bool) {
	t.Helper()
	var out []frame
	var cur frame
	sc := bufio.NewScanner(resp.Body)
	// Starts small and grows to 1 MiB only for a frame that needs it: a
	// 1 MiB buffer per stream made the benchmarks measure the test
	// client's allocations and garbage collection as much as the host.
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				cur.at = time.Now()
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out, false
				}
			}
			cur = frame{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out, true
}

func (e *env) openStream(token, appID, runID, lastEventID string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/admin/apps/"+appID+"/coding-agent/runs/"+runID+"/stream", nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	require.Equal(e.t, "text/event-stream", resp.Header.Get("Content-Type"))
	return resp
}

// newZip builds a zip archive of files.
func newZip(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, body := range files {
		f, err := w.Create(name)
		require.NoError(t, err)
		_, err = f.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// payloads returns the payloads of a run's events of one type. (Here, not
// in the Linux-only bwrap_swap_test.go, because tests on every OS use it.)
func (e *env) payloads(app, runID, event string) []string {
	e.t.Helper()
	var page struct {
		Items []struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+runID+"/events?limit=500", nil, &page))
	var out []string
	for _, it := range page.Items {
		if it.Event == event {
			out = append(out, string(it.Payload))
		}
	}
	return out
}

// deltaText is an assistant.delta frame's text; ok is false for any other
// frame.
func deltaText(t testing.TB, f frame) (text string, ok bool) {
	t.Helper()
	if f.Event != "assistant.delta" {
		return "", false
	}
	var env struct {
		Payload struct {
			Text string `json:"text"`
		} `json:"payload"`
	}
	require.NoError(t, json.Unmarshal([]byte(f.Data), &env))
	return env.Payload.Text, true
}
