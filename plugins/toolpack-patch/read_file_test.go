package patch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const readTool = "coding_agent_read_file"

var app = map[string]string{
	"src/main.ts": "one\ntwo\nthree\nfour\n",
	"README.md":   "# hi",
	"empty.txt":   "",
	"crlf.txt":    "a\r\nb\r\n",
}

func readOutput(t *testing.T, res plugin.ToolResult) readFileOutput {
	t.Helper()
	require.True(t, res.OK, "%+v", res.Error)
	var out readFileOutput
	require.NoError(t, json.Unmarshal(res.Output, &out))
	return out
}

func TestReadFile(t *testing.T) {
	cases := []struct {
		name, input       string
		path, want        string
		start, end, total int
		code, field       string
	}{
		{name: "whole", input: `{"path":"src/main.ts"}`, path: "src/main.ts", want: "one\ntwo\nthree\nfour\n", start: 1, end: 4, total: 4},
		{name: "from a line", input: `{"path":"src/main.ts","start_line":3}`, want: "three\nfour\n", start: 3, end: 4, total: 4},
		{name: "to a line", input: `{"path":"src/main.ts","end_line":2}`, want: "one\ntwo\n", start: 1, end: 2, total: 4},
		{name: "range", input: `{"path":"src/main.ts","start_line":2,"end_line":3}`, want: "two\nthree\n", start: 2, end: 3, total: 4},
		{name: "one line", input: `{"path":"src/main.ts","start_line":2,"end_line":2}`, want: "two\n", start: 2, end: 2, total: 4},
		{name: "end past the end is clamped", input: `{"path":"src/main.ts","start_line":4,"end_line":99}`, want: "four\n", start: 4, end: 4, total: 4},
		{name: "integral float line", input: `{"path":"src/main.ts","start_line":2.0,"end_line":2}`, want: "two\n", start: 2, end: 2, total: 4},
		{name: "no final newline", input: `{"path":"README.md"}`, want: "# hi", start: 1, end: 1, total: 1},
		{name: "empty file", input: `{"path":"empty.txt"}`, want: "", start: 1, end: 0, total: 0},
		{name: "crlf kept", input: `{"path":"crlf.txt","start_line":2}`, want: "b\r\n", start: 2, end: 2, total: 2},
		{name: "path is cleaned", input: `{"path":"./src//main.ts","end_line":1}`, path: "src/main.ts", want: "one\n", start: 1, end: 1, total: 4},
		{name: "whitespace around input", input: " \n{\"path\":\"README.md\"}\n ", want: "# hi", start: 1, end: 1, total: 1},

		{name: "start just past the end", input: `{"path":"src/main.ts","start_line":5}`, code: CodeInputInvalid, field: "start_line"},
		{name: "start far past the end", input: `{"path":"README.md","start_line":9,"end_line":12}`, code: CodeInputInvalid, field: "start_line"},
		{name: "inverted range", input: `{"path":"src/main.ts","start_line":3,"end_line":2}`, code: CodeInputInvalid, field: "end_line"},
		{name: "zero start", input: `{"path":"src/main.ts","start_line":0}`, code: CodeInputInvalid, field: "start_line"},
		{name: "negative end", input: `{"path":"src/main.ts","end_line":-1}`, code: CodeInputInvalid, field: "end_line"},
		{name: "fractional line", input: `{"path":"src/main.ts","start_line":1.5}`, code: CodeInputInvalid, field: "start_line"},
		{name: "huge line", input: `{"path":"src/main.ts","end_line":1e300}`, code: CodeInputInvalid, field: "end_line"},
		{name: "line as string", input: `{"path":"src/main.ts","start_line":"2"}`, code: CodeInputInvalid, field: "start_line"},
		{name: "line as null", input: `{"path":"src/main.ts","end_line":null}`, code: CodeInputInvalid, field: "end_line"},
		{name: "missing file", input: `{"path":"nope.ts"}`, code: CodeFileNotFound, field: "path"},
		{name: "folder", input: `{"path":"src"}`, code: CodePathIsDirectory, field: "path"},
		{name: "path of wrong type", input: `{"path":7}`, code: CodeInputInvalid, field: "path"},
		{name: "path missing", input: `{}`, code: CodeInputInvalid, field: "path"},
		{name: "path empty", input: `{"path":""}`, code: CodeInputInvalid, field: "path"},
		{name: "unknown field", input: `{"path":"README.md","mode":"x"}`, code: CodeInputInvalid, field: "mode"},
		{name: "key in other case", input: `{"Path":"README.md"}`, code: CodeInputInvalid, field: "Path"},
		{name: "key given twice", input: `{"path":"README.md","path":"../x"}`, code: CodeInputInvalid, field: "path"},
		{name: "not json", input: `{`, code: CodeInputInvalid},
		{name: "empty input", input: ``, code: CodeInputInvalid},
		{name: "data after the object", input: `{"path":"README.md"} {}`, code: CodeInputInvalid},
		{name: "null", input: `null`, code: CodeInputInvalid},
		{name: "array", input: `[{"path":"README.md"}]`, code: CodeInputInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, newFake(app), readTool, tc.input)
			if tc.code != "" {
				requireFailure(t, res, tc.code, tc.field)
				return
			}
			out := readOutput(t, res)
			assert.Equal(t, tc.want, out.Content)
			assert.Equal(t, tc.start, out.StartLine, "start_line")
			assert.Equal(t, tc.end, out.EndLine, "end_line")
			assert.Equal(t, tc.total, out.TotalLines, "total_lines")
			assert.False(t, out.Truncated)
			if tc.path != "" {
				assert.Equal(t, tc.path, out.Path)
			}
			whole := app[out.Path]
			assert.Equal(t, sha(whole), out.SHA256, "sha256 of the whole file")
			assert.Equal(t, len(whole), out.Size, "size of the whole file")
		})
	}
}

func TestReadBudget(t *testing.T) {
	line := strings.Repeat("a", 99) + "\n"
	big := strings.Repeat(line, 5000) // 500,000 bytes, about twice the default budget

	t.Run("cut at a line and continued from end_line+1", func(t *testing.T) {
		ws := newFake(map[string]string{"big.txt": big})
		var got strings.Builder
		start, calls := 1, 0
		for {
			calls++
			require.Less(t, calls, 10, "reading in budget-sized pieces does not end")
			out := readOutput(t, call(t, ws, readTool, jsonInput(t, map[string]any{"path": "big.txt", "start_line": start})))
			assert.LessOrEqual(t, len(out.Content), DefaultReadBudget)
			assert.Equal(t, 5000, out.TotalLines)
			assert.Equal(t, len(big), out.Size)
			assert.Equal(t, start, out.StartLine)
			assert.Equal(t, out.EndLine-out.StartLine+1, strings.Count(out.Content, "\n"), "end_line matches the content")
			got.WriteString(out.Content)
			if !out.Truncated {
				break
			}
			assert.True(t, strings.HasSuffix(out.Content, "\n"), "cut at a line boundary")
			start = out.EndLine + 1
		}
		assert.Equal(t, big, got.String(), "the pieces make the file")
		assert.Equal(t, 2, calls, "one truncated read, then the rest")
	})

	t.Run("content exactly the budget is whole", func(t *testing.T) {
		exact := strings.Repeat(strings.Repeat("b", 1023)+"\n", DefaultReadBudget/1024)
		out := readOutput(t, call(t, newFake(map[string]string{"f": exact}), readTool, `{"path":"f"}`))
		assert.False(t, out.Truncated)
		assert.Equal(t, exact, out.Content)
	})

	t.Run("a range within the budget is not truncated", func(t *testing.T) {
		out := readOutput(t, call(t, newFake(map[string]string{"big.txt": big}), readTool, `{"path":"big.txt","start_line":10,"end_line":19}`))
		assert.False(t, out.Truncated)
		assert.Equal(t, strings.Repeat(line, 10), out.Content)
	})

	t.Run("a line longer than the budget is cut between characters", func(t *testing.T) {
		long := "x" + strings.Repeat("é", DefaultReadBudget) // 2-byte runes, the budget falls inside one
		out := readOutput(t, call(t, newFake(map[string]string{"min.js": long + "\nnext\n"}), readTool, `{"path":"min.js"}`))
		assert.True(t, out.Truncated)
		assert.Equal(t, 1, out.EndLine)
		assert.True(t, utf8.ValidString(out.Content))
		assert.LessOrEqual(t, len(out.Content), DefaultReadBudget)
		assert.Greater(t, len(out.Content), DefaultReadBudget-utf8.UTFMax)
		assert.True(t, strings.HasPrefix(long, out.Content))
	})

	t.Run("configured budget", func(t *testing.T) {
		p := New()
		require.NoError(t, p.Configure(t.Context(), json.RawMessage(`{"read_budget_bytes":2048}`)))
		res, err := p.Call(t.Context(), toolpack.Call{Tool: readTool, Input: json.RawMessage(`{"path":"big.txt"}`)},
			newFake(map[string]string{"big.txt": big}))
		require.NoError(t, err)
		out := readOutput(t, res)
		assert.True(t, out.Truncated)
		assert.Equal(t, 20, out.EndLine, "20 lines of 100 bytes fit in 2 KiB")
		specs, err := p.Tools(t.Context())
		require.NoError(t, err)
		assert.Contains(t, specs[0].Description, "2 KiB", "the description states the budget in force")
	})
}

func TestReadFollowsNoSymlinkIntoBlockedFolder(t *testing.T) {
	ws := newFake(app)
	ws.ReadFileF = func(_ context.Context, p string, _ workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
		// The sandbox followed src/lib → node_modules/lib.
		return []byte("secret"), workspace.FileInfo{Path: "node_modules/lib/index.js", Size: 6}, nil
	}
	res := call(t, ws, readTool, `{"path":"src/lib/index.js"}`)
	requireFailure(t, res, CodePolicyViolation, "path")
	assert.NotContains(t, string(res.Output), "secret")
}
