package opencode

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestZodArgs: the JSON Schema subset tools use becomes the zod shape
// OpenCode expects, bounds, enums, descriptions and optionality included;
// what zod cannot say here becomes z.unknown() (the host validates); a
// description cannot break out of its string.
func TestZodArgs(t *testing.T) {
	for name, tc := range map[string]struct{ schema, want string }{
		"none":  {``, `{}`},
		"empty": {`{"type":"object","properties":{}}`, `{}`},
		"contract tool_names": {`{"type":"object","additionalProperties":false,"properties":{
			"tool_names":{"type":"array","minItems":1,"maxItems":50,"uniqueItems":true,"items":{"type":"string","minLength":1},"description":"Only these tools"}}}`,
			`{"tool_names": z.array(z.string().min(1)).min(1).max(50).describe("Only these tools").optional()}`},
		"integer bounds, required": {`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1,"maximum":2.5}}}`,
			`{"n": z.number().int().min(1).max(2.5)}`},
		"enum, boolean, nested, unknown": {`{"type":"object","properties":{
			"mode":{"enum":["a","b"]},"on":{"type":"boolean"},"o":{"type":"object","required":["x"],"properties":{"x":{"type":"number"}}},
			"free":{"type":"object"},"any":{"oneOf":[{"type":"string"},{"type":"number"}]}}}`,
			`{"any": z.unknown().optional(), "free": z.record(z.string(), z.unknown()).optional(), "mode": z.enum(["a", "b"]).optional(), "o": z.object({"x": z.number()}).optional(), "on": z.boolean().optional()}`},
		"hostile description": {`{"type":"object","properties":{"q":{"type":"string","description":"\"); process.exit(1); //\u2028</script>"}}}`,
			`{"q": z.string().describe("\"); process.exit(1); //\u2028\u003c/script\u003e").optional()}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := zodArgs(json.RawMessage(tc.schema))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := zodArgs(json.RawMessage(`{not json`))
	assert.Error(t, err)
}
