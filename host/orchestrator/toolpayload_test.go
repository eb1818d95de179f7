package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marshalledAsRaw is what json.Marshal writes for src as a json.RawMessage.
func marshalledAsRaw(t testing.TB, src []byte) string {
	b, err := json.Marshal(json.RawMessage(src))
	require.NoError(t, err)
	return string(b)
}

// compactSeeds are valid JSON documents with every case appendCompactValid
// must treat as encoding/json does: whitespace between tokens and inside
// strings, escapes (an escaped quote and backslash among them), HTML
// characters, U+2028/2029, other multi-byte text, nesting.
var compactSeeds = []string{
	`{}`, `[]`, `null`, `true`, ` 12.5e-3 `, `"x"`,
	"{ \"path\" : \"a b\\tc\" ,\n\t\"n\": [1, 2 ,3], \"o\": {\"k\": null}}",
	`{"q": "say \"hi\" \\ there", "b": "\\\\", "e": "\\\"<tag>\\\""}`,
	`{"html": "<script>a && b</script>", "amp": "&amp;"}`,
	"{\"ls\": \"line\u2028sep\u2029para\", \"emoji\": \"héllo ✓ \U0001F600\"}",
	"[ \"\u2027\u202a\", \"\\u2028\" ]",
	"{\r\n  \"deep\": [[[{\"a\": [ ]}]]],\r\n  \"s\": \"  spaced  \"\r\n}",
}

// TestAppendCompactValidIsJSONMarshal: for valid JSON, appendCompactValid
// writes exactly what json.Marshal writes for a json.RawMessage.
func TestAppendCompactValidIsJSONMarshal(t *testing.T) {
	for _, src := range compactSeeds {
		require.True(t, json.Valid([]byte(src)), src)
		assert.Equal(t, marshalledAsRaw(t, []byte(src)), string(appendCompactValid([]byte("prefix:"), []byte(src))[len("prefix:"):]), src)
	}
}

// FuzzAppendCompactValid: the same, for any valid JSON the fuzzer finds
// (go test runs the seeds; go test -fuzz explores).
func FuzzAppendCompactValid(f *testing.F) {
	for _, s := range compactSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		if got, want := string(appendCompactValid(nil, src)), marshalledAsRaw(t, src); got != want {
			t.Fatalf("appendCompactValid(%q) = %q, json.Marshal = %q", src, got, want)
		}
	})
}

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

// BenchmarkCompactRaw: a 64 KiB tool input made ready for its event, by
// appendCompactValid and by json.Marshal of a json.RawMessage.
func BenchmarkCompactRaw(b *testing.B) {
	src, err := json.Marshal(map[string]string{"path": "src/app.ts", "patch": strings.Repeat("+a <line> of code\n", 64<<10/18)})
	require.NoError(b, err)
	b.Run("appendCompactValid", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		buf := make([]byte, 0, 2*len(src))
		for b.Loop() {
			buf = appendCompactValid(buf[:0], src)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if _, err := json.Marshal(json.RawMessage(src)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
