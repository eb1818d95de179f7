package core_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marshalledAsRaw is what json.Marshal writes for src as a json.RawMessage.
func marshalledAsRaw(t testing.TB, src []byte) string {
	b, err := json.Marshal(json.RawMessage(src))
	require.NoError(t, err)
	return string(b)
}

// compactSeeds are valid JSON documents with every case AppendCompactJSON
// must treat as encoding/json does: whitespace between tokens and inside
// strings, escapes (an escaped quote and backslash among them), HTML
// characters, U+2028/2029, other multi-byte text, nesting, and jsonb's
// spacing.
var compactSeeds = []string{
	`{}`, `[]`, `null`, `true`, ` 12.5e-3 `, `"x"`,
	"{ \"path\" : \"a b\\tc\" ,\n\t\"n\": [1, 2 ,3], \"o\": {\"k\": null}}",
	`{"q": "say \"hi\" \\ there", "b": "\\\\", "e": "\\\"<tag>\\\""}`,
	`{"html": "<script>a && b</script>", "amp": "&amp;"}`,
	"{\"ls\": \"line\u2028sep\u2029para\", \"emoji\": \"héllo ✓ \U0001F600\"}",
	"[ \"\u2027\u202a\", \"\\u2028\" ]",
	"{\r\n  \"deep\": [[[{\"a\": [ ]}]]],\r\n  \"s\": \"  spaced  \"\r\n}",
	`{"a": 1, "b": [true, false], "c": {"d": "e"}}`,
}

// TestAppendCompactJSONIsJSONMarshal: for valid JSON, AppendCompactJSON
// writes exactly what json.Marshal writes for a json.RawMessage.
func TestAppendCompactJSONIsJSONMarshal(t *testing.T) {
	for _, src := range compactSeeds {
		require.True(t, json.Valid([]byte(src)), src)
		got := core.AppendCompactJSON([]byte("prefix:"), []byte(src))
		assert.Equal(t, marshalledAsRaw(t, []byte(src)), string(got[len("prefix:"):]), src)
	}
}

// FuzzAppendCompactJSON: the same, for any valid JSON the fuzzer finds
// (go test runs the seeds; go test -fuzz explores).
func FuzzAppendCompactJSON(f *testing.F) {
	for _, s := range compactSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if !json.Valid(src) {
			return
		}
		if got, want := string(core.AppendCompactJSON(nil, src)), marshalledAsRaw(t, src); got != want {
			t.Fatalf("AppendCompactJSON(%q) = %q, json.Marshal = %q", src, got, want)
		}
	})
}

// FuzzAppendJSONString: AppendJSONString writes a string as json.Marshal
// does, whatever its bytes (invalid UTF-8 included).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "run_01J", "tool.started", `a"b\c`, "<&>", "tab\there", "é✓\u2028", "\xff\xfe", "\x7f\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		if got := core.AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendJSONString(%q) = %q, json.Marshal = %q", s, got, want)
		}
	})
}

// FuzzEnvelopeAppendJSON: an envelope encodes as json.Marshal encodes it,
// for any valid payload and diagnostics, any strings and times.
func FuzzEnvelopeAppendJSON(f *testing.F) {
	f.Add("tool.started", "run_1", "app_<1>", int64(7), int64(1764300000123456789), []byte(`{"tool": "t", "input": {"path": "a"}}`), []byte(nil))
	f.Add("run.failed", "r", "a", int64(-1), int64(0), []byte(nil), []byte(`{"problems": [1, 2]}`))
	f.Add("x", "é", "\u2028", int64(1<<62), int64(-62135596800000000), []byte(`"s"`), []byte(`null`))
	f.Fuzz(func(t *testing.T, event, runID, appID string, seq, unixNano int64, payload, diagnostics []byte) {
		if payload != nil && !json.Valid(payload) || len(diagnostics) > 0 && !json.Valid(diagnostics) {
			return
		}
		e := core.Envelope{Event: core.EventType(event), RunID: runID, AppID: appID, Seq: seq, TS: time.Unix(0, unixNano).UTC(),
			Payload: payload, Diagnostics: diagnostics}
		want, wantErr := json.Marshal(e)
		got, err := e.AppendJSON(nil)
		if wantErr != nil {
			require.Error(t, err, "json.Marshal failed: %v", wantErr)
			return
		}
		require.NoError(t, err)
		if string(got) != string(want) {
			t.Fatalf("AppendJSON = %q, json.Marshal = %q", got, want)
		}
	})
}

// BenchmarkEnvelopeJSON: one streamed event encoded, a small one (an
// assistant delta) and one carrying a 64 KiB tool input, by AppendJSON and
// by json.Marshal.
func BenchmarkEnvelopeJSON(b *testing.B) {
	big, err := json.Marshal(map[string]any{"tool": "coding_agent_apply_patch", "tool_call_id": "call_1",
		"input": map[string]string{"path": "src/app.ts", "patch": strings.Repeat("+a <line> of code\n", 64<<10/18)}})
	require.NoError(b, err)
	for _, tc := range []struct {
		name    string
		payload []byte
	}{{"delta", []byte(`{"text":"Hello, world"}`)}, {"tool_input_64KiB", big}} {
		e := core.Envelope{Event: core.EventAssistantDelta, RunID: "run_01JABCDEFGHJKMNPQRSTVWXYZ0", AppID: "app_01JABCDEFGHJKMNPQRSTVWXYZ0", Seq: 1234,
			TS: time.Now().UTC(), Payload: tc.payload}
		b.Run(tc.name+"/AppendJSON", func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf, _ = e.AppendJSON(buf[:0])
			}
		})
		b.Run(tc.name+"/json.Marshal", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
