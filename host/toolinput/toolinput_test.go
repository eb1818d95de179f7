package toolinput

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var readSpec = plugin.ToolSpec{Name: "read", InputSchema: json.RawMessage(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"properties": {
		"path": {"type": "string", "minLength": 1},
		"start_line": {"type": "integer", "minimum": 1},
		"edits": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}}
	},
	"required": ["path"],
	"additionalProperties": false
}`)}

var renameSpec = plugin.ToolSpec{Name: "rename", InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {"from_path": {"type": "string"}, "to_path": {"type": "string"}},
	"required": ["from_path", "to_path"], "additionalProperties": false
}`)}

func TestNormaliseRepairsWhatModelsSend(t *testing.T) {
	g := NewGuard()
	cases := []struct {
		name string
		spec plugin.ToolSpec
		in   string
		want string
		note string
	}{
		{"as sent", readSpec, `{"path":"a.ts"}`, `{"path":"a.ts"}`, ""},
		{"string of JSON", readSpec, `"{\"path\": \"a.ts\"}"`, `{"path":"a.ts"}`, "input sent as a JSON string: parsed"},
		{"nested under input", readSpec, `{"input":{"path":"a.ts"}}`, `{"path":"a.ts"}`, `arguments nested under "input": unwrapped`},
		{"nested under args as a string", readSpec, `{"args":"{\"path\":\"a.ts\"}"}`, `{"path":"a.ts"}`, `arguments nested under "args": unwrapped`},
		{"doubly nested", readSpec, `{"parameters":{"payload":{"path":"a.ts"}}}`, `{"path":"a.ts"}`, `arguments nested under "payload": unwrapped`},
		{"file_path alias", readSpec, `{"file_path":"a.ts"}`, `{"path":"a.ts"}`, "file_path → path"},
		{"filePath alias and camelCase", readSpec, `{"filePath":"a.ts","startLine":3}`, `{"path":"a.ts","start_line":3}`, "filePath → path"},
		{"from/to aliases", renameSpec, `{"fromPath":"a","toPath":"b"}`, `{"from_path":"a","to_path":"b"}`, "fromPath → from_path"},
		{"null input", renameSpec, `null`, `{}`, "no input: treated as {}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := g.compile(tc.spec)
			require.NoError(t, c.err)
			out, notes := Normalise(json.RawMessage(tc.in), c.props)
			assert.JSONEq(t, tc.want, string(out))
			if tc.note != "" {
				assert.Contains(t, notes, tc.note)
			} else {
				assert.Empty(t, notes)
			}
		})
	}
}

func TestNormaliseNeverOverwrites(t *testing.T) {
	c := NewGuard().compile(readSpec)
	// Both the canonical key and an alias: the canonical value stands and
	// validation refuses the stray alias.
	out, _ := Normalise(json.RawMessage(`{"path":"a.ts","file_path":"b.ts"}`), c.props)
	assert.JSONEq(t, `{"path":"a.ts","file_path":"b.ts"}`, string(out))
	// A wrapper key that is a real property is not unwrapped.
	spec := plugin.ToolSpec{Name: "w", InputSchema: json.RawMessage(`{"type":"object","properties":{"input":{"type":"object"}}}`)}
	c = NewGuard().compile(spec)
	out, notes := Normalise(json.RawMessage(`{"input":{"x":1}}`), c.props)
	assert.JSONEq(t, `{"input":{"x":1}}`, string(out))
	assert.Empty(t, notes)
}

func TestCheckRefusesWithFields(t *testing.T) {
	g := NewGuard()
	cases := []struct {
		name, in, field, msg string
	}{
		{"missing required", `{}`, "path", "path: is required"},
		{"unknown field", `{"path":"a","colour":"red"}`, "colour", "colour: is not a field of this tool"},
		{"wrong type", `{"path":7}`, "path", "path: got number, want string"},
		{"below minimum", `{"path":"a","start_line":0}`, "start_line", "start_line"},
		{"not an integer", `{"path":"a","start_line":1.5}`, "start_line", "start_line"},
		{"nested item", `{"path":"a","edits":[{"path":"x"},{}]}`, "edits[1].path", "edits[1].path: is required"},
		{"not an object", `[1,2]`, "", "want object"},
		{"string that is not JSON", `"read a.ts please"`, "", "want object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, te := g.Check(readSpec, json.RawMessage(tc.in))
			require.NotNil(t, te, "input %s must be refused", tc.in)
			assert.Nil(t, out)
			assert.Equal(t, CodeValidationFailed, te.Code)
			assert.Equal(t, tc.field, te.Field)
			assert.Contains(t, te.Message, tc.msg)
			var diag struct {
				Problems     []Problem `json:"problems"`
				ProblemCount int       `json:"problem_count"`
			}
			require.NoError(t, json.Unmarshal(te.Diagnostics, &diag))
			require.NotEmpty(t, diag.Problems)
			assert.Equal(t, tc.field, diag.Problems[0].Field)
		})
	}
}

func TestCheckReportsEveryMissingField(t *testing.T) {
	_, _, te := NewGuard().Check(renameSpec, json.RawMessage(`{}`))
	require.NotNil(t, te)
	assert.Contains(t, te.Message, "from_path: is required")
	assert.Contains(t, te.Message, "to_path: is required")
}

func TestCheckBoundsTheReport(t *testing.T) {
	in := `{"path":"a","edits":[`
	for i := range 30 {
		if i > 0 {
			in += ","
		}
		in += "{}"
	}
	in += "]}"
	_, _, te := NewGuard().Check(readSpec, json.RawMessage(in))
	require.NotNil(t, te)
	assert.Contains(t, te.Message, "(and 20 more)")
	var diag struct {
		Problems     []Problem `json:"problems"`
		ProblemCount int       `json:"problem_count"`
	}
	require.NoError(t, json.Unmarshal(te.Diagnostics, &diag))
	assert.Len(t, diag.Problems, maxReportedProblems)
	assert.Equal(t, 30, diag.ProblemCount)
}

func TestCheckPassesNormalisedInput(t *testing.T) {
	out, notes, te := NewGuard().Check(readSpec, json.RawMessage(`{"arguments":{"filePath":"src/a.ts","startLine":2}}`))
	require.Nil(t, te)
	assert.JSONEq(t, `{"path":"src/a.ts","start_line":2}`, string(out))
	assert.Len(t, notes, 3)
}

func TestSchemaProblems(t *testing.T) {
	g := NewGuard()
	// No schema: taken as sent.
	out, _, te := g.Check(plugin.ToolSpec{Name: "free"}, json.RawMessage(`{"anything":1}`))
	require.Nil(t, te)
	assert.JSONEq(t, `{"anything":1}`, string(out))
	// A schema that does not compile blames the tool, not the model.
	_, _, te = g.Check(plugin.ToolSpec{Name: "bad", InputSchema: json.RawMessage(`{"type": 12}`)}, json.RawMessage(`{}`))
	require.NotNil(t, te)
	assert.Equal(t, CodeSchemaInvalid, te.Code)
	// A $ref outside the schema is never fetched.
	_, _, te = g.Check(plugin.ToolSpec{Name: "remote", InputSchema: json.RawMessage(`{"$ref": "http://127.0.0.1:1/x.json"}`)}, json.RawMessage(`{}`))
	require.NotNil(t, te)
	assert.Equal(t, CodeSchemaInvalid, te.Code)
	assert.Contains(t, te.Message, "self-contained")
}

func TestCacheFollowsSchemaChanges(t *testing.T) {
	g := NewGuard()
	spec := plugin.ToolSpec{Name: "t", InputSchema: json.RawMessage(`{"type":"object","required":["a"]}`)}
	_, _, te := g.Check(spec, json.RawMessage(`{}`))
	require.NotNil(t, te)
	spec.InputSchema = json.RawMessage(`{"type":"object"}`)
	_, _, te = g.Check(spec, json.RawMessage(`{}`))
	assert.Nil(t, te, "a relaunched toolpack's new schema is used")
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a"}`, `"{\"path\":1}"`, `{"input":"{}"}`, `null`, `[`, `{"filePath":"x","edits":[{}]}`} {
		f.Add(s)
	}
	g := NewGuard()
	f.Fuzz(func(t *testing.T, in string) {
		out, _, te := g.Check(readSpec, json.RawMessage(in))
		if te == nil {
			// Whatever passes is a JSON object the schema accepts.
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("accepted %q as %q, which is not an object: %v", in, out, err)
			}
			if _, ok := m["path"].(string); !ok {
				t.Fatalf("accepted %q without a string path", in)
			}
		} else if te.Code != CodeValidationFailed {
			t.Fatalf("unexpected code %s", te.Code)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	g := NewGuard()
	in := json.RawMessage(`{"path":"src/components/App.tsx","start_line":10,"edits":[{"path":"a"},{"path":"b"}]}`)
	for b.Loop() {
		if _, _, te := g.Check(readSpec, in); te != nil {
			b.Fatal(te.Message)
		}
	}
}

func BenchmarkCheckNormalised(b *testing.B) {
	g := NewGuard()
	in := json.RawMessage(fmt.Sprintf(`{"arguments":%q}`, `{"filePath":"src/components/App.tsx","startLine":10}`))
	for b.Loop() {
		if _, _, te := g.Check(readSpec, in); te != nil {
			b.Fatal(te.Message)
		}
	}
}
