package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowScript streams ~300 deltas over ~300 ms so a client can drop in the
// middle.
func slowScript() string {
	var b strings.Builder
	b.WriteString("say start\n")
	for i := 0; i < 15; i++ {
		b.WriteString("deltas 20\nsleep 20ms\n")
	}
	b.WriteString("say end")
	return b.String()
}

func seqs(fs []frame) []int {
	out := make([]int, len(fs))
	for i, f := range fs {
		out[i], _ = strconv.Atoi(f.ID)
	}
	return out
}

func TestStreamResumesWithoutGapOrDuplicate(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, slowScript())

		// Read until seq 15, then drop the connection mid-run.
		resp := e.openStream(e.tokenA, app, run.ID, "")
		first, ended := readSSE(t, resp, func(f frame) bool { return f.ID == "15" })
		resp.Body.Close()
		require.False(t, ended, "the run ended before the drop; make the script slower")

		resp = e.openStream(e.tokenA, app, run.ID, first[len(first)-1].ID)
		rest, ended := readSSE(t, resp, nil)
		resp.Body.Close()
		require.True(t, ended, "the stream of a finished run closes")

		all := append(first, rest...)
		for i, s := range seqs(all) {
			require.Equal(t, i+1, s, "gap or duplicate at %d", i)
		}
		assert.Equal(t, "run.completed", all[len(all)-1].Event)
		assert.Equal(t, "run.accepted", all[0].Event)
		assert.Contains(t, all[1].Data, `"run_id":"`+run.ID+`"`, "data is the envelope")

		// A finished run's stream replays everything and closes; after_seq
		// works like Last-Event-ID.
		resp = e.openStream(e.tokenA, app, run.ID, "")
		replay, ended := readSSE(t, resp, nil)
		resp.Body.Close()
		assert.True(t, ended)
		assert.Equal(t, seqs(all), seqs(replay))
		var page struct {
			Items []struct {
				Seq int `json:"seq"`
			} `json:"items"`
			NextAfterSeq int  `json:"next_after_seq"`
			Done         bool `json:"done"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", fmt.Sprintf("/admin/apps/%s/coding-agent/runs/%s/events?after_seq=%d&limit=5", app, run.ID, len(all)-3), nil, &page))
		require.Len(t, page.Items, 3)
		assert.Equal(t, len(all), page.NextAfterSeq)
		assert.True(t, page.Done)
	})
}

func TestTwentySubscribersSeeTheSameSequence(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, slowScript())
		results := make([][]frame, 20)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := e.openStream(e.tokenA, app, run.ID, "")
				defer resp.Body.Close()
				frames, _ := readSSE(t, resp, nil)
				for j := range frames {
					frames[j].at = time.Time{} // when it was read differs, by nature
				}
				results[i] = frames
			}()
		}
		wg.Wait()
		require.NotEmpty(t, results[0])
		assert.Equal(t, "run.completed", results[0][len(results[0])-1].Event)
		for i := 1; i < len(results); i++ {
			assert.Equal(t, results[0], results[i], "subscriber %d saw a different stream", i)
		}
	})
}

func TestUnwatchedRunCompletes(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, "say nobody is watching")
		final := e.waitRun(app, run.ID)
		assert.Equal(t, "completed", final.Status)
		assert.Equal(t, "nobody is watching", final.OutputText)
	})
}

func TestPermissionResumeAndCancelOverHTTP(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		base := "/admin/apps/" + app + "/coding-agent/runs/"
		run := e.createRun(e.tokenA, app, "ask deploy Deploy?\nsay after")
		resp := e.openStream(e.tokenA, app, run.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "run.paused" })
		resp.Body.Close()

		var er apiError
		assert.Equal(t, http.StatusBadRequest, e.doInvalid(e.tokenA, "POST", base+run.ID+"/resume", map[string]string{"decision": "maybe"}, &er))
		assert.Equal(t, "decision", er.Detail.Field)
		assert.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/resume", map[string]string{"decision": "allow"}, nil))
		assert.Equal(t, "completed", e.waitRun(app, run.ID).Status)
		assert.Equal(t, http.StatusConflict, e.do(e.tokenA, "POST", base+run.ID+"/resume", map[string]string{"decision": "allow"}, &er))
		assert.Equal(t, "RUN_NOT_PAUSED", er.Detail.Code)

		run = e.createRun(e.tokenA, app, "say working\nsleep 60s")
		resp = e.openStream(e.tokenA, app, run.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "assistant.delta" })
		resp.Body.Close()
		assert.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/cancel", nil, nil))
		assert.Equal(t, "cancelled", e.waitRun(app, run.ID).Status)
		assert.Equal(t, http.StatusConflict, e.do(e.tokenA, "POST", base+run.ID+"/cancel", nil, &er))
		assert.Equal(t, "RUN_FINISHED", er.Detail.Code)
	})
}

func TestErrorContract(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		runs := "/admin/apps/" + app + "/coding-agent/runs"
		big := `{"prompt":"` + strings.Repeat("x", 2<<20) + `"}`
		cases := []struct {
			name, token, method, path string
			body                      any
			status                    int
			code, field               string
		}{
			{"no token", "", "GET", runs, nil, 401, "UNAUTHENTICATED", ""},
			{"bad token", "nope", "GET", runs, nil, 401, "UNAUTHENTICATED", ""},
			{"missing scope", e.readA, "POST", runs, map[string]string{"prompt": "x"}, 403, "FORBIDDEN", ""},
			{"malformed json", e.tokenA, "POST", runs, `{"prompt":`, 400, "INVALID_REQUEST", ""},
			{"unknown field", e.tokenA, "POST", runs, `{"prompt":"x","colour":1}`, 400, "INVALID_REQUEST", "colour"},
			{"wrong type", e.tokenA, "POST", runs, `{"prompt":7}`, 400, "INVALID_REQUEST", "prompt"},
			{"two values", e.tokenA, "POST", runs, `{"prompt":"x"}{}`, 400, "INVALID_REQUEST", ""},
			{"empty body", e.tokenA, "POST", runs, ``, 400, "INVALID_REQUEST", ""},
			{"empty prompt", e.tokenA, "POST", runs, map[string]string{"prompt": "  "}, 400, "INVALID_REQUEST", "prompt"},
			{"oversized", e.tokenA, "POST", runs, big, 413, "REQUEST_TOO_LARGE", ""},
			{"malformed app id", e.tokenA, "GET", "/admin/apps/app%24x/coding-agent/runs", nil, 400, "INVALID_REQUEST", "app_id"},
			{"path traversal", e.tokenA, "GET", "/admin/apps/..%2f..%2fetc/coding-agent/runs", nil, 404, "NOT_FOUND", ""},
			{"malformed run id", e.tokenA, "GET", runs + "/run$1", nil, 400, "INVALID_REQUEST", "run_id"},
			{"missing run", e.tokenA, "GET", runs + "/run_nope", nil, 404, "NOT_FOUND", ""},
			{"missing app", e.tokenA, "GET", "/admin/apps/app_nope/coding-agent/runs", nil, 404, "NOT_FOUND", ""},
			{"unknown route", e.tokenA, "GET", "/admin/nothing", nil, 404, "NOT_FOUND", ""},
			{"bad after_seq", e.tokenA, "GET", runs + "/run_x/events?after_seq=-1", nil, 404, "NOT_FOUND", ""},
			{"bad status filter", e.tokenA, "GET", runs + "?status=exploded", nil, 400, "INVALID_REQUEST", "status"},
			{"bad limit", e.tokenA, "GET", runs + "?limit=0", nil, 400, "INVALID_REQUEST", "limit"},
			{"stale base revision", e.tokenA, "POST", runs, map[string]string{"prompt": "x", "base_revision_id": "rev_old"}, 409, "REVISION_CONFLICT", "base_revision_id"},
			{"unavailable model", e.tokenA, "POST", runs, map[string]any{"prompt": "x", "model_id": "gpt-x"}, 400, "CODING_AGENT_MODEL_UNAVAILABLE", "model_id"},
			{"unavailable engine", e.tokenA, "POST", runs, map[string]string{"prompt": "x", "engine": "opencode"}, 400, "CODING_AGENT_ENGINE_UNAVAILABLE", "engine"},
			{"unknown chat session", e.tokenA, "POST", runs, map[string]string{"prompt": "x", "chat_session_id": "cs_nope"}, 404, "NOT_FOUND", "chat_session_id"},
			{"native disabled by policy", e.tokenA, "POST", runs, map[string]string{"prompt": "x", "engine": "native"}, 400, "CODING_AGENT_ENGINE_UNAVAILABLE", "engine"},
		}
		// The requests these cases send against the API's own description
		// (openapi_test.go holds only their answers to it).
		invalid := map[string]bool{"malformed json": true, "unknown field": true, "wrong type": true, "two values": true,
			"empty body": true, "oversized": true, "malformed app id": true, "path traversal": true, "malformed run id": true,
			"unknown route": true, "bad after_seq": true, "bad status filter": true, "bad limit": true}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var er apiError
				do := e.do
				if invalid[tc.name] {
					do = e.doInvalid
				}
				got := do(tc.token, tc.method, tc.path, tc.body, &er)
				assert.Equal(t, tc.status, got)
				assert.Equal(t, tc.code, er.Detail.Code, er.Detail.Message)
				assert.Equal(t, tc.field, er.Detail.Field)
				assert.NotEmpty(t, er.Detail.Message)
			})
		}
	})
}

// TestCrossTenantMatrix: every route with another tenant's token answers 404
// exactly like a missing resource, and nothing changes in the database.
func TestCrossTenantMatrix(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, "ask deploy Deploy?\nsay after")
		resp := e.openStream(e.tokenA, app, run.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "run.paused" })
		resp.Body.Close()
		ctx := context.Background()
		before, err := e.h.Store.GetRun(ctx, run.ID)
		require.NoError(t, err)
		evsBefore, err := e.h.Store.ListEvents(ctx, run.ID, app, 0, 0)
		require.NoError(t, err)

		base := "/admin/apps/" + app
		r := base + "/coding-agent/runs/" + run.ID
		routes := []struct {
			method, path string
			body         any
		}{
			{"GET", base, nil},
			{"GET", base + "/coding-agent/capabilities", nil},
			{"GET", base + "/coding-agent/runs", nil},
			{"POST", base + "/coding-agent/runs", map[string]string{"prompt": "say pwned"}},
			{"GET", r, nil},
			{"GET", r + "/events", nil},
			{"GET", r + "/stream", nil},
			{"POST", r + "/cancel", nil},
			{"POST", r + "/resume", map[string]string{"decision": "allow"}},
		}
		for _, rt := range routes {
			var foreign, missing apiError
			got := e.do(e.tokenB, rt.method, rt.path, rt.body, &foreign)
			assert.Equal(t, http.StatusNotFound, got, "%s %s", rt.method, rt.path)
			assert.Equal(t, "NOT_FOUND", foreign.Detail.Code, "%s %s", rt.method, rt.path)
			// The same route on an id that does not exist answers alike.
			gone := strings.Replace(strings.Replace(rt.path, app, "app_missing", 1), run.ID, "run_missing", 1)
			e.do(e.tokenA, rt.method, gone, rt.body, &missing)
			assert.Equal(t, missing.Detail.Code, foreign.Detail.Code)
		}
		var list struct {
			Items []any `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenB, "GET", "/admin/apps", nil, &list))
		assert.Empty(t, list.Items, "another tenant's apps are not listed")

		after, err := e.h.Store.GetRun(ctx, run.ID)
		require.NoError(t, err)
		assert.Equal(t, before.Status, after.Status)
		assert.Equal(t, before.UpdatedAt, after.UpdatedAt)
		evsAfter, err := e.h.Store.ListEvents(ctx, run.ID, app, 0, 0)
		require.NoError(t, err)
		assert.Equal(t, len(evsBefore), len(evsAfter))
		runs, err := e.h.Store.ListRuns(ctx, app, "", "", 10)
		require.NoError(t, err)
		assert.Len(t, runs, 1, "no run was created by the foreign tenant")
		require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", r+"/cancel", nil, nil))
	})
}

func TestCapabilities(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		path := "/admin/apps/" + app + "/coding-agent/capabilities"
		var caps struct {
			Policy struct {
				DefaultEngine  string `json:"default_engine"`
				DefaultSandbox string `json:"default_sandbox"`
				NativeEnabled  bool   `json:"native_enabled"`
			} `json:"policy"`
			Engines []struct {
				Name      string `json:"name"`
				Available bool   `json:"available"`
			} `json:"engines"`
			Tools []struct {
				Name              string `json:"name"`
				Toolpack          string `json:"toolpack"`
				Permission        string `json:"permission"`
				DefaultPermission string `json:"default_permission"`
			} `json:"tools"`
		}
		require.Equal(t, http.StatusOK, e.do(e.readA, "GET", path, nil, &caps), "apps.read is enough")
		assert.Equal(t, "mock", caps.Policy.DefaultEngine)
		assert.Equal(t, "local", caps.Policy.DefaultSandbox)
		assert.False(t, caps.Policy.NativeEnabled)
		require.Len(t, caps.Engines, 1)
		assert.Equal(t, "mock", caps.Engines[0].Name)
		assert.True(t, caps.Engines[0].Available)
		byTool := map[string]string{}
		var names []string
		for _, tl := range caps.Tools {
			assert.Equal(t, "patch", tl.Toolpack, tl.Name)
			assert.Equal(t, tl.DefaultPermission, tl.Permission, "%s: no override configured", tl.Name)
			byTool[tl.Name] = tl.Permission
			names = append(names, tl.Name)
		}
		assert.True(t, sort.StringsAreSorted(names), "sorted: %v", names)
		assert.Equal(t, "allow", byTool["coding_agent_read_file"])
		assert.Equal(t, "ask", byTool["coding_agent_run_command"])
		assert.NotContains(t, byTool, "coding_agent_write_file", "the legacy whole-file write is off by default")

		var first, second map[string]any
		e.do(e.tokenA, "GET", path, nil, &first)
		e.do(e.tokenA, "GET", path, nil, &second)
		assert.Equal(t, first, second, "deterministic")

		var er apiError
		assert.Equal(t, http.StatusNotFound, e.do(e.tokenB, "GET", path, nil, &er), "another tenant's app")
		assert.Equal(t, http.StatusUnauthorized, e.do("", "GET", path, nil, &er))
	})
}

func TestIdempotencyKey(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		path := "/admin/apps/" + app + "/coding-agent/runs"
		post := func(key string, body map[string]string, out any) int {
			req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(mustJSON(body)))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+e.tokenA)
			if key != "" {
				req.Header.Set("Idempotency-Key", key)
			}
			if key == "bad key" {
				markInvalid(req) // a space is no printable ASCII
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
			return resp.StatusCode
		}
		body := map[string]string{"prompt": "say once"}
		var first, again runOut
		require.Equal(t, http.StatusCreated, post("k-1", body, &first))
		require.Equal(t, http.StatusOK, post("k-1", body, &again), "a replay answers with the original run")
		assert.Equal(t, first.ID, again.ID)

		var er apiError
		assert.Equal(t, http.StatusConflict, post("k-1", map[string]string{"prompt": "say twice"}, &er))
		assert.Equal(t, "IDEMPOTENCY_KEY_REUSED", er.Detail.Code)
		assert.Equal(t, http.StatusBadRequest, post("bad key", body, &er))
		assert.Equal(t, "Idempotency-Key", er.Detail.Field)

		// Concurrent duplicates collapse into one run.
		ids := make([]string, 6)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var r runOut
				code := post("k-2", body, &r)
				assert.Contains(t, []int{http.StatusCreated, http.StatusOK}, code)
				ids[i] = r.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			assert.Equal(t, ids[0], id)
		}
		runs, err := e.h.Store.ListRuns(context.Background(), app, "", "", 100)
		require.NoError(t, err)
		assert.Len(t, runs, 2, "one run per key")
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSandboxRequired: on a host with no sandbox backend a run is refused
// with the seed's sandbox-required code, and nothing is recorded.
func TestSandboxRequired(t *testing.T) {
	e := startEnvWith(t, "sqlite", "mock", "patch")
	app := e.createApp(e.tokenA)
	var er apiError
	assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs", map[string]string{"prompt": "x"}, &er))
	assert.Equal(t, "CODING_AGENT_SANDBOX_REQUIRED", er.Detail.Code)
	assert.Equal(t, "sandbox", er.Detail.Field)
	runs, err := e.h.Store.ListRuns(t.Context(), app, "", "", 10)
	require.NoError(t, err)
	assert.Empty(t, runs)
	chats, err := e.h.Store.ListChatSessions(t.Context(), app, "usr_admin", "", 10)
	require.NoError(t, err)
	assert.Empty(t, chats, "a refused run leaves no chat session behind")
}

// TestRefusedRunsChangeNothing: a create-run refused by policy records no
// run, no chat session and no turn.
func TestRefusedRunsChangeNothing(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	path := "/admin/apps/" + app + "/coding-agent/runs"
	for _, body := range []map[string]string{
		{"prompt": "x", "engine": "opencode"},
		{"prompt": "x", "engine": "native"},
		{"prompt": "x", "model_id": "mdl_nope"},
		{"prompt": "x", "base_revision_id": "rev_old"},
	} {
		var er apiError
		code := e.do(e.tokenA, "POST", path, body, &er)
		assert.GreaterOrEqual(t, code, 400, "%v", body)
	}
	runs, err := e.h.Store.ListRuns(t.Context(), app, "", "", 10)
	require.NoError(t, err)
	assert.Empty(t, runs)
	chats, err := e.h.Store.ListChatSessions(t.Context(), app, "usr_admin", "", 10)
	require.NoError(t, err)
	assert.Empty(t, chats)
}

// TestEngineUnsupportedRuntime: an engine that needs a sandbox feature the
// default backend lacks is refused with CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME
// before anything is written, and capabilities says why up front.
func TestEngineUnsupportedRuntime(t *testing.T) {
	dir := testenv.PluginConfigDir(t, "mock", "local", "patch")
	body := fmt.Sprintf("plugin \"mock-gpu\" {\n  kind    = \"engine\"\n  command = %q\n  args    = [\"-name=mock-gpu\", \"-requires=exec,gpu\"]\n}\n", testenv.DefaultPlugins["mock"])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mock-gpu.hcl"), []byte(body), 0o644))
	e := startEnvIn(t, "sqlite", dir)
	app := e.createApp(e.tokenA)

	var caps struct {
		Engines []struct {
			Name             string   `json:"name"`
			Available        bool     `json:"available"`
			RuntimeSupported *bool    `json:"runtime_supported"`
			MissingFeatures  []string `json:"missing_features"`
		} `json:"engines"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/capabilities", nil, &caps))
	require.Len(t, caps.Engines, 2)
	byName := map[string]int{}
	for i, en := range caps.Engines {
		byName[en.Name] = i
	}
	gpu, mockEng := caps.Engines[byName["mock-gpu"]], caps.Engines[byName["mock"]]
	assert.True(t, gpu.Available, "the plugin itself is healthy")
	require.NotNil(t, gpu.RuntimeSupported)
	assert.False(t, *gpu.RuntimeSupported)
	assert.Equal(t, []string{"gpu"}, gpu.MissingFeatures)
	require.NotNil(t, mockEng.RuntimeSupported)
	assert.True(t, *mockEng.RuntimeSupported)

	var er apiError
	path := "/admin/apps/" + app + "/coding-agent/runs"
	require.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", path, map[string]string{"prompt": "x", "engine": "mock-gpu"}, &er))
	assert.Equal(t, "CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME", er.Detail.Code)
	assert.Equal(t, "engine", er.Detail.Field)
	assert.Contains(t, er.Detail.Message, "gpu")
	runs, err := e.h.Store.ListRuns(t.Context(), app, "", "", 10)
	require.NoError(t, err)
	assert.Empty(t, runs)
	chats, err := e.h.Store.ListChatSessions(t.Context(), app, "usr_admin", "", 10)
	require.NoError(t, err)
	assert.Empty(t, chats, "a refused run leaves no chat session behind")

	// The other engine on the same host still runs.
	var run struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", path, map[string]string{"prompt": "say hi", "engine": "mock"}, &run))
	assert.NotEmpty(t, run.ID)
}

// TestCancelDuringToolCallOverHTTP: a cancel that arrives while a tool call
// runs a sandbox command ends the call (tool.failed TOOL_CANCELLED), kills
// the command and ends the run cancelled, all through the public API.
func TestCancelDuringToolCallOverHTTP(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	base := "/admin/apps/" + app + "/coding-agent/runs/"
	// The command is found by a marker in its command line, from this
	// machine's /proc: that works for any backend whose processes run here,
	// isolated or not (a pid file would need a path both sides can see).
	marker := fmt.Sprintf("60.%d", time.Now().UnixNano()%1_000_000_000)
	run := e.createRun(e.tokenA, app, fmt.Sprintf(`tool coding_agent_run_command {"command":"exec sleep %s"}`, marker)+"\nsay never")

	// run_command asks by default: allow it, then wait for the command.
	resp := e.openStream(e.tokenA, app, run.ID, "")
	readSSE(t, resp, func(f frame) bool { return f.Event == "permission.requested" })
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/resume", map[string]string{"decision": "allow"}, nil))
	require.Eventually(t, func() bool { return len(processesWith(t, "sleep\x00"+marker)) > 0 }, 30*time.Second, 10*time.Millisecond, "the command never started")

	require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+run.ID+"/cancel", nil, nil))
	final := e.waitRun(app, run.ID)
	assert.Equal(t, "cancelled", final.Status)

	var page struct {
		Events []struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", base+run.ID+"/events?limit=500", nil, &page))
	var seq []string
	for _, ev := range page.Events {
		seq = append(seq, ev.Event)
		if ev.Event == "tool.failed" {
			assert.Contains(t, string(ev.Payload), `"error_code":"TOOL_CANCELLED"`)
		}
	}
	require.NotEmpty(t, seq)
	assert.Equal(t, "run.cancelled", seq[len(seq)-1], "the terminal event is last: %v", seq)
	assert.Contains(t, seq, "tool.failed", "the call in flight is closed before the run ends: %v", seq)
	assert.NotContains(t, seq, "tool.completed")

	// The sandbox command is gone with the call.
	require.Eventually(t, func() bool { return len(processesWith(t, "sleep\x00"+marker)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"the command outlived the cancel")
}

// processesWith lists the pids on this machine whose command line (NUL
// separated) contains marker.
func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, pid)
		}
	}
	return out
}
