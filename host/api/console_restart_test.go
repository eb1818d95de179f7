package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startHostAt starts a host on the SQLite database of dataDir, as `make
// run` would (bootstrap token "token-a"); the caller closes it.
func startHostAt(t *testing.T, dataDir, configDir string) *hostapp.Host {
	t.Helper()
	t.Setenv("AGENTHOST_BOOTSTRAP_TOKEN", "token-a")
	cfg := config.Host{DataDir: dataDir, PluginDir: binDir, PluginConfigDir: configDir, DatabaseURL: filepath.Join(dataDir, "a.db")}
	h, err := hostapp.Start(context.Background(), cfg, hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}))
	require.NoError(t, err)
	return h
}

func closeHost(h *hostapp.Host) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.Close(ctx)
}

// TestConsoleResumesARunAfterAHostRestart: the host stops while a run
// sleeps after saving its state, and another host starts on the same
// database behind the same address. The console, open all along, follows
// the run again by itself (a new stream ticket from the last seq), shows
// it paused because the host stopped, and its Resume button continues it
// to the end; the timeline is the run's log, no gap, no duplicate.
func TestConsoleResumesARunAfterAHostRestart(t *testing.T) {
	bctx := testenv.Browser(t)
	dataDir, configDir := t.TempDir(), testenv.PluginConfigDir(t, "mock", "local", "patch")

	// The page talks to whichever host is up, at one address.
	var current atomic.Pointer[hostapp.Host]
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := current.Load()
		if h == nil {
			http.Error(w, "the host is restarting", http.StatusBadGateway)
			return
		}
		h.Handler.ServeHTTP(w, r)
	}))
	first := startHostAt(t, dataDir, configDir)
	current.Store(first)
	t.Cleanup(func() {
		front.CloseClientConnections()
		front.Close()
		if h := current.Load(); h != nil {
			closeHost(h)
		}
	})
	e := &env{t: t, h: first, srv: front, tokenA: "token-a"}
	app := e.createApp(e.tokenA)
	var chat struct{ ID string }
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/chat-sessions", map[string]any{"title": "restart"}, &chat))

	p := newConsolePage(t, bctx, front.URL)
	p.do(chromedp.Navigate(front.URL + "/console/"))
	p.do(chromedp.WaitVisible(chromedp.ID("token")))
	p.eval(`sessionStorage.setItem("agenthost.console.token", "token-a"), location.hash = "#/apps/`+app+`/chat/`+chat.ID+`", true`, nil)
	p.untilText(".chat-head h2", "restart")
	p.until(count(`.composer select.engine option[value="mock"]`), nil)

	// The state saved at line 1 makes a resumed run start again at line 2.
	p.setValue(".composer textarea", "checkpoint\nsay Before the restart.\nsleep 2s\nsay After the restart.")
	p.do(chromedp.Click(chromedp.CSS(".composer .send")))
	p.untilText(".run .ev.say .text", "Before the restart.")
	var run string
	p.eval(`document.querySelector(".run").dataset.run`, &run)
	p.step("before-restart")

	// Stop the host (its runs with saved state pause), cut the page's
	// connections as a dying process would, start another.
	current.Store(nil)
	closeHost(first)
	front.CloseClientConnections()
	second := startHostAt(t, dataDir, configDir)
	current.Store(second)
	e.h = second

	p.untilText(`[data-run="`+run+`"] .ev.paused`, "the host stopped")
	p.until(`document.querySelector(".live").dataset.state === "live"`, nil)
	logged, _ := e.loggedEvents(app, run)
	assert.Equal(t, logged, p.shownEvents(run), "paused after the restart: the log, once")
	p.step("paused-by-restart")

	p.do(chromedp.Click(chromedp.CSS(`[data-run="` + run + `"] button.resume`)))
	p.untilText(`[data-run="`+run+`"] .result-row`, "Completed")
	assert.Contains(t, p.joinedSay(run), "After the restart.")
	logged, said := e.loggedEvents(app, run)
	assert.Equal(t, logged, p.shownEvents(run), "resumed to its end: the log, once")
	assert.Equal(t, said, p.joinedSay(run))
	assert.Zero(t, p.count(`[data-run="`+run+`"] button.resume`), "Resume goes once the run goes on")
	p.step("resumed")
	assert.Empty(t, p.Problems(), "the page logged no script or policy error")
}
