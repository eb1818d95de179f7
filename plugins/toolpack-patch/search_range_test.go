package patch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadFileRange(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 50; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	ws, _ := realWorkspace(t, map[string]string{"a.txt": b.String(), "crlf.txt": "a\r\nb\r\nc", "bin.dat": "x\x00y"})
	var out readFileRangeOutput
	res := callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt","start_line":10,"end_line":12,"context_lines":2}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, "line 8\nline 9\nline 10\nline 11\nline 12\nline 13\nline 14\n", out.Content)
	assert.Equal(t, []int{8, 14, 10, 12, 50}, []int{out.StartLine, out.EndLine, out.RequestedStart, out.RequestedEnd, out.TotalLines})
	assert.Equal(t, sha(b.String()), out.SHA256)
	assert.False(t, out.Truncated)

	res = callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt","start_line":49,"context_lines":5,"numbered":true}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, "44| line 44\n45| line 45\n46| line 46\n47| line 47\n48| line 48\n49| line 49\n50| line 50\n", out.Content, "clamped to the file")

	// A budget that holds 1024 bytes of 8-byte lines cuts at a whole line.
	res = callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt","start_line":1,"end_line":50,"max_bytes":1024}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.False(t, out.Truncated, "50 short lines fit in 1 KiB")
	res = callOn(t, ws, "coding_agent_read_file_range", `{"path":"crlf.txt","start_line":2,"end_line":3}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, "b\r\nc", out.Content, "line endings kept, last line without one")

	requireFailure(t, callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt","start_line":51}`, nil), CodeInputInvalid, "start_line")
	requireFailure(t, callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt","start_line":5,"end_line":4}`, nil), CodeInputInvalid, "end_line")
	requireFailure(t, callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt"}`, nil), CodeInputInvalid, "start_line")
	requireFailure(t, callOn(t, ws, "coding_agent_read_file_range", `{"path":"bin.dat","start_line":1}`, nil), CodePolicyViolation, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_read_file_range", `{"path":"a.txt","start_line":1,"max_bytes":10}`, nil), CodeInputInvalid, "max_bytes")
}

func TestReadFileRangeTruncates(t *testing.T) {
	long := strings.Repeat(strings.Repeat("y", 99)+"\n", 30) // 3,000 bytes
	ws, _ := realWorkspace(t, map[string]string{"b.txt": long})
	var out readFileRangeOutput
	res := callOn(t, ws, "coding_agent_read_file_range", `{"path":"b.txt","start_line":1,"end_line":30,"max_bytes":1024}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.True(t, out.Truncated)
	assert.Equal(t, 10, out.EndLine, "ten whole 100-byte lines fit in 1 KiB")
	assert.Len(t, out.Content, 1000)
}

func TestSearch(t *testing.T) {
	ws, _ := realWorkspace(t, map[string]string{
		"src/App.tsx":             "import { LoginButton } from './Login'\nexport function App() {\n  return <LoginButton />\n}\n",
		"src/Login.tsx":           "export function LoginButton() {\r\n  const handleLogin = () => {}\r\n  return <button onClick={handleLogin}>Log in</button>\r\n}\r\n",
		"src/util.ts":             "export const login = 1\n",
		"README.md":               "Login here\n",
		"node_modules/x/Login.js": "LoginButton everywhere\n",
		".git/HEAD":               "LoginButton\n",
		"img.png":                 "LoginButton\x00\x01",
	})
	var out searchOutput
	res := callOn(t, ws, "coding_agent_search", `{"query":"loginbutton"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, []searchMatch{
		{Path: "src/App.tsx", Line: 1, Column: 10, Text: "import { LoginButton } from './Login'"},
		{Path: "src/App.tsx", Line: 3, Column: 11, Text: "  return <LoginButton />"},
		{Path: "src/Login.tsx", Line: 1, Column: 17, Text: "export function LoginButton() {"},
	}, out.Matches, "case ignored, blocked folders and binary files left out, CR dropped")
	assert.Equal(t, 1, out.FilesSkipped, "the binary file")
	assert.False(t, out.Truncated)

	res = callOn(t, ws, "coding_agent_search", `{"query":"LoginButton","case_sensitive":true,"glob":"*.{ts,tsx}","path":"src","max_results":2}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Len(t, out.Matches, 2)
	assert.True(t, out.Truncated)

	res = callOn(t, ws, "coding_agent_search", `{"query":"handle\\w+\\b","regex":true,"glob":"*.tsx"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	require.Len(t, out.Matches, 2)
	assert.Equal(t, 9, out.Matches[0].Column)

	res = callOn(t, ws, "coding_agent_search", `{"query":"(?"}`, &out)
	require.True(t, res.OK, "a literal query is never a broken regexp: %+v", res.Error)
	assert.Empty(t, out.Matches)

	requireFailure(t, callOn(t, ws, "coding_agent_search", `{"query":"(?","regex":true}`, nil), CodeInputInvalid, "query")
	requireFailure(t, callOn(t, ws, "coding_agent_search", `{"query":"x","path":"../"}`, nil), CodePolicyViolation, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_search", `{"query":"x","path":"node_modules"}`, nil), CodePolicyViolation, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_search", `{"query":"x","glob":"src/*.ts"}`, nil), CodeInputInvalid, "glob")
	requireFailure(t, callOn(t, ws, "coding_agent_search", `{"query":"x","glob":"*.{ts"}`, nil), CodeInputInvalid, "glob")
	requireFailure(t, callOn(t, ws, "coding_agent_search", `{"query":"x","path":"missing"}`, nil), CodeFileNotFound, "path")
}

// TestTextPolicyOnReads: binary and oversized files are refused by every
// reading tool with the policy code, not returned as garbage.
func TestTextPolicyOnReads(t *testing.T) {
	big := strings.Repeat("x", MaxTextFileBytes+1)
	ws, _ := realWorkspace(t, map[string]string{"bin.dat": "ab\x00cd", "big.txt": big})
	for _, tc := range []struct{ tool, input string }{
		{"coding_agent_read_file", `{"path":"bin.dat"}`},
		{"coding_agent_read_file", `{"path":"big.txt"}`},
		{"coding_agent_read_file_range", `{"path":"bin.dat","start_line":1}`},
		{"coding_agent_read_file_range", `{"path":"big.txt","start_line":1}`},
	} {
		requireFailure(t, callOn(t, ws, tc.tool, tc.input, nil), CodePolicyViolation, "path")
	}
}
