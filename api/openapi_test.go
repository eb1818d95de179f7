package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/api"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func load(t *testing.T, data []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	return doc
}

// TestDocumentValid: the document loads and validates as OpenAPI 3.0.3, as
// YAML and in its JSON form, and both say the same.
func TestDocumentValid(t *testing.T) {
	doc := load(t, api.YAML())
	assert.Equal(t, "3.0.3", doc.OpenAPI)
	js, err := api.JSON()
	require.NoError(t, err)
	fromJSON := load(t, js)
	a, err := json.Marshal(doc)
	require.NoError(t, err)
	b, err := json.Marshal(fromJSON)
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b))
	again, err := api.JSON()
	require.NoError(t, err)
	assert.Same(t, &js[0], &again[0], "converted once")
}

// scopes an operation may require (x-agenthost-scope); "none" is public,
// "any" takes any valid token.
var scopes = map[string]bool{"none": true, "any": true, "apps.read": true, "apps.write": true, "admin": true}

// TestOperationsDescribed: every operation has an id, a description, its
// scope stated (and security to match), and X-Request-ID on every answer.
func TestOperationsDescribed(t *testing.T) {
	doc := load(t, api.YAML())
	ids := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			assert.NotEmpty(t, op.OperationID, name)
			assert.False(t, ids[op.OperationID], "%s: operationId %s twice", name, op.OperationID)
			ids[op.OperationID] = true
			assert.NotEmpty(t, op.Description, name)
			scope, _ := op.Extensions["x-agenthost-scope"].(string)
			require.True(t, scopes[scope], "%s: x-agenthost-scope %q", name, scope)
			public := op.Security != nil && len(*op.Security) == 0
			assert.Equal(t, scope == "none", public, "%s: public exactly when its scope is none", name)
			if scope != "none" {
				assert.Contains(t, op.Description, "`"+scope+"`", "%s: the description names the scope", name)
			}
			for status, r := range op.Responses.Map() {
				assert.Contains(t, r.Value.Headers, "X-Request-ID", "%s %s", name, status)
			}
		}
	}
}

// TestErrorResponsesListCodes: every 4xx and 5xx answer of every operation
// (but /readyz's 503, its own report) is the error envelope with the codes
// it can carry listed as an enum, and each code belongs to that status.
func TestErrorResponsesListCodes(t *testing.T) {
	doc := load(t, api.YAML())
	// The status each code answers with (host/api/errors.go statusOf).
	statusOf := map[string]int{
		"NOT_FOUND": 404, "INVALID_REQUEST": 400, "CODING_AGENT_MODEL_UNAVAILABLE": 400, "CODING_AGENT_ENGINE_UNAVAILABLE": 400,
		"CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME": 400, "CODING_AGENT_SANDBOX_REQUIRED": 400, "CODING_AGENT_SANDBOX_UNAVAILABLE": 400,
		"REVISION_CONFLICT": 409, "RUN_NOT_PAUSED": 409, "RUN_FINISHED": 409, "IDEMPOTENCY_KEY_REUSED": 409, "HOST_SHUTDOWN": 503,
		"RUN_LEASE_LOST": 409, "RUN_OWNER_UNREACHABLE": 503, "STORE_UNAVAILABLE": 503, "FILES_TOO_LARGE": 413,
		"UNAUTHENTICATED": 401, "FORBIDDEN": 403, "REQUEST_TOO_LARGE": 413, "MODEL_ENDPOINT_NOT_ALLOWED": 400, "INTERNAL_ERROR": 500,
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, r := range op.Responses.Map() {
				code, err := strconv.Atoi(status)
				require.NoError(t, err)
				if code < 400 || path == "/readyz" && code == 503 {
					continue
				}
				name := fmt.Sprintf("%s %s %s", method, path, status)
				mt := r.Value.Content.Get("application/json")
				require.NotNil(t, mt, name)
				codes := codeEnum(mt.Schema.Value)
				require.NotEmpty(t, codes, "%s: list the codes as an enum on detail.code", name)
				for _, c := range codes {
					assert.Equal(t, statusOf[c], code, "%s: %s is answered with %d", name, c, statusOf[c])
				}
				// The envelope itself.
				ok := false
				for _, s := range mt.Schema.Value.AllOf {
					ok = ok || s.Ref == "#/components/schemas/Error"
				}
				assert.True(t, ok, "%s: allOf the Error envelope", name)
			}
		}
	}
}

// codeEnum finds detail.code's enum in an allOf error schema.
func codeEnum(s *openapi3.Schema) []string {
	var out []string
	for _, part := range s.AllOf {
		d := part.Value.Properties["detail"]
		if d == nil || d.Value == nil || d.Value.Properties["code"] == nil {
			continue
		}
		for _, v := range d.Value.Properties["code"].Value.Enum {
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// TestAnswersClosed: every object schema an answer can contain says
// additionalProperties: false (an undocumented field then fails the
// validating tests), unless it is marked free-form (JSON Schemas, tool
// input and output, diagnostics).
func TestAnswersClosed(t *testing.T) {
	doc := load(t, api.YAML())
	seen := map[*openapi3.Schema]bool{}
	var open []string
	// narrowing is an allOf part after the first: it narrows the closed
	// schema before it (an error's code enum, an event's payload), so its
	// own inline objects need not be closed; what it refers to must.
	var walk func(where string, s *openapi3.SchemaRef, narrowing bool)
	walk = func(where string, s *openapi3.SchemaRef, narrowing bool) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		v := s.Value
		seen[v] = true
		if s.Ref != "" {
			where, narrowing = s.Ref, false
		}
		if v.Extensions["x-agenthost-free-form"] == true {
			return
		}
		composed := len(v.AllOf)+len(v.OneOf)+len(v.AnyOf) > 0
		if !composed && !narrowing && (v.Type.Is("object") || len(v.Properties) > 0) {
			closed := v.AdditionalProperties.Has != nil && !*v.AdditionalProperties.Has
			if !closed && v.AdditionalProperties.Schema == nil {
				open = append(open, where)
			}
		}
		if !composed && !narrowing && v.Type == nil && v.Items == nil && len(v.Properties) == 0 {
			open = append(open, where+" (no type: mark it x-agenthost-free-form)")
		}
		for name, p := range v.Properties {
			walk(where+"."+name, p, narrowing)
		}
		walk(where+"[]", v.Items, narrowing)
		walk(where+"{}", v.AdditionalProperties.Schema, narrowing)
		for i, x := range v.AllOf {
			walk(fmt.Sprintf("%s/allOf/%d", where, i), x, i > 0)
		}
		for i, x := range append(append([]*openapi3.SchemaRef{}, v.OneOf...), v.AnyOf...) {
			walk(fmt.Sprintf("%s/oneOf/%d", where, i), x, false)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, r := range op.Responses.Map() {
				for ct, mt := range r.Value.Content {
					if mt.Schema != nil && mt.Schema.Value.Format != "binary" && !strings.HasPrefix(ct, "text/") {
						walk(fmt.Sprintf("%s %s %s %s", method, path, status, ct), mt.Schema, false)
					}
				}
			}
		}
	}
	sort.Strings(open)
	assert.Empty(t, open, "object schemas of answers without additionalProperties: false")
}

// TestEventMap: x-agenthost-events maps every event type to its envelope
// schema, whose event enum is that type; the Event union's discriminator
// says the same.
func TestEventMap(t *testing.T) {
	doc := load(t, api.YAML())
	events, ok := doc.Extensions["x-agenthost-events"].(map[string]any)
	require.True(t, ok)
	// core's event types (core/event.go).
	want := []string{"run.accepted", "run.status", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
		"permission.requested", "permission.resolved", "run.paused", "run.resumed", "revision.created", "checkpoint.created",
		"run.completed", "run.failed", "run.cancelled"}
	var got []string
	for typ := range events {
		got = append(got, typ)
	}
	assert.ElementsMatch(t, want, got)
	union := doc.Components.Schemas["Event"].Value
	require.NotNil(t, union.Discriminator)
	assert.Equal(t, "event", union.Discriminator.PropertyName)
	assert.Len(t, union.OneOf, len(events))
	for typ, ref := range events {
		assert.Equal(t, ref, union.Discriminator.Mapping[typ].Ref, typ)
		name := strings.TrimPrefix(fmt.Sprint(ref), "#/components/schemas/")
		s := doc.Components.Schemas[name]
		require.NotNil(t, s, "%s: %v", typ, ref)
		require.Len(t, s.Value.AllOf, 2, typ)
		assert.Equal(t, "#/components/schemas/EventEnvelope", s.Value.AllOf[0].Ref)
		assert.Equal(t, []any{typ}, s.Value.AllOf[1].Value.Properties["event"].Value.Enum, typ)
		payload := s.Value.AllOf[1].Value.Properties["payload"]
		require.NotNil(t, payload, typ)
		assert.True(t, strings.HasSuffix(payload.Ref, "Payload"), "%s: payload is a named schema", typ)
	}
	// The stream and the listing point at the same envelopes.
	stream := doc.Paths.Find("/admin/apps/{app_id}/coding-agent/runs/{run_id}/stream").Get
	assert.NotNil(t, stream.Responses.Status(http.StatusOK).Value.Content.Get("text/event-stream"))
	list := doc.Paths.Find("/admin/apps/{app_id}/coding-agent/runs/{run_id}/events").Get
	items := list.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema.Value.Properties["items"]
	assert.Equal(t, "#/components/schemas/Event", items.Value.Items.Ref)
}
