package mock

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name     string
		prompt   string
		isScript bool
		ops      []op
	}{
		{"prose is not a script", "make the header blue", false, nil},
		{"empty prompt", "", false, nil},
		{"comment before prose", "# hi\nmake it blue", false, nil},
		{"say keeps inner and trailing spaces", "say a  b ", true, []op{{line: 1, name: "say", text: "a  b "}}},
		{"say without text", "say", true, []op{{line: 1, name: "say"}}},
		{"indented say", "  say hi", true, []op{{line: 1, name: "say", text: "hi"}}},
		{"crlf line ends", "say hi\r\ncrash\r\n", true, []op{{line: 1, name: "say", text: "hi"}, {line: 2, name: "crash"}}},
		{"line numbers count blanks and comments", "\n# c\nsay x\n\ncheckpoint", true,
			[]op{{line: 3, name: "say", text: "x"}, {line: 5, name: "checkpoint"}}},
		{"deltas", "deltas 3", true, []op{{line: 1, name: "deltas", n: 3}}},
		{"tool with input", `tool read {"path": "a b"}`, true,
			[]op{{line: 1, name: "tool", tool: "read", json: json.RawMessage(`{"path": "a b"}`)}}},
		{"tool without input", "tool ls", true, []op{{line: 1, name: "tool", tool: "ls", json: json.RawMessage(`{}`)}}},
		{"tools", "tools 5 ls {}", true, []op{{line: 1, name: "tools", n: 5, tool: "ls", json: json.RawMessage(`{}`)}}},
		{"sleep and hang", "sleep 2s\nhang 10ms", true,
			[]op{{line: 1, name: "sleep", dur: 2 * time.Second}, {line: 2, name: "hang", dur: 10 * time.Millisecond}}},
		{"fail", "fail MY_CODE it broke badly", true, []op{{line: 1, name: "fail", code: "MY_CODE", text: "it broke badly"}}},
		{"fail without message", "fail MY_CODE", true, []op{{line: 1, name: "fail", code: "MY_CODE"}}},
		{"ask", "ask deploy Ship it?", true, []op{{line: 1, name: "ask", code: "deploy", text: "Ship it?"}}},
		{"status", "status building step 2", true, []op{{line: 1, name: "status", code: "building", text: "step 2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops, isScript, err := parse(tc.prompt)
			require.NoError(t, err)
			assert.Equal(t, tc.isScript, isScript)
			assert.Equal(t, tc.ops, ops)
		})
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"unknown command":    "say a\nfrobnicate",
		"negative count":     "say a\ndeltas -1",
		"count not a number": "say a\ntools many x {}",
		"tool without name":  "say a\ntool",
		"tool bad json":      "say a\ntool x {nope",
		"bad duration":       "say a\nsleep soon",
		"fail without code":  "say a\nfail",
		"ask without action": "say a\nask",
	}
	for name, prompt := range cases {
		t.Run(name, func(t *testing.T) {
			ops, isScript, err := parse(prompt)
			require.Error(t, err)
			assert.True(t, isScript)
			assert.Nil(t, ops)
			assert.Contains(t, err.Error(), "line 2")
		})
	}
}

func TestWordsConcatenateBack(t *testing.T) {
	for text, want := range map[string][]string{
		"hello world":  {"hello ", "world"},
		"a  b":         {"a  ", "b"},
		" lead":        {" ", "lead"},
		"trail ":       {"trail "},
		"":             nil,
		"one":          {"one"},
		"tab\tsplit x": {"tab\tsplit ", "x"},
	} {
		assert.Equal(t, want, words(text), "%q", text)
	}
}
