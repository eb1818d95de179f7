package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builderPage is a builder frontend in miniature, served from an origin of
// its own: it creates a run with fetch and its bearer token, mints a stream
// ticket, and follows the run with the browser's own EventSource, recording
// every event it is given. Its parameters come in the URL's fragment,
// which the browser never sends to a server.
const builderPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>builder</title></head>
<body><pre id="log"></pre><script>
const p = new URLSearchParams(location.hash.slice(1));
const api = p.get("api"), app = p.get("app");
const headers = { Authorization: "Bearer " + p.get("token"), "Content-Type": "application/json" };
window.events = []; window.opens = 0; window.failure = "";
const types = ["run.accepted", "run.status", "assistant.delta", "permission.requested", "run.paused",
  "permission.resolved", "run.resumed", "revision.created", "checkpoint.created", "run.completed", "run.failed"];
(async () => {
  try {
    const res = await fetch(api + "/admin/apps/" + app + "/coding-agent/runs",
      { method: "POST", headers, body: JSON.stringify({ prompt: p.get("prompt") }) });
    if (!res.ok) throw new Error("create run: " + res.status + " " + await res.text());
    const run = await res.json();
    window.runID = run.id;
    const t = await (await fetch(api + "/admin/apps/" + app + "/coding-agent/runs/" + run.id + "/stream-ticket",
      { method: "POST", headers })).json();
    const es = new EventSource(api + t.stream_url);
    es.onopen = () => { window.opens++; };
    for (const type of types) {
      es.addEventListener(type, (e) => {
        window.events.push({ id: e.lastEventId, type });
        document.getElementById("log").textContent += e.lastEventId + " " + type + "\n";
        if (type === "run.completed" || type === "run.failed") { es.close(); window.done = true; }
      });
    }
  } catch (err) { window.failure = String(err); }
})();
</script></body></html>`

// TestBrowserFollowsARunAcrossACut: in headless Chromium, a page on
// another origin creates a run and follows it with EventSource through a
// connection the test cuts while the run waits for a permission; the
// browser's automatic reconnect (Last-Event-ID) must yield every event of
// the run's log exactly once, in order.
func TestBrowserFollowsARunAcrossACut(t *testing.T) {
	ctx := testenv.Browser(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, builderPage)
	}))
	defer page.Close()
	e := startEnvIn(t, "sqlite", testenv.PluginConfigDir(t, "mock", "local", "patch"), func(h *config.Host) {
		h.CORSOrigins = []string{page.URL}
	})
	hostURL, err := url.Parse(e.srv.URL)
	require.NoError(t, err)
	proxy := testenv.NewCutProxy(t, hostURL.Host)
	// The page reaches the host through the proxy, on an origin (port) of
	// its own: every call is cross-origin.
	api := "http://" + proxy.Addr()
	app := e.createApp(e.tokenA)
	prompt := "say before the cut\nask deploy Deploy it?\nsay after the cut\nsay and more"
	frag := url.Values{"api": {api}, "app": {app}, "token": {e.tokenA}, "prompt": {prompt}}.Encode()

	tctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	_, err = chromedp.Run(tctx, chromedp.Navigate(page.URL+"/#"+frag))
	require.NoError(t, err)

	var runID string
	waitFor(t, tctx, `window.failure || (window.events.some(e => e.type === "permission.requested") && window.runID)`, &runID)
	require.True(t, strings.HasPrefix(runID, "run_"), "the page failed: %s", runID)
	require.Positive(t, proxy.Cut(), "the stream's connection was open through the proxy")

	// While the page is cut off, the run goes on.
	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs/"+runID+"/resume",
		map[string]any{"decision": "allow"}, nil))
	var done bool
	waitFor(t, tctx, `window.done === true`, &done)

	seen, err := chromedp.Run(tctx, chromedp.Evaluate[[]struct{ ID, Type string }](`window.events`))
	require.NoError(t, err)
	opens, err := chromedp.Run(tctx, chromedp.Evaluate[int](`window.opens`))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, opens, 2, "EventSource reconnected after the cut")

	var log struct {
		Items []struct {
			Seq   int64  `json:"seq"`
			Event string `json:"event"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+runID+"/events?limit=500", nil, &log))
	var want []string
	for _, it := range log.Items {
		want = append(want, fmt.Sprintf("%d %s", it.Seq, it.Event))
	}
	var got []string
	for _, s := range seen {
		got = append(got, s.ID+" "+s.Type)
	}
	assert.Equal(t, want, got, "every event of the log, once, in order")
	assert.Contains(t, got[len(got)-1], "run.completed")
}

// waitFor polls a JavaScript expression in the page until it is truthy,
// and decodes its value into out.
func waitFor(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	for {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		require.NoError(t, err, "waiting for %s", expr)
		if s := string(raw); s != "false" && s != "null" && s != `""` && s != "0" && s != "undefined" {
			require.NoError(t, json.Unmarshal(raw, out))
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", expr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
