package api_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OpenCode's bounds: a model that keeps failing, the host's caps on idle
// agent servers. The real opencode binary, as in opencode_test.go.

// TestOpenCodeModelUnreachable: with nothing listening at the model's base
// URL OpenCode retries forever; the engine lets it retry retry_max times,
// then aborts the session and fails the run MODEL_PROVIDER_ERROR, naming
// the model and the URL. A second case bounds the retries by time instead
// (retry_deadline_s), well before the count would.
func TestOpenCodeModelUnreachable(t *testing.T) {
	down := fakellm.New()
	downURL := down.BaseURL()
	down.Close() // nothing listens there now: connections are refused
	for _, tc := range []struct {
		name, config, why string
		minRetries        int
	}{
		{"count", "retry_max = 1", "used up the 1 retry retry_max allows", 2},
		{"deadline", "retry_max = 100\n    retry_deadline_s = 1", "still retrying 1s after the first retry (retry_deadline_s)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.New()
			defer srv.Close()
			e, _ := startOpenCodeEnv(t, srv, "oc-up", "", tc.config)
			var m struct{ ID string }
			require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/models", map[string]any{
				"name": "oc-down", "provider": "openai", "provider_model": "oc-down", "base_url": downURL, "scope": "global",
				"bindings": []map[string]string{{"engine": "opencode", "engine_model_id": "fake/oc-down"}},
			}, &m))
			app := e.createApp(e.tokenA)
			run := e.ocRun(app, m.ID, "", "anything")
			done := e.ocWait(app, run)
			require.Equal(t, "failed", done.Status, "%v", e.eventTypes(app, run))
			assert.Equal(t, "MODEL_PROVIDER_ERROR", done.ErrorCode)
			failed := e.payloads(app, run, "run.failed")
			require.Len(t, failed, 1)
			t.Logf("run.failed: %s", failed[0])
			assert.Contains(t, failed[0], downURL, "the message names where the model was sent")
			assert.Contains(t, failed[0], m.ID, "the message names the model")
			assert.Contains(t, failed[0], tc.why)
			retries := 0
			for _, p := range e.payloads(app, run, "run.status") {
				if strings.Contains(p, "model_retry") {
					retries++
				}
			}
			assert.GreaterOrEqual(t, retries, tc.minRetries, "each retry was shown as it happened")
		})
	}
}

// TestOpenCodeWarmServersAreCapped: with room for one warm agent server,
// a second chat's server going idle stops the first chat's (the least
// recently used), as /metrics shows; the first chat's next run gets a new
// sandbox and server, and OpenCode gets the chat's history re-seeded.
func TestOpenCodeWarmServersAreCapped(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnvHost(t, srv, "oc-cap", "", func(c *config.Host) {
		one := 1
		c.WarmServersMax = &one
	})
	srv.Script("oc-cap", fakellm.Turn{Text: []string{"first answer"}}, fakellm.Turn{Text: []string{"second answer"}})
	app := e.createApp(e.tokenA)
	first := e.ocRun(app, model, "", "remember the word PELICAN")
	require.Equal(t, "completed", e.ocWait(app, first).Status)
	chat1, sandbox1 := e.chatOf(app, first), e.runDetail(app, first).SandboxID
	assert.Contains(t, e.metrics(), "\nagenthost_warm_agent_servers 1\n", "chat 1's server is kept warm")
	require.Eventually(t, func() bool { return metricValue(e.metrics(), "agenthost_warm_agent_servers_memory_bytes") > 50<<20 },
		30*time.Second, 50*time.Millisecond, "the idle server's memory, as the sandbox reports it, is shown")

	other := e.ocRun(app, model, "", "another chat")
	require.Equal(t, "completed", e.ocWait(app, other).Status)
	require.Eventually(t, func() bool {
		m := e.metrics()
		return strings.Contains(m, "\nagenthost_warm_agent_servers 1\n") && strings.Contains(m, "\nagenthost_warm_agent_servers_evicted_total 1\n")
	}, 30*time.Second, 50*time.Millisecond, "the least recently used server is stopped: %s", e.metrics())

	again := e.ocRun(app, model, chat1, "what was the word?")
	done := e.ocWait(app, again)
	require.Equal(t, "completed", done.Status, "%v", e.eventTypes(app, again))
	assert.NotEqual(t, sandbox1, e.runDetail(app, again).SandboxID, "chat 1's sandbox was stopped: a new one")
	reqs := srv.RequestsFor("oc-cap")
	last := string(reqs[len(reqs)-1].Body)
	assert.Contains(t, last, "PELICAN", "the new server's session is seeded with the chat's history")
}

// TestOpenCodeWarmServersMemoryBudget: with a memory budget smaller than
// one OpenCode server, the chat's idle server is stopped once the sandbox
// reports what it holds; the chat's next run starts a new one.
func TestOpenCodeWarmServersMemoryBudget(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	e, model := startOpenCodeEnvHost(t, srv, "oc-mem", "", func(c *config.Host) {
		one := 1 // MiB
		c.WarmServersMemoryMB = &one
	})
	srv.Script("oc-mem", fakellm.Turn{Text: []string{"ok"}})
	app := e.createApp(e.tokenA)
	first := e.ocRun(app, model, "", "hello")
	require.Equal(t, "completed", e.ocWait(app, first).Status)
	require.Eventually(t, func() bool {
		m := e.metrics()
		return strings.Contains(m, "\nagenthost_warm_agent_servers_evicted_total 1\n") && strings.Contains(m, "\nagenthost_warm_agent_servers 0\n")
	}, 30*time.Second, 50*time.Millisecond, "the server over the budget is stopped: %s", e.metrics())
	again := e.ocRun(app, model, e.chatOf(app, first), "again")
	require.Equal(t, "completed", e.ocWait(app, again).Status)
	assert.NotEqual(t, e.runDetail(app, first).SandboxID, e.runDetail(app, again).SandboxID)
}

// metrics is the host's /metrics page.
func (e *env) metrics() string {
	e.t.Helper()
	resp, err := http.Get(e.srv.URL + "/metrics")
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	return string(body)
}

// metricValue is a gauge's or counter's value on a /metrics page, -1 when
// it is not there.
func metricValue(page, name string) float64 {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}
