package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawRequest sends body as it is (so it may hold invalid UTF-8) with extra
// headers, and decodes an error answer. Its requests are invalid on purpose
// (markInvalid): only the answers are held to the API's description.
func (e *env) rawRequest(method, path string, body []byte, headers map[string]string) (int, apiError, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.tokenA)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	markInvalid(req)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	var er apiError
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(raw, &er)
	}
	return resp.StatusCode, er, raw
}

// TestTextIsValidUTF8WithoutNUL: every text a request carries — names,
// titles, prompts, ids, query strings, text headers — is valid UTF-8 without
// NUL, or 400 INVALID_REQUEST naming the field, on both dialects alike
// (PostgreSQL used to answer 500 and keep half an app).
func TestTextIsValidUTF8WithoutNUL(t *testing.T) {
	eachDialect(t, func(e *env) {
		t := e.t.(*testing.T)
		app := e.createApp(e.tokenA)
		var appsBefore struct{ Items []struct{ ID string } }
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps", nil, &appsBefore))
		runs := "/admin/apps/" + app + "/coding-agent/runs"
		for _, tc := range []struct {
			name, method, path string
			body               string
			headers            map[string]string
			field              string
		}{
			{name: "app name NUL", method: "POST", path: "/admin/apps", body: `{"name":"a\u0000b","files":{"a.txt":"x"}}`, field: "name"},
			{name: "app name invalid UTF-8", method: "POST", path: "/admin/apps", body: "{\"name\":\"a\xffb\",\"files\":{\"a.txt\":\"x\"}}", field: "name"},
			{name: "app file path NUL", method: "POST", path: "/admin/apps", body: `{"name":"n","files":{"a\u0000.txt":"x"}}`, field: "files"},
			{name: "app file path invalid UTF-8", method: "POST", path: "/admin/apps", body: "{\"name\":\"n\",\"files\":{\"a\xff.txt\":\"x\"}}", field: "files"},
			{name: "app file content invalid UTF-8", method: "POST", path: "/admin/apps", body: "{\"name\":\"n\",\"files\":{\"a.txt\":\"\xff\"}}", field: "files.a.txt"},
			{name: "archive name NUL", method: "POST", path: "/admin/apps?name=a%00b", headers: map[string]string{"Content-Type": "application/zip"}, field: "name"},
			{name: "archive name invalid UTF-8", method: "POST", path: "/admin/apps?name=a%FFb", headers: map[string]string{"Content-Type": "application/zip"}, field: "name"},
			{name: "model name NUL", method: "POST", path: "/admin/models", body: `{"name":"m\u0000","provider":"openai","provider_model":"x","scope":"tenant"}`, field: "name"},
			{name: "model provider_model NUL", method: "POST", path: "/admin/models", body: `{"name":"m","provider":"openai","provider_model":"x\u0000","scope":"tenant"}`, field: "provider_model"},
			{name: "model binding NUL", method: "POST", path: "/admin/models", body: `{"name":"m","provider":"openai","provider_model":"x","bindings":[{"engine":"mock","engine_model_id":"\u0000"}]}`, field: "bindings[0].engine_model_id"},
			{name: "default model id NUL", method: "PUT", path: "/admin/models/default", body: `{"model_id":"\u0000"}`, field: "model_id"},
			{name: "agent name NUL", method: "POST", path: "/admin/agents", body: `{"name":"ag\u0000"}`, field: "name"},
			{name: "agent description invalid UTF-8", method: "POST", path: "/admin/agents", body: "{\"name\":\"ag\",\"description\":\"\xc3\x28\"}", field: "description"},
			{name: "agent schema string NUL", method: "POST", path: "/admin/agents", body: `{"name":"ag","tools":[{"name":"t","input_schema":{"description":"\u0000"}}]}`, field: "tools[0].input_schema.description"},
			{name: "chat title NUL", method: "POST", path: "/admin/apps/" + app + "/coding-agent/chat-sessions", body: `{"title":"t\u0000"}`, field: "title"},
			{name: "run prompt NUL", method: "POST", path: runs, body: `{"prompt":"say hi\u0000"}`, field: "prompt"},
			{name: "run chat id invalid UTF-8", method: "POST", path: runs, body: "{\"prompt\":\"say hi\",\"chat_session_id\":\"\xff\"}", field: "chat_session_id"},
			{name: "run Idempotency-Key invalid UTF-8", method: "POST", path: runs, body: `{"prompt":"say hi"}`, headers: map[string]string{"Idempotency-Key": "k\xff"}, field: "Idempotency-Key"},
			{name: "stream Last-Event-ID invalid UTF-8", method: "GET", path: runs + "/run_x/stream", headers: map[string]string{"Last-Event-ID": "\xff"}, field: "Last-Event-ID"},
			{name: "query value NUL", method: "GET", path: runs + "?status=%00", field: "status"},
			{name: "query value invalid UTF-8", method: "GET", path: "/admin/apps/" + app + "/revisions/draft/diff?format=%FF", field: "format"},
			{name: "file path parameter invalid UTF-8", method: "GET", path: "/admin/apps/" + app + "/revisions/draft/files/a%FF.txt", field: "path"},
			{name: "app id parameter NUL", method: "GET", path: "/admin/apps/app%00", field: "app_id"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var body []byte
				if tc.body != "" {
					body = []byte(tc.body)
				}
				status, er, raw := e.rawRequest(tc.method, tc.path, body, tc.headers)
				require.Equal(t, http.StatusBadRequest, status, "%s", raw)
				assert.Equal(t, "INVALID_REQUEST", er.Detail.Code)
				assert.Equal(t, tc.field, er.Detail.Field, er.Detail.Message)
			})
		}
		// None of it left an app behind.
		var appsAfter struct{ Items []struct{ ID string } }
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps", nil, &appsAfter))
		assert.Len(t, appsAfter.Items, len(appsBefore.Items))

		// File contents are bytes: a NUL in them is kept, not refused.
		var made struct{ ID string }
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", `{"name":"bin","files":{"a.bin":"x\u0000y"}}`, &made))
		assert.Equal(t, "x\x00y", e.fileAt(made.ID, "draft", "a.bin"))
		var draft struct{ Revision struct{ ID string } }
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+made.ID+"/revisions/draft", nil, &draft))
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+made.ID+"/revisions",
			`{"base_revision_id":"`+draft.Revision.ID+`","files":{"b.bin":"\u0000"}}`, nil))
		assert.Equal(t, "\x00", e.fileAt(made.ID, "draft", "b.bin"))
		// A sane X-Request-ID is echoed; one that is not text is replaced.
		for _, tc := range []struct{ sent, want string }{{"req-1", "req-1"}, {"a\xffb", ""}} {
			req, err := http.NewRequest("GET", e.srv.URL+"/healthz", nil)
			require.NoError(t, err)
			req.Header.Set("X-Request-ID", tc.sent)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			got := resp.Header.Get("X-Request-ID")
			if tc.want != "" {
				assert.Equal(t, tc.want, got)
			} else {
				assert.True(t, strings.HasPrefix(got, "req_"), got)
			}
		}
	})
}
