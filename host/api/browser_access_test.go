package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const builderOrigin = "http://builder.test:5173"

// request sends a bare request with the given headers and returns the
// response, body unread.
func (e *env) request(method, path string, headers map[string]string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	require.NoError(e.t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestCORS: a page on an allowed origin may call the API with its bearer
// token (the preflight for Authorization passes, answers carry the CORS
// headers and expose X-Request-ID); any other origin is refused with the
// error envelope; with no origins configured nothing is allowed.
func TestCORS(t *testing.T) {
	e := startEnvIn(t, "sqlite", testenv.PluginConfigDir(t, "mock", "local", "patch"), func(h *config.Host) {
		h.CORSOrigins = []string{builderOrigin}
	})
	pre := e.request("OPTIONS", "/admin/apps", map[string]string{
		"Origin": builderOrigin, "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
	})
	assert.Equal(t, http.StatusNoContent, pre.StatusCode)
	assert.Equal(t, builderOrigin, pre.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, pre.Header.Get("Access-Control-Allow-Methods"), "POST")
	allowed := strings.ToLower(pre.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "content-type", "idempotency-key", "last-event-id"} {
		assert.Contains(t, allowed, h)
	}
	assert.Empty(t, pre.Header.Get("Access-Control-Allow-Credentials"), "bearer tokens, not cookies")

	get := e.request("GET", "/admin/apps", map[string]string{"Origin": builderOrigin, "Authorization": "Bearer " + e.tokenA})
	assert.Equal(t, http.StatusOK, get.StatusCode)
	assert.Equal(t, builderOrigin, get.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, get.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id")
	assert.Contains(t, get.Header.Values("Vary"), "Origin")

	// An error answer carries the headers too, so the page can read it.
	unauth := e.request("GET", "/admin/apps", map[string]string{"Origin": builderOrigin})
	assert.Equal(t, http.StatusUnauthorized, unauth.StatusCode)
	assert.Equal(t, builderOrigin, unauth.Header.Get("Access-Control-Allow-Origin"))

	var refused apiError
	code := e.doWith(map[string]string{"Origin": "http://evil.test"}, e.tokenA, "GET", "/admin/apps", &refused)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "FORBIDDEN", refused.Detail.Code)
	assert.Contains(t, refused.Detail.Message, "http://evil.test")

	// Same-origin requests (a page the host serves itself) are not CORS.
	self := e.request("GET", "/admin/apps", map[string]string{"Origin": e.srv.URL, "Authorization": "Bearer " + e.tokenA})
	assert.Equal(t, http.StatusOK, self.StatusCode)

	closed := startEnv(t, "sqlite")
	pre = closed.request("OPTIONS", "/admin/apps", map[string]string{"Origin": builderOrigin, "Access-Control-Request-Method": "GET"})
	assert.Empty(t, pre.Header.Get("Access-Control-Allow-Origin"), "no origin is allowed unless the operator names it")
}

// TestStreamTickets: a ticket minted with a token opens that run's stream
// without an Authorization header (as a browser's EventSource must), lets
// the stream's own reconnect back in, and opens nothing else.
func TestStreamTickets(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, "say hello\nsay world")
		e.waitRun(app, run.ID)
		base := "/admin/apps/" + app + "/coding-agent/runs/" + run.ID

		var ticket struct {
			Ticket    string `json:"ticket"`
			ExpiresAt string `json:"expires_at"`
			StreamURL string `json:"stream_url"`
		}
		require.Equal(t, http.StatusCreated, e.do(e.readA, "POST", base+"/stream-ticket", nil, &ticket), "read scope is enough")
		require.True(t, strings.HasPrefix(ticket.Ticket, "st_"), ticket.Ticket)
		assert.NotEmpty(t, ticket.ExpiresAt)
		require.Equal(t, base+"/stream?ticket="+ticket.Ticket, ticket.StreamURL)

		resp := e.request("GET", ticket.StreamURL, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		frames, ended := readSSE(t, resp, nil)
		require.True(t, ended)
		require.NotEmpty(t, frames)
		last := frames[len(frames)-1]
		assert.Equal(t, "run.completed", last.Event)

		// EventSource reconnects after the server closes a finished stream:
		// the ticket still works, and 204 tells it to stop.
		again := e.request("GET", ticket.StreamURL, map[string]string{"Last-Event-ID": last.ID})
		assert.Equal(t, http.StatusNoContent, again.StatusCode)

		// Nothing else opens with it.
		var failure apiError
		other := e.createRun(e.tokenA, app, "say other")
		code := e.doWith(nil, "", "GET", "/admin/apps/"+app+"/coding-agent/runs/"+other.ID+"/stream?ticket="+ticket.Ticket, &failure)
		assert.Equal(t, http.StatusUnauthorized, code, "another run's stream")
		assert.Equal(t, "UNAUTHENTICATED", failure.Detail.Code)
		assert.Equal(t, "ticket", failure.Detail.Field)
		code = e.doWith(nil, "", "GET", "/admin/apps?ticket="+ticket.Ticket, &failure)
		assert.Equal(t, http.StatusUnauthorized, code, "any other route")
		code = e.doWith(nil, "", "GET", base+"/stream?ticket=st_forged", &failure)
		assert.Equal(t, http.StatusUnauthorized, code, "a forged ticket")

		// Another tenant cannot mint one for this run.
		code = e.doWith(nil, e.tokenB, "POST", base+"/stream-ticket", &failure)
		assert.Equal(t, http.StatusNotFound, code)
	})
}

// doWith is do with extra request headers and no body.
func (e *env) doWith(headers map[string]string, token, method, path string, out any) int {
	e.t.Helper()
	h := map[string]string{}
	for k, v := range headers {
		h[k] = v
	}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	resp := e.request(method, path, h)
	if out != nil {
		require.NoError(e.t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}
