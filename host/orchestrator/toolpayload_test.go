package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolPayloadsAreTheMapsTheyReplaced: tool.* payloads are built by
// hand now, byte for byte what json.Marshal of the maps they replaced
// gave, so stored and streamed events keep their shape.
func TestToolPayloadsAreTheMapsTheyReplaced(t *testing.T) {
	input := json.RawMessage("{\"path\": \"a<b>.txt\",\n \"content\": \"x & y\\n\"}")
	output := json.RawMessage(`{"ok": true, "text": "` + strings.Repeat("line\\n", 3) + `"}`)
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, marshal(map[string]any{"tool_call_id": "call_<1>", "tool": "coding_agent_write_file", "input": input}),
		string(toolStartedPayload("call_<1>", "coding_agent_write_file", input)))
	assert.Equal(t, marshal(map[string]any{"tool_call_id": "c", "tool": "t&t", "output": output}),
		string(toolCompletedPayload("c", "t&t", output)))
	assert.Equal(t, marshal(map[string]any{"tool_call_id": "c", "tool": "t", "error_code": "TOOL_TIMEOUT", "error_message": "took <too> long", "field": "path"}),
		marshal(toolFailed{ErrorCode: "TOOL_TIMEOUT", ErrorMessage: "took <too> long", Field: "path", Tool: "t", CallID: "c"}))
}
