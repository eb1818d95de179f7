package toolschema_test

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/sdk/toolschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateNamesEveryField(t *testing.T) {
	s, err := toolschema.Compile(json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],
"properties":{"path":{"type":"string","minLength":1},"edits":{"type":"array","items":{"type":"object","required":["line"],"properties":{"line":{"type":"integer","minimum":1}}}}}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"path": true, "edits": true}, s.Properties())
	assert.Empty(t, s.Validate(json.RawMessage(`{"path":"a","edits":[{"line":1}]}`)))
	got := s.Validate(json.RawMessage(`{"edits":[{"line":0},{}],"x":1}`))
	fields := map[string]bool{}
	for _, p := range got {
		fields[p.Field] = true
		assert.NotEmpty(t, p.Message)
	}
	assert.Equal(t, map[string]bool{"path": true, "x": true, "edits[0].line": true, "edits[1].line": true}, fields, "%v", got)
	bad := s.Validate(json.RawMessage(`{`))
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0].String(), "not valid JSON")
}

func TestCompileRefusesWhatItCannotCheck(t *testing.T) {
	for name, schema := range map[string]string{
		"not JSON":         `{"type":`,
		"remote reference": `{"$ref":"https://example.com/schema.json"}`,
		"file reference":   `{"$ref":"file:///etc/passwd"}`,
		"bad keyword":      `{"type":"objekt"}`,
	} {
		_, err := toolschema.Compile(json.RawMessage(schema))
		assert.Error(t, err, name)
	}
	_, err := toolschema.Compile(json.RawMessage(`{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`))
	assert.NoError(t, err, "a reference inside the schema is fine")
}
