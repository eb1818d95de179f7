package patch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/toolpacktest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var app = map[string]string{
	"src/main.ts": "one\ntwo\nthree\nfour\n",
	"README.md":   "# hi",
}

func TestConformance(t *testing.T) {
	toolpacktest.Run(t, func(t *testing.T, ws workspace.Resolver) *toolpack.Client {
		return plugintest.Toolpack(t, New(), nil, ws)
	}, []toolpacktest.Case{
		{Name: "read range", Tool: "coding_agent_read_file", Files: app, Input: json.RawMessage(`{"path":"src/main.ts","start_line":2,"end_line":3}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out readFileOutput
				require.NoError(t, json.Unmarshal(res.Output, &out))
				assert.Equal(t, "two\nthree\n", out.Content)
				assert.Equal(t, 4, out.TotalLines)
			}},
		{Name: "read missing", Tool: "coding_agent_read_file", Files: app, Input: json.RawMessage(`{"path":"nope.ts"}`), WantCode: CodeFileNotFound},
		{Name: "read escape", Tool: "coding_agent_read_file", Files: app, Input: json.RawMessage(`{"path":"../secret"}`), WantCode: CodePolicyViolation},
		{Name: "write new", Tool: "coding_agent_write_file", Files: app, Input: json.RawMessage(`{"path":"src/new.ts","content":"x"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, ws workspace.Workspace) {
				assert.Equal(t, "x", toolpacktest.Files(ws)["src/new.ts"])
				var out writeFileOutput
				require.NoError(t, json.Unmarshal(res.Output, &out))
				assert.True(t, out.Created)
			}},
		{Name: "write blocked", Tool: "coding_agent_write_file", Files: app, Input: json.RawMessage(`{"path":"node_modules/x.js","content":"x"}`), WantCode: CodePolicyViolation},
	})
}

// call runs one tool in-process against an in-memory workspace.
func call(t *testing.T, files map[string]string, tool, input string) (plugin.ToolResult, workspace.Workspace) {
	t.Helper()
	ws := toolpacktest.NewMemoryWorkspace(files)
	res, err := New().Call(context.Background(), toolpack.Call{Tool: tool, Input: json.RawMessage(input)}, ws)
	require.NoError(t, err)
	return res, ws
}

func TestReadFile(t *testing.T) {
	cases := []struct {
		name, input, want string
		start, end, total int
		code, field       string
	}{
		{name: "whole", input: `{"path":"src/main.ts"}`, want: "one\ntwo\nthree\nfour\n", start: 1, end: 4, total: 4},
		{name: "from line", input: `{"path":"src/main.ts","start_line":3}`, want: "three\nfour\n", start: 3, end: 4, total: 4},
		{name: "end past the end", input: `{"path":"src/main.ts","start_line":4,"end_line":99}`, want: "four\n", start: 4, end: 4, total: 4},
		{name: "start past the end", input: `{"path":"src/main.ts","start_line":9}`, want: "", start: 9, end: 4, total: 4},
		{name: "no final newline", input: `{"path":"README.md"}`, want: "# hi", start: 1, end: 1, total: 1},
		{name: "clean path", input: `{"path":"./src//main.ts","end_line":1}`, want: "one\n", start: 1, end: 1, total: 4},
		{name: "inverted range", input: `{"path":"src/main.ts","start_line":3,"end_line":2}`, code: CodeInputInvalid, field: "start_line"},
		{name: "missing", input: `{"path":"x"}`, code: CodeFileNotFound, field: "path"},
		{name: "folder", input: `{"path":"src"}`, code: CodePathIsDirectory, field: "path"},
		{name: "wrong type", input: `{"path":7}`, code: CodeInputInvalid, field: "path"},
		{name: "unknown field", input: `{"path":"a","mode":"x"}`, code: CodeInputInvalid},
		{name: "not json", input: `{`, code: CodeInputInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := call(t, app, "coding_agent_read_file", tc.input)
			if tc.code != "" {
				require.False(t, res.OK)
				assert.Equal(t, tc.code, res.Error.Code, res.Error.Message)
				assert.Equal(t, tc.field, res.Error.Field)
				return
			}
			require.True(t, res.OK, "%+v", res.Error)
			var out readFileOutput
			require.NoError(t, json.Unmarshal(res.Output, &out))
			assert.Equal(t, tc.want, out.Content)
			assert.Equal(t, tc.start, out.StartLine)
			assert.Equal(t, tc.end, out.EndLine)
			assert.Equal(t, tc.total, out.TotalLines)
			assert.Len(t, out.SHA256, 64)
		})
	}
}

func TestReadBudgetCutsAtALine(t *testing.T) {
	line := strings.Repeat("a", 99) + "\n"
	big := strings.Repeat(line, 5000) // 500 KB
	res, _ := call(t, map[string]string{"big.txt": big}, "coding_agent_read_file", `{"path":"big.txt"}`)
	require.True(t, res.OK)
	var out readFileOutput
	require.NoError(t, json.Unmarshal(res.Output, &out))
	assert.True(t, out.Truncated)
	assert.LessOrEqual(t, len(out.Content), DefaultReadBudget)
	assert.True(t, strings.HasSuffix(out.Content, "\n"), "cut at a line boundary")
	assert.Equal(t, len(out.Content)/100, out.EndLine, "end_line says where to continue")
	assert.Equal(t, 5000, out.TotalLines)
}

func TestWriteFile(t *testing.T) {
	res, ws := call(t, app, "coding_agent_write_file", `{"path":"src/main.ts","content":"replaced\n"}`)
	require.True(t, res.OK, "%+v", res.Error)
	var out writeFileOutput
	require.NoError(t, json.Unmarshal(res.Output, &out))
	assert.False(t, out.Created)
	assert.Equal(t, 9, out.BytesWritten)
	assert.Equal(t, "replaced\n", toolpacktest.Files(ws)["src/main.ts"])

	res, ws = call(t, app, "coding_agent_write_file", `{"path":"empty.txt","content":""}`)
	require.True(t, res.OK, "an empty file is a valid file")
	assert.Equal(t, "", toolpacktest.Files(ws)["empty.txt"])

	res, _ = call(t, app, "coding_agent_write_file", `{"path":"a.txt"}`)
	assert.Equal(t, CodeInputInvalid, res.Error.Code)
	assert.Equal(t, "content", res.Error.Field)

	huge, _ := json.Marshal(map[string]string{"path": "a.txt", "content": strings.Repeat("x", MaxWriteBytes+1)})
	res, _ = call(t, app, "coding_agent_write_file", string(huge))
	assert.Equal(t, CodePolicyViolation, res.Error.Code)
	assert.Equal(t, "content", res.Error.Field)
}

func TestPathPolicy(t *testing.T) {
	refused := []string{"", " ", "/etc/passwd", "../x", "a/../../x", "a/..", "a\\b", "x\x00y", ".",
		".git/config", "node_modules/a.js", "src/node_modules/a.js", "dist/app.js", ".vite/x", ".cache/y", ".turbo/z"}
	for _, p := range refused {
		for _, tool := range []string{"coding_agent_read_file", "coding_agent_write_file"} {
			input, _ := json.Marshal(map[string]string{"path": p, "content": "x"})
			if tool == "coding_agent_read_file" {
				input, _ = json.Marshal(map[string]string{"path": p})
			}
			res, _ := call(t, app, tool, string(input))
			require.False(t, res.OK, "%s accepted %q", tool, p)
			assert.Equal(t, CodePolicyViolation, res.Error.Code, "%s %q", tool, p)
			assert.Equal(t, "path", res.Error.Field)
		}
	}
	for _, p := range []string{"src/distance.ts", "my.git.txt", "a/./b.ts", "dist.config.js"} {
		_, why := checkPath(p)
		assert.Empty(t, why, "%q is an ordinary path", p)
	}
}

func TestUnknownTool(t *testing.T) {
	res, _ := call(t, app, "coding_agent_nope", `{}`)
	assert.Equal(t, toolpack.CodeUnknownTool, res.Error.Code)
}

func FuzzPathPolicy(f *testing.F) {
	for _, s := range []string{"src/a.ts", "../x", "a/../../b", "/abs", ".git/x", "a/node_modules/b", "a\\b", "..", "a/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, why := checkPath(p)
		if why != "" {
			return
		}
		if strings.HasPrefix(clean, "/") || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(clean, "\x00\\") {
			t.Fatalf("accepted %q as %q", p, clean)
		}
		for _, seg := range strings.Split(clean, "/") {
			for _, b := range BlockedFolders {
				if seg == b {
					t.Fatalf("accepted %q inside blocked folder %s", p, b)
				}
			}
		}
	})
}
