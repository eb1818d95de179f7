package patch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realWorkspace is a confined folder workspace that can run commands, like
// the local sandbox's, holding files.
func realWorkspace(t *testing.T, files map[string]string) (*dirfs.FS, string) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	groups := &dirfs.Groups{}
	t.Cleanup(groups.Close)
	ws, err := dirfs.New(dir, dirfs.LocalExec(dirfs.ExecLimits{}, groups))
	require.NoError(t, err)
	return ws, dir
}

// callOn runs one tool of a fresh pack and decodes a successful output.
func callOn(t *testing.T, ws *dirfs.FS, tool, input string, out any) plugin.ToolResult {
	t.Helper()
	res, err := New().Call(t.Context(), toolpack.Call{Tool: tool, Input: json.RawMessage(input)}, ws)
	require.NoError(t, err)
	if out != nil && res.OK {
		require.NoError(t, json.Unmarshal(res.Output, out))
	}
	return res
}

func TestDeleteFile(t *testing.T) {
	ws, dir := realWorkspace(t, map[string]string{"src/a.ts": "a", "src/b.ts": "b", "node_modules/x.js": "x"})
	var out deleteFileOutput
	res := callOn(t, ws, "coding_agent_delete_file", `{"path":"src/a.ts"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, deleteFileOutput{Path: "src/a.ts", Deleted: true, SHA256: sha("a")}, out)
	assert.NoFileExists(t, filepath.Join(dir, "src/a.ts"))

	requireFailure(t, callOn(t, ws, "coding_agent_delete_file", `{"path":"src/a.ts"}`, nil), CodeFileNotFound, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_delete_file", `{"path":"src"}`, nil), CodePathIsDirectory, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_delete_file", `{"path":"node_modules/x.js"}`, nil), CodePolicyViolation, "path")
	requireFailure(t, callOn(t, ws, "coding_agent_delete_file", `{"path":"../x"}`, nil), CodePolicyViolation, "path")
	assert.FileExists(t, filepath.Join(dir, "src/b.ts"))
	assert.FileExists(t, filepath.Join(dir, "node_modules/x.js"))
}

func TestRenameFile(t *testing.T) {
	ws, dir := realWorkspace(t, map[string]string{"a.ts": "a", "b.ts": "b"})
	var out renameFileOutput
	res := callOn(t, ws, "coding_agent_rename_file", `{"from_path":"a.ts","to_path":"src/lib/a.ts"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, renameFileOutput{FromPath: "a.ts", ToPath: "src/lib/a.ts"}, out)
	got, err := os.ReadFile(filepath.Join(dir, "src/lib/a.ts"))
	require.NoError(t, err)
	assert.Equal(t, "a", string(got))

	requireFailure(t, callOn(t, ws, "coding_agent_rename_file", `{"from_path":"b.ts","to_path":"src/lib/a.ts"}`, nil), plugin.CodeAlreadyExists, "to_path")
	res = callOn(t, ws, "coding_agent_rename_file", `{"from_path":"b.ts","to_path":"src/lib/a.ts","overwrite":true}`, nil)
	require.True(t, res.OK, "%+v", res.Error)
	got, _ = os.ReadFile(filepath.Join(dir, "src/lib/a.ts"))
	assert.Equal(t, "b", string(got))

	requireFailure(t, callOn(t, ws, "coding_agent_rename_file", `{"from_path":"missing.ts","to_path":"x.ts"}`, nil), CodeFileNotFound, "from_path")
	requireFailure(t, callOn(t, ws, "coding_agent_rename_file", `{"from_path":"src/lib/a.ts","to_path":".git/hooks/pre-commit"}`, nil), CodePolicyViolation, "to_path")
	requireFailure(t, callOn(t, ws, "coding_agent_rename_file", `{"from_path":"src/lib/a.ts","to_path":"/etc/x"}`, nil), CodePolicyViolation, "to_path")
	requireFailure(t, callOn(t, ws, "coding_agent_rename_file", `{"from_path":"src/lib/a.ts","to_path":"src/lib/a.ts"}`, nil), CodeInputInvalid, "to_path")
	requireFailure(t, callOn(t, ws, "coding_agent_rename_file", `{"from_path":"src","to_path":"lib"}`, nil), CodePathIsDirectory, "from_path")
}

func TestRunCommand(t *testing.T) {
	ws, _ := realWorkspace(t, map[string]string{"src/a.txt": "hello\n"})
	var out runCommandOutput
	res := callOn(t, ws, "coding_agent_run_command", `{"command":"cat a.txt; echo oops >&2; exit 3","cwd":"src"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, 3, out.ExitCode, "a failing command is a result")
	assert.Equal(t, "hello\n", out.Stdout)
	assert.Equal(t, "oops\n", out.Stderr)
	assert.Equal(t, "src", out.Cwd)
	assert.False(t, out.TimedOut)

	res = callOn(t, ws, "coding_agent_run_command", `{"command":"sleep 30","timeout_s":1}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.True(t, out.TimedOut)

	res = callOn(t, ws, "coding_agent_run_command", `{"command":"head -c 200000 /dev/zero | tr '\\0' x"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.True(t, out.OutputTruncated)
	assert.LessOrEqual(t, len(out.Stdout)+len(out.Stderr), DefaultCommandOutputBytes)

	res = callOn(t, ws, "coding_agent_run_command", `{"command":"printf '\\377\\376ok'"}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, "\uFFFDok", out.Stdout, "invalid UTF-8 becomes U+FFFD, never broken JSON")

	requireFailure(t, callOn(t, ws, "coding_agent_run_command", `{"command":"ls","cwd":"../.."}`, nil), CodePolicyViolation, "cwd")
	requireFailure(t, callOn(t, ws, "coding_agent_run_command", `{"command":"ls","cwd":"src/a.txt"}`, nil), CodeInputInvalid, "cwd")
	requireFailure(t, callOn(t, ws, "coding_agent_run_command", `{"command":"ls","cwd":"nope"}`, nil), CodeFileNotFound, "cwd")
	requireFailure(t, callOn(t, ws, "coding_agent_run_command", `{"command":"ls","timeout_s":0}`, nil), CodeInputInvalid, "timeout_s")
	requireFailure(t, callOn(t, ws, "coding_agent_run_command", `{"command":""}`, nil), CodeInputInvalid, "command")

	specs, err := New().Tools(t.Context())
	require.NoError(t, err)
	for _, s := range specs {
		if s.Name == "coding_agent_run_command" {
			assert.Equal(t, plugin.PermissionAsk, s.DefaultPermission, "commands are the user's call by default")
		}
	}
}

// TestSymlinkMadeByACommandLeadsNowhere: a command can create any symlink in
// the workspace; the file tools then refuse to follow one out of it or into a
// blocked folder.
func TestSymlinkMadeByACommandLeadsNowhere(t *testing.T) {
	ws, dir := realWorkspace(t, map[string]string{"a.txt": "a", ".git/config": "secret"})
	outside := filepath.Join(t.TempDir(), "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("host file"), 0o644))
	res := callOn(t, ws, "coding_agent_run_command",
		`{"command":"ln -s / root && ln -s `+outside+` out.txt && ln -s .git/config cfg && ln -s ../../.. up"}`, nil)
	require.True(t, res.OK, "%+v", res.Error)

	for _, tc := range []struct{ tool, input, field string }{
		{"coding_agent_read_file", `{"path":"root/etc/passwd"}`, "path"},
		{"coding_agent_read_file", `{"path":"out.txt"}`, "path"},
		{"coding_agent_read_file", `{"path":"cfg"}`, "path"},
		{"coding_agent_read_file", `{"path":"up/etc/hostname"}`, "path"},
		{"coding_agent_write_file", `{"path":"out.txt","content":"pwned"}`, "path"},
		{"coding_agent_write_file", `{"path":"root/tmp/pwned","content":"pwned"}`, "path"},
		{"coding_agent_delete_file", `{"path":"cfg"}`, "path"},
		{"coding_agent_rename_file", `{"from_path":"out.txt","to_path":"b.txt"}`, "from_path"},
		{"coding_agent_rename_file", `{"from_path":"a.txt","to_path":"root/tmp/a.txt"}`, "to_path"},
	} {
		res := callOn(t, ws, tc.tool, tc.input, nil)
		require.False(t, res.OK, "%s %s must be refused, got %s", tc.tool, tc.input, res.Output)
		assert.Contains(t, []string{CodePolicyViolation, CodeFileNotFound}, res.Error.Code, "%s %s: %s", tc.tool, tc.input, res.Error.Message)
		assert.Equal(t, tc.field, res.Error.Field, "%s %s", tc.tool, tc.input)
	}
	got, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "host file", string(got), "the host file is untouched")
	got, err = os.ReadFile(filepath.Join(dir, ".git/config"))
	require.NoError(t, err)
	assert.Equal(t, "secret", string(got))
	assert.NoFileExists(t, "/tmp/pwned")
	assert.FileExists(t, filepath.Join(dir, "a.txt"))
}
