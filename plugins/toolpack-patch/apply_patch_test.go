package patch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const applyTool = "coding_agent_apply_patch"

func patchInput(t *testing.T, text string) string {
	return jsonInput(t, map[string]any{"patch": text})
}

func readDisk(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	require.NoError(t, err)
	return string(b)
}

var patchApp = map[string]string{
	"src/App.tsx":   "import React from 'react'\n\nexport function App() {\n  return <h1>Hello</h1>\n}\n",
	"src/util.ts":   "export const a = 1\nexport const b = 2\n",
	"old.txt":       "bye\n",
	"package.json":  `{"scripts":{"build":"vite build","lint":"eslint ."}}` + "\n",
	"tsconfig.json": "{}\n",
}

func TestApplyPatchUnified(t *testing.T) {
	ws, dir := realWorkspace(t, patchApp)
	patch := `diff --git a/src/App.tsx b/src/App.tsx
--- a/src/App.tsx
+++ b/src/App.tsx
@@ -3,3 +3,3 @@
 export function App() {
-  return <h1>Hello</h1>
+  return <h1>Hello, world</h1>
 }
--- /dev/null
+++ b/src/new.ts
@@ -0,0 +1 @@
+export const created = true
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
`
	var out applyPatchOutput
	res := callOn(t, ws, applyTool, patchInput(t, patch), &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, "unified", out.Format)
	assert.Equal(t, "import React from 'react'\n\nexport function App() {\n  return <h1>Hello, world</h1>\n}\n", readDisk(t, dir, "src/App.tsx"))
	assert.Equal(t, "export const created = true\n", readDisk(t, dir, "src/new.ts"))
	assert.NoFileExists(t, filepath.Join(dir, "old.txt"))
	byPath := map[string]patchedFile{}
	for _, f := range out.Files {
		byPath[f.Path] = f
	}
	assert.Equal(t, patchedFile{Path: "src/App.tsx", Op: "modify", SHA256: sha(readDisk(t, dir, "src/App.tsx")), LinesAdded: 1, LinesRemoved: 1}, byPath["src/App.tsx"])
	assert.Equal(t, "create", byPath["src/new.ts"].Op)
	assert.Equal(t, "delete", byPath["old.txt"].Op)
	assert.Empty(t, byPath["old.txt"].SHA256)
	var cmds []string
	for _, s := range out.VerificationPlan {
		cmds = append(cmds, s.Command)
	}
	assert.Equal(t, []string{"npx --no-install tsc --noEmit", "npm run lint", "npm run build"}, cmds)
	assert.Nil(t, out.Verification, "not run unless asked")
}

func TestApplyPatchBeginPatchWithStaleContext(t *testing.T) {
	ws, dir := realWorkspace(t, patchApp)
	patch := `*** Begin Patch
*** Update File: src/util.ts
*** Move to: src/lib/util.ts
@@
-export const b = 2
+export const b = 3
*** Add File: README.md
+# app
*** End Patch`
	var out applyPatchOutput
	res := callOn(t, ws, applyTool, patchInput(t, patch), &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.Equal(t, "begin_patch", out.Format)
	assert.Equal(t, "export const a = 1\nexport const b = 3\n", readDisk(t, dir, "src/lib/util.ts"))
	assert.NoFileExists(t, filepath.Join(dir, "src/util.ts"))
	assert.Equal(t, "# app\n", readDisk(t, dir, "README.md"))
}

func TestApplyPatchFailsWithWindowsAndChangesNothing(t *testing.T) {
	ws, dir := realWorkspace(t, patchApp)
	patch := `--- a/src/util.ts
+++ b/src/util.ts
@@ -1,2 +1,2 @@
-export const a = 1
+export const a = 10
 export const b = 2
--- a/src/App.tsx
+++ b/src/App.tsx
@@ -4,1 +4,1 @@
-  return <h2>Nope</h2>
+  return <h2>Yes</h2>
`
	res := callOn(t, ws, applyTool, patchInput(t, patch), nil)
	requireFailure(t, res, CodePatchContextMismatch, "patch")
	assert.Equal(t, patchApp["src/util.ts"], readDisk(t, dir, "src/util.ts"), "all or nothing: the good file is untouched")
	var diag patchDiagnostics
	require.NoError(t, json.Unmarshal(res.Error.Diagnostics, &diag))
	assert.Equal(t, CodePatchContextMismatch, diag.PatchCode)
	assert.Equal(t, 1, diag.PatchFailureCount)
	require.Len(t, diag.Failures, 1)
	assert.Equal(t, "src/App.tsx", diag.Failures[0].File)
	assert.Equal(t, 1, diag.Failures[0].Hunk)
	require.NotEmpty(t, diag.RecommendedRefresh)
	assert.Equal(t, "src/App.tsx", diag.RecommendedRefresh[0].Path)
	assert.GreaterOrEqual(t, diag.RecommendedRefresh[0].EndLine, 4)
	assert.Contains(t, diag.Summary, "nothing changed")

	res = callOn(t, ws, applyTool, patchInput(t, "--- a/x\n+++ b/x\n@@ garbage\n"), nil)
	requireFailure(t, res, CodePatchParseFailed, "patch")
	require.NoError(t, json.Unmarshal(res.Error.Diagnostics, &diag))
	assert.Equal(t, CodePatchParseFailed, diag.PatchCode)
	assert.Positive(t, diag.Failures[0].Line)
}

func TestApplyPatchPathPolicy(t *testing.T) {
	ws, dir := realWorkspace(t, map[string]string{"a.txt": "a\n", "bin.dat": "a\x00b\n", ".git/config": "x\n"})
	for name, patch := range map[string]string{
		"into .git":              "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-x\n+y\n",
		"create in dist":         "*** Begin Patch\n*** Add File: dist/x.js\n+x\n*** End Patch",
		"move into node_modules": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: node_modules/a.txt\n@@\n-a\n+b\n*** End Patch",
	} {
		res := callOn(t, ws, applyTool, patchInput(t, patch), nil)
		require.False(t, res.OK, name)
		assert.Contains(t, []string{CodePolicyViolation, CodePatchParseFailed}, res.Error.Code, "%s: %s", name, res.Error.Message)
	}
	res := callOn(t, ws, applyTool, patchInput(t, "--- a/bin.dat\n+++ b/bin.dat\n@@ -1 +1 @@\n-a\n+b\n"), nil)
	requireFailure(t, res, CodePolicyViolation, "patch")
	assert.Equal(t, "a\n", readDisk(t, dir, "a.txt"))
	assert.Equal(t, "x\n", readDisk(t, dir, ".git/config"))
}

// failingWrites wraps a workspace so that writes to one path fail the way a
// full disk would.
type failingWrites struct {
	workspace.Workspace
	path string
}

func (f failingWrites) WriteFile(ctx context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	if p == f.path {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeTooLarge, p, "quota exceeded")
	}
	return f.Workspace.WriteFile(ctx, p, data, mode)
}

// TestApplyPatchRollsBack: a write that fails after others succeeded puts
// every file back as it was.
func TestApplyPatchRollsBack(t *testing.T) {
	ws, dir := realWorkspace(t, patchApp)
	patch := `*** Begin Patch
*** Update File: src/util.ts
@@
-export const a = 1
+export const a = 100
*** Delete File: old.txt
*** Add File: src/zzz.ts
+new
*** Update File: src/App.tsx
@@
-  return <h1>Hello</h1>
+  return <h1>Bye</h1>
*** End Patch`
	res, err := New().Call(t.Context(), toolpack.Call{Tool: applyTool, Input: json.RawMessage(patchInput(t, patch))}, failingWrites{ws, "src/App.tsx"})
	require.NoError(t, err)
	requireFailure(t, res, plugin.CodeTooLarge, "patch")
	for p, want := range patchApp {
		assert.Equal(t, want, readDisk(t, dir, p), "%s restored", p)
	}
	assert.NoFileExists(t, filepath.Join(dir, "src/zzz.ts"), "a created file is removed again")
}

func TestApplyPatchAutoVerify(t *testing.T) {
	ws, _ := realWorkspace(t, map[string]string{"main.py": "x = 1\n"})
	p := New()
	require.NoError(t, p.Configure(t.Context(), json.RawMessage(`{"auto_verify_patch": true}`)))
	call := func(patch string) applyPatchOutput {
		res, err := p.Call(t.Context(), toolpack.Call{Tool: applyTool, Input: json.RawMessage(patchInput(t, patch))}, ws)
		require.NoError(t, err)
		require.True(t, res.OK, "%+v", res.Error)
		var out applyPatchOutput
		require.NoError(t, json.Unmarshal(res.Output, &out))
		return out
	}
	out := call("--- a/main.py\n+++ b/main.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
	require.NotNil(t, out.Verification)
	assert.True(t, out.Verification.Passed, "%+v", out.Verification)
	out = call("--- a/main.py\n+++ b/main.py\n@@ -1 +1 @@\n-x = 2\n+x = (\n")
	require.NotNil(t, out.Verification)
	assert.False(t, out.Verification.Passed, "a syntax error fails the check; the patch itself is applied")
	require.Len(t, out.Verification.Steps, 1)
	assert.NotZero(t, out.Verification.Steps[0].ExitCode)
}
