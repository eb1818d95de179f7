package diffpatch

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numbered returns "line 1\n".."line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func toBytes(m map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		patch string
		want  map[string]string // the whole tree afterwards
	}{
		{
			name:  "unified multi-file with create, delete and rename with edits",
			files: map[string]string{"a.txt": "a\nb\nc\n", "gone.txt": "x\ny\n", "old/name.go": "package p\n\nfunc F() {}\n"},
			patch: "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" +
				"diff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+n1\n+n2\n" +
				"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n" +
				"diff --git a/old/name.go b/new/name.go\nsimilarity index 80%\nrename from old/name.go\nrename to new/name.go\n--- a/old/name.go\n+++ b/new/name.go\n@@ -1,3 +1,3 @@\n package p\n \n-func F() {}\n+func G() {}\n",
			want: map[string]string{"a.txt": "a\nB\nc\n", "new.txt": "n1\nn2\n", "new/name.go": "package p\n\nfunc G() {}\n"},
		},
		{
			name:  "pure rename",
			files: map[string]string{"x": "1\n"},
			patch: "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n",
			want:  map[string]string{"y": "1\n"},
		},
		{
			name:  "CRLF file gets CRLF added lines from an LF patch",
			files: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			patch: "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n",
			want:  map[string]string{"w.txt": "a\r\nB\r\nB2\r\nc\r\n"},
		},
		{
			name:  "CRLF patch text on an LF file",
			files: map[string]string{"u.txt": "a\nb\nc\n"},
			patch: "--- a/u.txt\r\n+++ b/u.txt\r\n@@ -1,3 +1,3 @@\r\n a\r\n-b\r\n+B\r\n c\r\n",
			want:  map[string]string{"u.txt": "a\nB\nc\n"},
		},
		{
			name:  "CRLF patch creates a CRLF file",
			files: map[string]string{},
			patch: "--- /dev/null\r\n+++ b/c.txt\r\n@@ -0,0 +1,2 @@\r\n+a\r\n+b\r\n",
			want:  map[string]string{"c.txt": "a\r\nb\r\n"},
		},
		{
			name:  "adding the missing final newline",
			files: map[string]string{"f": "a\nb"},
			patch: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n",
			want:  map[string]string{"f": "a\nb\nc\n"},
		},
		{
			name:  "removing the final newline",
			files: map[string]string{"f": "a\nb\n"},
			patch: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
			want:  map[string]string{"f": "a\nb"},
		},
		{
			name:  "a change away from the end keeps a missing final newline",
			files: map[string]string{"f": "a\nb\nc\nd\ne"},
			patch: "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n",
			want:  map[string]string{"f": "A\nb\nc\nd\ne"},
		},
		{
			name:  "CRLF file without final newline, appending at the end",
			files: map[string]string{"f": "a\r\nb"},
			patch: "*** Begin Patch\n*** Update File: f\n a\n b\n+c\n*** End of File\n*** End Patch\n",
			want:  map[string]string{"f": "a\r\nb\r\nc"},
		},
		{
			name:  "stale line numbers shifted down",
			files: map[string]string{"s": "new 1\nnew 2\nnew 3\nnew 4\nnew 5\n" + numbered(20)},
			patch: "--- a/s\n+++ b/s\n@@ -9,3 +9,3 @@\n line 9\n-line 10\n+LINE 10\n line 11\n@@ -15,1 +15,1 @@\n-line 15\n+LINE 15\n",
			want:  map[string]string{"s": "new 1\nnew 2\nnew 3\nnew 4\nnew 5\n" + strings.Replace(strings.Replace(numbered(20), "line 10\n", "LINE 10\n", 1), "line 15\n", "LINE 15\n", 1)},
		},
		{
			name:  "stale line numbers shifted up",
			files: map[string]string{"s": strings.Replace(numbered(20), "line 2\nline 3\nline 4\n", "", 1)},
			patch: "--- a/s\n+++ b/s\n@@ -12,2 +12,2 @@\n-line 12\n+LINE 12\n line 13\n",
			want:  map[string]string{"s": strings.Replace(strings.Replace(numbered(20), "line 2\nline 3\nline 4\n", "", 1), "line 12\n", "LINE 12\n", 1)},
		},
		{
			name:  "nearest of several candidates to the stated line wins",
			files: map[string]string{"n": "x\ny\n" + numbered(10) + "x\ny\n" + numbered(3)},
			patch: "--- a/n\n+++ b/n\n@@ -11,2 +11,2 @@\n x\n-y\n+Y\n",
			want:  map[string]string{"n": "x\ny\n" + numbered(10) + "x\nY\n" + numbered(3)},
		},
		{
			name:  "indentation drift: context kept as in the file",
			files: map[string]string{"d.go": "func f() {\n    a := 1\n    b := 2\n    return\n}\n"},
			patch: "--- a/d.go\n+++ b/d.go\n@@ -1,5 +1,5 @@\n func f() {\n \ta := 1\n-\tb := 2\n+\tb := 3\n \treturn\n }\n",
			want:  map[string]string{"d.go": "func f() {\n    a := 1\n\tb := 3\n    return\n}\n"},
		},
		{
			name:  "trailing whitespace drift",
			files: map[string]string{"t": "a  \nb\t\nc\n"},
			patch: "--- a/t\n+++ b/t\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			want:  map[string]string{"t": "a  \nB\nc\n"},
		},
		{
			name:  "hunks in reverse patch order apply in file order",
			files: map[string]string{"r": numbered(10)},
			patch: "--- a/r\n+++ b/r\n@@ -8 +8 @@\n-line 8\n+EIGHT\n@@ -2 +2,2 @@\n-line 2\n+TWO\n+TWO.5\n",
			want:  map[string]string{"r": strings.Replace(strings.Replace(numbered(10), "line 8\n", "EIGHT\n", 1), "line 2\n", "TWO\nTWO.5\n", 1)},
		},
		{
			name:  "pure insertion by line number",
			files: map[string]string{"i": numbered(3)},
			patch: "--- a/i\n+++ b/i\n@@ -2,0 +3 @@\n+inserted\n",
			want:  map[string]string{"i": "line 1\nline 2\ninserted\nline 3\n"},
		},
		{
			name:  "a file touched twice applies in sequence",
			files: map[string]string{"twice": "a\nb\n"},
			patch: "--- a/twice\n+++ b/twice\n@@ -1 +1 @@\n-a\n+A\n--- a/twice\n+++ b/twice\n@@ -1,2 +1,2 @@\n A\n-b\n+B\n",
			want:  map[string]string{"twice": "A\nB\n"},
		},
		{
			name:  "delete with whitespace-different content is fine",
			files: map[string]string{"del": "  x\ny  \n"},
			patch: "--- a/del\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
			want:  map[string]string{},
		},
		{
			name:  "begin patch: add, update with move, delete",
			files: map[string]string{"src/app.ts": "import x\n\nfunction main() {\n  run()\n}\n", "old.txt": "o\n"},
			patch: "*** Begin Patch\n*** Add File: path/new.txt\n+line one\n+line two\n*** Update File: src/app.ts\n*** Move to: src/main.ts\n@@ function main() {\n-  run()\n+  runAll()\n }\n*** Delete File: old.txt\n*** End Patch\n",
			want:  map[string]string{"path/new.txt": "line one\nline two\n", "src/main.ts": "import x\n\nfunction main() {\n  runAll()\n}\n"},
		},
		{
			name:  "begin patch: the anchor disambiguates repeated context",
			files: map[string]string{"p.py": "def a():\n    return 1\n\ndef b():\n    return 1\n"},
			patch: "*** Begin Patch\n*** Update File: p.py\n@@ def b():\n-    return 1\n+    return 2\n*** End Patch\n",
			want:  map[string]string{"p.py": "def a():\n    return 1\n\ndef b():\n    return 2\n"},
		},
		{
			name:  "begin patch: anchor chain",
			files: map[string]string{"c.ts": "class A {\n  m() {\n    x()\n  }\n}\nclass B {\n  m() {\n    x()\n  }\n}\n"},
			patch: "*** Begin Patch\n*** Update File: c.ts\n@@ class B {\n@@ m() {\n-    x()\n+    y()\n*** End Patch\n",
			want:  map[string]string{"c.ts": "class A {\n  m() {\n    x()\n  }\n}\nclass B {\n  m() {\n    y()\n  }\n}\n"},
		},
		{
			name:  "begin patch: End of File picks the last occurrence",
			files: map[string]string{"e": "}\nx\n}\n"},
			patch: "*** Begin Patch\n*** Update File: e\n }\n+// end\n*** End of File\n*** End Patch\n",
			want:  map[string]string{"e": "}\nx\n}\n// end\n"},
		},
		{
			name:  "begin patch: insertion after an anchor, and appending without one",
			files: map[string]string{"ins": "a\nb\nc\n"},
			patch: "*** Begin Patch\n*** Update File: ins\n@@ a\n+after a\n@@\n+at end\n*** End Patch\n",
			want:  map[string]string{"ins": "a\nafter a\nb\nc\nat end\n"},
		},
		{
			name:  "begin patch: indentation drift",
			files: map[string]string{"k.go": "func k() {\n\t\tif x {\n\t\t\treturn\n\t\t}\n}\n"},
			patch: "*** Begin Patch\n*** Update File: k.go\n   if x {\n-      return\n+      return nil\n   }\n*** End Patch\n",
			want:  map[string]string{"k.go": "func k() {\n\t\tif x {\n      return nil\n\t\t}\n}\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := applyToTree(tt.patch, toBytes(tt.files))
			require.NoError(t, err)
			want := map[string]string{}
			for k, v := range got {
				want[k] = string(v)
			}
			assert.Equal(t, tt.want, want)
		})
	}
}

// applyFailures applies a patch that must fail and returns its failures.
func applyFailures(t *testing.T, patch string, files map[string]string) []Failure {
	t.Helper()
	p, err := Parse(patch)
	require.NoError(t, err)
	changes, err := Apply(p, func(path string) ([]byte, bool, error) {
		c, ok := files[path]
		return []byte(c), ok, nil
	})
	assert.Nil(t, changes, "a failing patch yields no changes")
	var ae *ApplyError
	require.True(t, errors.As(err, &ae), "want *ApplyError, got %v", err)
	require.NotEmpty(t, ae.Failures)
	return ae.Failures
}

func TestApplyFailures(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		patch string
		want  []Failure // Message is checked with Contains
	}{
		{
			name:  "ambiguous unified context equally near",
			files: map[string]string{"a": "x\ny\nq\nq\nx\ny\n"},
			patch: "--- a/a\n+++ b/a\n@@ -3,2 +3,2 @@\n x\n-y\n+Y\n",
			want:  []Failure{{File: "a", Hunk: 1, Code: CodeContextAmbiguous, Message: "lines 1, 5", Window: &LineWindow{1, 6}}},
		},
		{
			name:  "ambiguous begin-patch context",
			files: map[string]string{"b": "f()\ng()\nf()\n"},
			patch: "*** Begin Patch\n*** Update File: b\n-f()\n+h()\n*** End Patch\n",
			want:  []Failure{{File: "b", Hunk: 1, Code: CodeContextAmbiguous, Message: "lines 1, 3", Window: &LineWindow{1, 3}}},
		},
		{
			name:  "overlapping hunks",
			files: map[string]string{"o": numbered(10)},
			patch: "--- a/o\n+++ b/o\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+THREE\n line 4\n@@ -4,2 +4,2 @@\n line 4\n-line 5\n+FIVE\n",
			want:  []Failure{{File: "o", Hunk: 2, Code: CodeHunksOverlap, Message: "hunk 1 and hunk 2", Window: &LineWindow{1, 10}}},
		},
		{
			name:  "several failing hunks with windows",
			files: map[string]string{"m": numbered(60)},
			patch: "--- a/m\n+++ b/m\n@@ -5,2 +5,2 @@\n line 5\n-line six\n+6\n@@ -30 +30 @@\n-line 30\n+30\n@@ -50,2 +50,2 @@\n-nothing like it\n+x\n completely absent\n",
			want: []Failure{
				{File: "m", Hunk: 1, Code: CodeContextMismatch, Message: `line 6: expected "line six", found "line 6"`, Window: &LineWindow{1, 16}},
				{File: "m", Hunk: 3, Code: CodeContextMismatch, Message: "none of them occurs", Window: &LineWindow{40, 60}},
			},
		},
		{
			name:  "missing file and existing create target",
			files: map[string]string{"exists": "e\n"},
			patch: "--- a/missing\n+++ b/missing\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/exists\n@@ -0,0 +1 @@\n+e\n",
			want: []Failure{
				{File: "missing", Code: CodeFileNotFound, Message: "does not exist"},
				{File: "exists", Code: CodeFileExists, Message: "already exists"},
			},
		},
		{
			name:  "rename onto an existing file",
			files: map[string]string{"x": "1\n", "y": "2\n"},
			patch: "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n",
			want:  []Failure{{File: "y", Code: CodeFileExists, Message: "target already exists"}},
		},
		{
			name:  "delete of changed content",
			files: map[string]string{"d": "a\nchanged\n"},
			patch: "--- a/d\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n",
			want:  []Failure{{File: "d", Code: CodeContextMismatch, Message: `line 2: expected "b", found "changed"`, Window: &LineWindow{1, 2}}},
		},
		{
			name:  "atomic: the second file fails, nothing changes",
			files: map[string]string{"ok": "a\n", "bad": "b\n"},
			patch: "--- a/ok\n+++ b/ok\n@@ -1 +1 @@\n-a\n+A\n--- a/bad\n+++ b/bad\n@@ -1 +1 @@\n-zzz\n+B\n",
			want:  []Failure{{File: "bad", Hunk: 1, Code: CodeContextMismatch, Message: "not found"}},
		},
		{
			name:  "begin patch: anchor not found and End of File mismatch",
			files: map[string]string{"q": "a\nb\nc\n"},
			patch: "*** Begin Patch\n*** Update File: q\n@@ nowhere\n-b\n+B\n@@\n-a\n+A\n*** End of File\n*** End Patch\n",
			want: []Failure{
				{File: "q", Hunk: 1, Code: CodeContextMismatch, Message: "anchor line"},
				{File: "q", Hunk: 2, Code: CodeContextMismatch, Message: "at the end of the file"},
			},
		},
		{
			name:  "begin patch: update of a missing file",
			files: map[string]string{},
			patch: "*** Begin Patch\n*** Update File: nope.txt\n-a\n+b\n*** End Patch\n",
			want:  []Failure{{File: "nope.txt", Code: CodeFileNotFound, Message: "does not exist"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := applyFailures(t, tt.patch, tt.files)
			require.Len(t, got, len(tt.want), "failures: %+v", got)
			for i, w := range tt.want {
				g := got[i]
				assert.Equal(t, w.File, g.File)
				assert.Equal(t, w.Hunk, g.Hunk)
				assert.Equal(t, w.Code, g.Code)
				assert.Contains(t, g.Message, w.Message)
				if w.Window != nil {
					assert.Equal(t, w.Window, g.Window, "window of %s", g.Message)
				}
			}
		})
	}
}

func TestApplyReadErrorIsReturnedAsIs(t *testing.T) {
	io := errors.New("disk on fire")
	p, err := Parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n")
	require.NoError(t, err)
	_, err = Apply(p, func(string) ([]byte, bool, error) { return nil, false, io })
	assert.Same(t, io, err)
}

func TestApplyChangesInPatchOrder(t *testing.T) {
	_, err := Parse("*** Begin Patch\n*** Update File: a\n-1\n+2\n*** Move to: b\n*** End Patch\n")
	require.Error(t, err, "Move to must follow the Update line directly")

	p, err := Parse("*** Begin Patch\n*** Update File: a\n*** Move to: b\n-1\n+2\n*** Delete File: c\n*** End Patch\n")
	require.NoError(t, err)
	files := map[string]string{"a": "1\n", "c": "c\n"}
	changes, err := Apply(p, func(path string) ([]byte, bool, error) {
		c, ok := files[path]
		return []byte(c), ok, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []Change{
		{Op: OpRename, Path: "b", OldPath: "a", Content: []byte("2\n")},
		{Op: OpDelete, Path: "c"},
	}, changes)
}

func TestApplyErrorMessage(t *testing.T) {
	e := &ApplyError{Failures: []Failure{
		{File: "a.go", Hunk: 2, Code: CodeContextMismatch, Message: "not found", Window: &LineWindow{3, 9}},
		{File: "b.go", Code: CodeFileNotFound, Message: "missing"},
	}}
	assert.Equal(t, "patch does not apply (2 failures)\na.go hunk 2: PATCH_CONTEXT_MISMATCH: not found (re-read lines 3-9)\nb.go: PATCH_FILE_NOT_FOUND: missing", e.Error())
	assert.Equal(t, "rename", OpRename.String())
}
