package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusRoute is one route of host/api/api.go as the bad-input corpus sends
// to it. Paths hold placeholders ({app}, {run}, {rev}, {chat}, {cp},
// {agent}, {file}) that the fixture fills and the mutations replace.
type corpusRoute struct {
	method, path string
	// write marks routes a read-only token may not call.
	write bool
	// body is a valid body to mutate; nil for routes that take none.
	body map[string]any
	// limit is the route's body limit: the corpus sends a body over it.
	limit int
	// query and headers are the text parameters the route reads.
	query, headers []string
}

// corpusRoutes lists every route api.New registers; TestBadInputCorpus
// checks the list against the router, so a new route must be added here.
func corpusRoutes() []corpusRoute {
	const mb = 1 << 20
	page := []string{"cursor", "limit"}
	return []corpusRoute{
		{method: "GET", path: "/healthz"},
		{method: "GET", path: "/readyz"},
		{method: "GET", path: "/metrics"},
		{method: "GET", path: "/console"},
		{method: "GET", path: "/console/{asset}"},
		{method: "GET", path: "/admin/token"},
		{method: "GET", path: "/openapi.json"},
		{method: "GET", path: "/openapi.yaml"},
		{method: "GET", path: "/models"},
		{method: "POST", path: "/admin/models", write: true, limit: mb, body: map[string]any{
			"name": "m1", "provider": "openai", "provider_model": "gpt-x", "base_url": "http://127.0.0.1:9/v1",
			"api_key_env": "CORPUS_NO_KEY", "scope": "tenant", "inactive": false,
			"bindings": []any{map[string]any{"engine": "mock", "engine_model_id": "x"}}}},
		{method: "PUT", path: "/admin/models/default", write: true, limit: mb, body: map[string]any{"model_id": "model_none", "scope": "tenant"}},
		{method: "POST", path: "/admin/apps", write: true, limit: 32 * mb, query: []string{"name"},
			body: map[string]any{"name": "n", "files": map[string]any{"index.html": "<p>x</p>", "src/a.ts": "a"}}},
		{method: "GET", path: "/admin/apps", query: page},
		{method: "POST", path: "/admin/agents", write: true, limit: 8 * mb, body: map[string]any{"name": "ag", "description": "d",
			"tools": []any{map[string]any{"name": "t", "description": "d", "input_schema": map[string]any{"type": "object", "description": "in"}}}}},
		{method: "GET", path: "/admin/agents", query: page},
		{method: "GET", path: "/admin/agents/{agent}"},
		{method: "PUT", path: "/admin/apps/{app}/agent", write: true, limit: 1 << 10, body: map[string]any{"agent_id": "{agent}"}},
		{method: "GET", path: "/admin/apps/{app}/builder/agent-contract"},
		{method: "GET", path: "/admin/app-templates"},
		{method: "GET", path: "/admin/apps/{app}"},
		{method: "GET", path: "/admin/apps/{app}/revisions", query: page},
		{method: "POST", path: "/admin/apps/{app}/revisions", write: true, limit: 32 * mb,
			body: map[string]any{"base_revision_id": "{rev}", "files": map[string]any{"b.txt": "b", "index.html": nil}, "message": "m"}},
		{method: "GET", path: "/admin/apps/{app}/revisions/{rev}"},
		{method: "GET", path: "/admin/apps/{app}/revisions/{rev}/diff", query: []string{"from", "format"}},
		{method: "GET", path: "/admin/apps/{app}/revisions/{rev}/files/{file}"},
		{method: "GET", path: "/admin/apps/{app}/revisions/{rev}/archive", query: []string{"format"}},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/capabilities"},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/checkpoints", query: append(page, "chat_session_id")},
		{method: "POST", path: "/admin/apps/{app}/coding-agent/checkpoints/{cp}/restore", write: true, limit: 1 << 10,
			body: map[string]any{"chat_session_id": "{chat}"}},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/chat-sessions", query: page},
		{method: "POST", path: "/admin/apps/{app}/coding-agent/chat-sessions", write: true, limit: mb, body: map[string]any{"title": "t"}},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/chat-sessions/{chat}"},
		{method: "POST", path: "/admin/apps/{app}/coding-agent/runs", write: true, limit: mb, headers: []string{"Idempotency-Key"},
			body: map[string]any{"prompt": "say hi", "engine": "mock", "chat_session_id": "{chat}", "token_budget": 100000}},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/runs", query: append(page, "status")},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/runs/{run}"},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/runs/{run}/events", query: []string{"after_seq", "limit"}},
		{method: "GET", path: "/admin/apps/{app}/coding-agent/runs/{run}/stream", query: []string{"after_seq"}, headers: []string{"Last-Event-ID"}},
		{method: "POST", path: "/admin/apps/{app}/coding-agent/runs/{run}/stream-ticket"},
		{method: "POST", path: "/admin/apps/{app}/coding-agent/runs/{run}/cancel", write: true},
		{method: "POST", path: "/admin/apps/{app}/coding-agent/runs/{run}/resume", write: true, limit: mb,
			body: map[string]any{"decision": "allow", "reason": "r"}},
	}
}

// corpusIDs are one tenant's resources the corpus aims at.
type corpusIDs struct{ app, run, rev, chat, cp, agent string }

// corpusFixture makes, for the token's tenant, an app with an applied run
// (so a revision, a chat session and a checkpoint exist) and an agent.
func (e *env) corpusFixture(token string) corpusIDs {
	e.t.Helper()
	t := e.t.(*testing.T)
	app := e.createApp(token)
	var run runOut
	require.Equal(t, http.StatusCreated, e.do(token, "POST", "/admin/apps/"+app+"/coding-agent/runs",
		map[string]any{"prompt": patchLine(t, "index.html", "<h1>hi</h1>", "<h1>yo</h1>")}, &run))
	var r struct {
		runDetail
		ChatSessionID string `json:"chat_session_id"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for r.Status != "completed" && r.Status != "failed" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		require.Equal(t, http.StatusOK, e.do(token, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID, nil, &r))
	}
	require.Equal(t, "applied", r.Context.Result.Kind, r.ErrorMessage)
	var agent struct {
		Agent struct{ ID string } `json:"agent"`
	}
	require.Equal(t, http.StatusCreated, e.do(token, "POST", "/admin/agents", map[string]any{"name": "fixture"}, &agent))
	return corpusIDs{app: app, run: run.ID, rev: r.ResultRevisionID, chat: r.ChatSessionID, cp: r.Context.Result.CheckpointID, agent: agent.Agent.ID}
}

func (ids corpusIDs) fill(s string) string {
	return strings.NewReplacer("{app}", ids.app, "{run}", ids.run, "{rev}", ids.rev, "{chat}", ids.chat,
		"{cp}", ids.cp, "{agent}", ids.agent, "{file}", "index.html", "{asset}", "js/main.js").Replace(s)
}

// corpusCase is one request of the corpus.
type corpusCase struct {
	name, method, url string
	token             string
	body              []byte
	contentType       string
	headers           map[string]string
}

// badUTF8 marks where a generated JSON body gets raw invalid UTF-8: the
// marker is valid JSON text that json.Marshal leaves alone, replaced after.
const badUTF8 = "@@INVALID-UTF8@@"

// Bad values put in place of a path parameter, a query value, a JSON value.
var (
	badPathValues = []string{"..", "%2e%2e%2fetc", "%00", "a%00b", "%FF", "%C3%28", strings.Repeat("x", 101),
		"ok_but_unknown_000000000000", "%20", "a%5Cb", "draft%00"}
	badFilePaths = []string{"../../etc/passwd", "%2e%2e/x", "%00", "index.html%00.png", "%FF", "a/./b", "a//b",
		"a%5Cb", ".", "missing.txt", strings.Repeat("d/", 600) + "f"}
	badQueryValues = []string{"%00", "%FF", "a%00b", "-1", "0", "99999999999999999999999", "1e999", "abc!",
		"..%2F..%2Fetc", strings.Repeat("a", 5000)}
	badJSONValues = []string{`1`, `-99999999999999999999999`, `1e999`, `true`, `[]`, `{}`, `null`, `"a\u0000b"`,
		`"\u0000"`, `"` + badUTF8 + `"`, `"../../etc/passwd"`, `"\ud800"`, `""`}
	badBodies = []string{"", "{", "[]", "null", `"s"`, "123", "{}{}", `{"unknown_field":1}`, `{"a":`, "\xff\xfe",
		`{"` + badUTF8 + `":1}`, `{"\u0000":1}`}
)

// buildCorpus generates routes × mutations for tenant A's ids, with tenant
// B's ids as the foreign-tenant mutation.
func buildCorpus(t *testing.T, e *env, a, b corpusIDs) []corpusCase {
	var out []corpusCase
	for _, r := range corpusRoutes() {
		url := a.fill(r.path)
		var body []byte
		if r.body != nil {
			body = jsonOf(t, fillAny(a, r.body))
		}
		add := func(name, u string, tok string, body []byte, hdr map[string]string) {
			out = append(out, corpusCase{name: r.method + " " + r.path + " " + name, method: r.method, url: u, token: tok, body: body, headers: hdr})
		}
		// Authentication and scope.
		add("no token", url, "", body, nil)
		add("unknown token", url, "nope", body, nil)
		add("token not UTF-8", url, "\xff\xfe", body, nil)
		if r.write {
			add("read-only token", url, e.readA, body, nil)
		}
		// Path parameters: malformed, unknown and another tenant's.
		for _, ph := range []string{"{app}", "{run}", "{rev}", "{chat}", "{cp}", "{agent}"} {
			if !strings.Contains(r.path, ph) {
				continue
			}
			for _, v := range badPathValues {
				add(ph+"="+v, a.fill(strings.Replace(r.path, ph, v, 1)), e.tokenA, body, nil)
			}
			add(ph+" of tenant B", a.fill(strings.Replace(r.path, ph, b.fill(ph), 1)), e.tokenA, body, nil)
		}
		for _, ph := range []string{"{file}", "{asset}"} {
			if !strings.Contains(r.path, ph) {
				continue
			}
			for _, v := range badFilePaths {
				add(ph+"="+v, strings.Replace(a.fill(strings.Replace(r.path, ph, "@F@", 1)), "@F@", v, 1), e.tokenA, body, nil)
			}
		}
		// Query parameters (and one the route does not read).
		for _, q := range append(append([]string{}, r.query...), "cursor", "unread") {
			for _, v := range badQueryValues {
				add("?"+q+"="+v, url+"?"+q+"="+v, e.tokenA, body, nil)
			}
		}
		add("query key %FF", url+"?%FF=1", e.tokenA, body, nil)
		for _, h := range r.headers {
			for _, v := range []string{"\xff", "a\xc3\x28", strings.Repeat("k", 300), "a b", "-1", "99999999999999999999999"} {
				add(h+": "+v, url, e.tokenA, body, map[string]string{h: v})
			}
		}
		if r.body == nil {
			continue
		}
		// Bodies: malformed, wrong shapes, over the limit.
		for _, raw := range badBodies {
			add("body "+raw, url, e.tokenA, withBadUTF8([]byte(raw)), nil)
		}
		add("body over the limit", url, e.tokenA, append(append([]byte(`{"name":"`), bytes.Repeat([]byte("x"), r.limit+1)...), `"}`...), nil)
		// Every value and every object of the body, one at a time.
		for _, m := range mutateJSON(fillAny(a, r.body), "") {
			add("body "+m.name, url, e.tokenA, withBadUTF8(jsonOf(t, m.value)), nil)
			for _, v := range badJSONValues {
				if m.leaf {
					raw := bytes.Replace(jsonOf(t, m.marked), []byte(`"@@LEAF@@"`), []byte(v), 1)
					add("body "+m.name+"="+v, url, e.tokenA, withBadUTF8(raw), nil)
				}
			}
		}
		// Ids of tenant B inside the body.
		add("body with tenant B's ids", url, e.tokenA, jsonOf(t, fillAny(b, r.body)), nil)
	}
	out = append(out, archiveCases(t, e)...)
	return out
}

// archiveCases are uploads of apps as archives.
func archiveCases(t *testing.T, e *env) []corpusCase {
	tarOf := func(names ...string) []byte {
		var buf bytes.Buffer
		w := tar.NewWriter(&buf)
		for _, n := range names {
			if strings.ContainsRune(n, 0) {
				continue // tar cannot encode it; the zip case sends it
			}
			require.NoError(t, w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
			_, err := w.Write([]byte("x"))
			require.NoError(t, err)
		}
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	var out []corpusCase
	add := func(name, ct, query string, body []byte) {
		out = append(out, corpusCase{name: "POST /admin/apps archive " + name, method: "POST", url: "/admin/apps" + query,
			token: e.tokenA, body: body, contentType: ct})
	}
	for _, names := range [][]string{{"a", "a/b"}, {"../x"}, {"/abs"}, {"a\xffb"}, {"a\x00b"}, {"."}, {"a/../../b"}, {".git/config"},
		{"a", "a"}, {strings.Repeat("n", 300)}, {"x/" + strings.Repeat("n", 256)}} {
		add(fmt.Sprintf("tar %q", names), "application/x-tar", "?name=t", tarOf(names...))
		zipFiles := map[string]string{}
		for _, n := range names {
			zipFiles[n] = "x"
		}
		add(fmt.Sprintf("zip %q", names), "application/zip", "?name=z", newZip(t, zipFiles))
	}
	for _, q := range []string{"", "?name=", "?name=%00", "?name=%FF", "?name=a%00b", "?name=" + strings.Repeat("n", 201)} {
		add("name "+q, "application/zip", q, newZip(t, map[string]string{"a.txt": "x"}))
	}
	for _, ct := range []string{"application/zip", "application/x-tar", "application/gzip"} {
		add(ct+" of garbage", ct, "?name=g", []byte("not an archive \x00\xff"))
		add(ct+" empty", ct, "?name=g", nil)
	}
	return out
}

// jsonMutation is the body with one node changed.
type jsonMutation struct {
	name  string
	value any
	// leaf mutations carry marked: the body with the leaf as "@@LEAF@@".
	leaf   bool
	marked any
}

// mutateJSON lists, for each node of v: for a leaf, the body with the leaf
// marked (to be replaced by each bad JSON value); for an object, the body
// with a NUL key and an invalid-UTF-8 key added.
func mutateJSON(v any, path string) []jsonMutation {
	var out []jsonMutation
	switch n := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, bad := range []string{"a\x00b", badUTF8, "", "../x", "."} {
			out = append(out, jsonMutation{name: fmt.Sprintf("%s key %q", path, bad), value: with(n, bad, "x")})
		}
		for _, k := range keys {
			for _, m := range mutateJSON(n[k], path+"."+k) {
				m.value, m.marked = with(n, k, m.value), with(n, k, m.marked)
				out = append(out, m)
			}
		}
	case []any:
		for i := range n {
			for _, m := range mutateJSON(n[i], fmt.Sprintf("%s[%d]", path, i)) {
				cp := append([]any{}, n...)
				cm := append([]any{}, n...)
				cp[i], cm[i] = m.value, m.marked
				m.value, m.marked = cp, cm
				out = append(out, m)
			}
		}
	default:
		out = append(out, jsonMutation{name: path, value: v, leaf: true, marked: "@@LEAF@@"})
	}
	return out
}

func with(m map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for kk, vv := range m {
		out[kk] = vv
	}
	out[k] = v
	return out
}

func fillAny(ids corpusIDs, v any) any {
	switch n := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, vv := range n {
			out[k] = fillAny(ids, vv)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i := range n {
			out[i] = fillAny(ids, n[i])
		}
		return out
	case string:
		return ids.fill(n)
	}
	return v
}

func jsonOf(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func withBadUTF8(b []byte) []byte { return bytes.ReplaceAll(b, []byte(badUTF8), []byte("a\xff\xfeb")) }

// TestBadInputCorpus sends routes × mutations of bad input to every route
// on both dialects: no answer may be a 5xx, every 4xx carries a code, and
// both dialects answer each request alike.
func TestBadInputCorpus(t *testing.T) {
	answers := map[string]map[string]int{} // dialect → case → status
	eachDialect(t, func(e *env) {
		t := e.t.(*testing.T)
		a, b := e.corpusFixture(e.tokenA), e.corpusFixture(e.tokenB)

		// The corpus covers every route the API registers.
		registered := map[string]bool{}
		for _, ri := range e.h.Handler.(*gin.Engine).Routes() {
			registered[ri.Method+" "+ri.Path] = true
		}
		covered := map[string]bool{}
		for _, r := range corpusRoutes() {
			p := strings.NewReplacer("{app}", ":app_id", "{run}", ":run_id", "{rev}", ":revision_id", "{chat}", ":chat_id",
				"{cp}", ":checkpoint_id", "{agent}", ":agent_id", "{file}", "*path", "{asset}", "*asset").Replace(r.path)
			covered[r.method+" "+p] = true
		}
		assert.Equal(t, registered, covered, "the corpus must list exactly the routes of api.New")

		cases := buildCorpus(t, e, a, b)
		require.GreaterOrEqual(t, len(cases), 500)
		client := &http.Client{Timeout: 60 * time.Second}
		var fiveXX, uncoded []string
		statuses := map[int]int{}
		got := map[string]int{}
		answers[string(e.h.Store.Dialect())] = got
		for _, cs := range cases {
			status, raw := sendCase(t, client, e.srv.URL, cs)
			statuses[status]++
			got[cs.name] = status
			var er apiError
			switch {
			case status >= 500:
				fiveXX = append(fiveXX, fmt.Sprintf("%d %.200s: %.300s", status, cs.name, raw))
			case status >= 400 && (json.Unmarshal(raw, &er) != nil || er.Detail.Code == ""):
				uncoded = append(uncoded, fmt.Sprintf("%d %.200s: %.300s", status, cs.name, raw))
			}
		}
		t.Logf("bad-input corpus on %s: %d requests, statuses %v, %d answered 5xx, %d 4xx without detail.code",
			e.h.Store.Dialect(), len(cases), statuses, len(fiveXX), len(uncoded))
		assert.Empty(t, fiveXX, "no bad input may answer 5xx")
		assert.Empty(t, uncoded, "every 4xx carries detail.code")

		// Nothing the corpus sent left an app without a draft behind.
		var apps struct {
			Items []struct {
				ID              string `json:"id"`
				DraftRevisionID string `json:"draft_revision_id"`
			} `json:"items"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps?limit=200", nil, &apps))
		for _, app := range apps.Items {
			assert.NotEmpty(t, app.DraftRevisionID, "app %s has no draft", app.ID)
		}
	})
	if len(answers) == 2 {
		var differ []string
		for name, status := range answers["sqlite"] {
			if pg := answers["postgres"][name]; pg != status {
				differ = append(differ, fmt.Sprintf("%.200s: sqlite %d, postgres %d", name, status, pg))
			}
		}
		sort.Strings(differ)
		assert.Empty(t, differ, "both dialects answer the same bad input alike")
	}
}

func sendCase(t *testing.T, client *http.Client, base string, cs corpusCase) (int, []byte) {
	var rd io.Reader
	if cs.body != nil {
		rd = bytes.NewReader(cs.body)
	}
	req, err := http.NewRequest(cs.method, base+cs.url, rd)
	require.NoError(t, err, cs.name)
	markInvalid(req) // only the answer is held to the spec
	if cs.token != "" {
		req.Header.Set("Authorization", "Bearer "+cs.token)
	}
	if cs.contentType != "" {
		req.Header.Set("Content-Type", cs.contentType)
	}
	for k, v := range cs.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err, cs.name)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
