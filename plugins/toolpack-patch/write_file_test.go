package patch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const writeTool = "coding_agent_write_file"

func TestWriteFile(t *testing.T) {
	atLimit := strings.Repeat("x", MaxWriteBytes)
	cases := []struct {
		name    string
		input   string
		path    string // where the content lands
		content string
		created bool
		code    string
		field   string
	}{
		{name: "create", input: `{"path":"src/new.ts","content":"x\n"}`, path: "src/new.ts", content: "x\n", created: true},
		{name: "replace", input: `{"path":"src/main.ts","content":"replaced\n"}`, path: "src/main.ts", content: "replaced\n"},
		{name: "empty content", input: `{"path":"empty.ts","content":""}`, path: "empty.ts", content: "", created: true},
		{name: "multibyte content counts bytes", input: `{"path":"é.txt","content":"héllo"}`, path: "é.txt", content: "héllo", created: true},
		{name: "path is cleaned", input: `{"path":"./a//b.txt","content":"b"}`, path: "a/b.txt", content: "b", created: true},
		{name: "exactly 1 MiB", input: `{"path":"big.txt","content":"` + atLimit + `"}`, path: "big.txt", content: atLimit, created: true},

		{name: "over 1 MiB", input: `{"path":"big.txt","content":"` + atLimit + `y"}`, code: CodePolicyViolation, field: "content"},
		{name: "content missing", input: `{"path":"a.txt"}`, code: CodeInputInvalid, field: "content"},
		{name: "content null", input: `{"path":"a.txt","content":null}`, code: CodeInputInvalid, field: "content"},
		{name: "content not a string", input: `{"path":"a.txt","content":["x"]}`, code: CodeInputInvalid, field: "content"},
		{name: "path missing", input: `{"content":"x"}`, code: CodeInputInvalid, field: "path"},
		{name: "onto a folder", input: `{"path":"src","content":"x"}`, code: CodePathIsDirectory, field: "path"},
		{name: "unknown field", input: `{"path":"a.txt","content":"x","append":true}`, code: CodeInputInvalid, field: "append"},
		{name: "malformed", input: `{"path":"a.txt","content":"x"`, code: CodeInputInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := newFake(app)
			res := call(t, ws, writeTool, tc.input)
			if tc.code != "" {
				requireFailure(t, res, tc.code, tc.field)
				assert.Equal(t, app, ws.files, "a refused write changes nothing")
				return
			}
			require.True(t, res.OK, "%+v", res.Error)
			var out writeFileOutput
			require.NoError(t, json.Unmarshal(res.Output, &out))
			assert.Equal(t, writeFileOutput{Path: tc.path, BytesWritten: len(tc.content), SHA256: sha(tc.content), Created: tc.created}, out)
			got, ok := ws.content(tc.path)
			require.True(t, ok, "nothing written at %s", tc.path)
			assert.Equal(t, tc.content, got)
		})
	}
}

func TestWriteKeepsTheModeOfAReplacedFile(t *testing.T) {
	ws := newFake(map[string]string{"run.sh": "#!/bin/sh\n"})
	ws.modes["run.sh"] = 0o755
	require.True(t, call(t, ws, writeTool, `{"path":"run.sh","content":"#!/bin/sh\necho hi\n"}`).OK)
	assert.Equal(t, uint32(0o755), ws.writeModes["run.sh"], "an executable stays executable")

	require.True(t, call(t, ws, writeTool, `{"path":"new.sh","content":"x"}`).OK)
	assert.Equal(t, uint32(0), ws.writeModes["new.sh"], "a new file gets the workspace's default mode")
}

func TestWriteFollowsNoSymlinkIntoBlockedFolder(t *testing.T) {
	ws := newFake(app)
	ws.StatF = func(context.Context, string) (workspace.FileInfo, error) {
		// The sandbox followed src/lib → .git/hooks.
		return workspace.FileInfo{Path: ".git/hooks/pre-commit", Size: 1}, nil
	}
	ws.WriteFileF = func(_ context.Context, p string, _ []byte, _ uint32) (workspace.FileInfo, error) {
		t.Errorf("WriteFile(%q) happened through a symlink into .git", p)
		return workspace.FileInfo{}, nil
	}
	requireFailure(t, call(t, ws, writeTool, `{"path":"src/lib/pre-commit","content":"rm -rf /"}`), CodePolicyViolation, "path")
}

// TestWriteCreatedFollowsStat: created is what Stat saw; Stat errors other
// than "not found" stop the write.
func TestWriteCreatedFollowsStat(t *testing.T) {
	ws := newFake(nil)
	ws.StatF = func(context.Context, string) (workspace.FileInfo, error) {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodePathDenied, "a", "symlink leads out")
	}
	requireFailure(t, call(t, ws, writeTool, `{"path":"a","content":"x"}`), CodePolicyViolation, "path")
	_, written := ws.content("a")
	assert.False(t, written)
}
