package core_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validSeeds are JSON texts on both sides of every rule ValidJSON checks:
// values and literals, strings and their escapes, control characters,
// numbers, nesting and its limit, whitespace, trailing bytes.
var validSeeds = []string{
	``, ` `, `{}`, `[]`, `[ ]`, `{ }`, `null`, `true`, `false`, `nul`, `truex`, `tru`, `nulls`,
	`"x"`, `"`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\x"`, `"\u00e9"`, `"\u00G0"`, `"\u12"`, "\"tab\tinside\"", "\"\x7f\xff\xfe\"",
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `+1`, `-12.34e+56`, `1.5e3.2`, `0x1`,
	`{"a":1}`, `{"a" : 1 , "b":[1,2,{"c":null}]}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{"a":1,}`, `[1,]`, `[,1]`, `[1 2]`,
	`{"a":1]`, `[1}`, `[[[]]]`, `[[[]]`, `{"a":{"b":{}}}`, "\r\n\t {\"k\": [true, false, null]} \n", `1 2`, `{} x`, `[]]`,
	`"a" "b"`, `{"a":"b","c":"d"}`, "{\"\u2028\":\"\u2029\"}",
}

// TestValidJSONIsJSONValid: ValidJSON and json.Valid agree on the seeds,
// and on nesting just under, at and over encoding/json's limit.
func TestValidJSONIsJSONValid(t *testing.T) {
	for _, s := range validSeeds {
		assert.Equal(t, json.Valid([]byte(s)), core.ValidJSON([]byte(s)), "%q", s)
	}
	for _, depth := range []int{9999, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			require.Equal(t, json.Valid(s), core.ValidJSON(s), "depth %d of %s", depth, open)
		}
	}
}

// FuzzValidJSON: ValidJSON and json.Valid agree on any bytes (go test runs
// the seeds; go test -fuzz explores).
func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := core.ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("ValidJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

// BenchmarkValidJSON: a 64 KiB tool output (a read file) checked by
// ValidJSON and by json.Valid.
func BenchmarkValidJSON(b *testing.B) {
	src, err := json.Marshal(map[string]any{"path": "src/app.ts", "size": 65536, "content": strings.Repeat("export const x = \"<a>\";\n", 64<<10/24)})
	require.NoError(b, err)
	for name, valid := range map[string]func([]byte) bool{"ValidJSON": core.ValidJSON, "json.Valid": json.Valid} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if !valid(src) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
