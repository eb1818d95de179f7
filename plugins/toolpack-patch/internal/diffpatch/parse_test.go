package diffpatch

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUnified(t *testing.T) {
	gitLog := `commit 0123456789abcdef
Author: A <a@example.com>
Date:   Mon Jan 1 00:00:00 2024 +0000

    a message mentioning --- and +++ and @@ harmlessly

diff --git a/src/a.go b/src/a.go
index 1111111..2222222 100644
--- a/src/a.go
+++ b/src/a.go
@@ -1,3 +1,4 @@ func main() {
 one
-two
+TWO
+three
 four
@@ -10 +11 @@
-x
+y
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
\ No newline at end of file
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/from.go b/to.go
similarity index 100%
rename from from.go
rename to to.go
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
diff --git a/script.sh b/script.sh
old mode 100644
new mode 100755
`
	p, err := ParseUnified(gitLog)
	require.NoError(t, err)
	assert.Equal(t, FormatUnified, p.Format)
	require.Len(t, p.Files, 5, "the mode-only change is not a file section")

	a := p.Files[0]
	assert.Equal(t, OpModify, a.Op)
	assert.Equal(t, "src/a.go", a.OldPath)
	assert.Equal(t, "src/a.go", a.NewPath)
	require.Len(t, a.Hunks, 2)
	assert.Equal(t, Hunk{OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 4, Anchor: "func main() {",
		Lines: []Line{{' ', "one"}, {'-', "two"}, {'+', "TWO"}, {'+', "three"}, {' ', "four"}}}, a.Hunks[0])
	assert.Equal(t, Hunk{OldStart: 10, OldLines: 1, NewStart: 11, NewLines: 1,
		Lines: []Line{{'-', "x"}, {'+', "y"}}}, a.Hunks[1], "counts default to 1")

	assert.Equal(t, FilePatch{Op: OpCreate, NewPath: "new.txt", Hunks: []Hunk{{NewStart: 1, NewLines: 1,
		Lines: []Line{{'+', "hello"}}, NoNewlineNew: true}}}, p.Files[1])
	assert.Equal(t, OpDelete, p.Files[2].Op)
	assert.Equal(t, "old.txt", p.Files[2].OldPath)
	assert.Equal(t, "", p.Files[2].NewPath)
	assert.Equal(t, FilePatch{Op: OpRename, OldPath: "from.go", NewPath: "to.go"}, p.Files[3])
	assert.Equal(t, FilePatch{Op: OpCreate, NewPath: "empty.txt"}, p.Files[4])
}

func TestParseUnifiedPlainDiffAndCRLF(t *testing.T) {
	text := "--- a.txt\t2024-01-01 10:00:00.000000000 +0100\r\n+++ a.txt\t2024-01-02 10:00:00.000000000 +0100\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+c\r\n"
	p, err := Parse(text)
	require.NoError(t, err)
	require.Len(t, p.Files, 1)
	assert.Equal(t, "a.txt", p.Files[0].OldPath)
	assert.Equal(t, []Line{{' ', "a"}, {'-', "b"}, {'+', "c"}}, p.Files[0].Hunks[0].Lines)
	assert.True(t, p.Files[0].CRLF)

	// Without a/ b/ on both sides nothing is stripped; a quoted name is unquoted.
	p, err = Parse("--- a/x.txt\n+++ \"b/sp ace\\tx.txt\"\n@@ -1 +1 @@\n-a\n+b\n")
	require.NoError(t, err)
	assert.Equal(t, "sp ace\tx.txt", p.Files[0].NewPath)
	p, err = Parse("--- dir/x.txt\n+++ dir/x.txt\n@@ -1 +1 @@\n-a\n+b\n")
	require.NoError(t, err)
	assert.Equal(t, "dir/x.txt", p.Files[0].NewPath)
}

func TestParseNoNewlineMarkers(t *testing.T) {
	p, err := Parse("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n")
	require.NoError(t, err)
	h := p.Files[0].Hunks[0]
	assert.True(t, h.NoNewlineOld)
	assert.False(t, h.NoNewlineNew)

	p, err = Parse("--- a/f\n+++ b/f\n@@ -1 +1 @@\n x\n\\ No newline at end of file\n")
	require.NoError(t, err)
	h = p.Files[0].Hunks[0]
	assert.True(t, h.NoNewlineOld && h.NoNewlineNew, "a marker after context applies to both sides")
}

func TestParseBeginPatch(t *testing.T) {
	text := `

*** Begin Patch
*** Add File: path/new.txt
+line one

+line two
*** Update File: src/app.ts
*** Move to: src/main.ts
@@ function main() {
 context line
-removed line
+added line
 context line
@@ class A
@@ m() {

 b
*** End of File
*** Delete File: old.txt
*** Update File: ./x/../y.txt
@@ -3,4 +3,5 @@ real anchor
 k
+v
*** End Patch
trailing chatter is ignored
`
	p, err := Parse(text)
	require.NoError(t, err)
	assert.Equal(t, FormatBeginPatch, p.Format)
	require.Len(t, p.Files, 4)
	assert.Equal(t, FilePatch{Op: OpCreate, NewPath: "path/new.txt", Hunks: []Hunk{{Lines: []Line{{'+', "line one"}, {'+', ""}, {'+', "line two"}}}}}, p.Files[0])
	up := p.Files[1]
	assert.Equal(t, OpRename, up.Op)
	assert.Equal(t, "src/app.ts", up.OldPath)
	assert.Equal(t, "src/main.ts", up.NewPath)
	require.Len(t, up.Hunks, 2)
	assert.Equal(t, "function main() {", up.Hunks[0].Anchor)
	assert.Equal(t, []Line{{' ', "context line"}, {'-', "removed line"}, {'+', "added line"}, {' ', "context line"}}, up.Hunks[0].Lines)
	assert.Equal(t, Hunk{Anchor: "class A\nm() {", Lines: []Line{{' ', ""}, {' ', "b"}}, AtEOF: true}, up.Hunks[1])
	assert.Equal(t, FilePatch{Op: OpDelete, OldPath: "old.txt"}, p.Files[2])
	assert.Equal(t, "y.txt", p.Files[3].NewPath)
	assert.Equal(t, "real anchor", p.Files[3].Hunks[0].Anchor, "numbers of a unified header are dropped")
}

func TestParseBeginPatchTrailingBlankLinesDropped(t *testing.T) {
	p, err := Parse("*** Begin Patch\r\n*** Update File: a\r\n a\r\n-b\r\n+c\r\n\r\n\r\n*** End Patch\r\n")
	require.NoError(t, err)
	assert.Equal(t, []Line{{' ', "a"}, {'-', "b"}, {'+', "c"}}, p.Files[0].Hunks[0].Lines)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line       int
		file, msg  string
	}{
		{"empty", "", 1, "", "no file sections"},
		{"prose only", "just some words\n", 1, "", "no file sections"},
		{"bad hunk header", "--- a/f\n+++ b/f\n@@ -x +1 @@\n-a\n", 3, "f", "malformed hunk header"},
		{"hunk body garbage", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\nzzz\n", 5, "f", "ends early"},
		{"binary", "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n", 3, "img.png", "binary"},
		{"git binary patch", "diff --git a/x.bin b/x.bin\nnew file mode 100644\nGIT binary patch\nliteral 1\n", 3, "x.bin", "binary"},
		{"bare binary line", "Binary files a/x.bin and b/x.bin differ\n", 1, "x.bin", "binary"},
		{"hunk without header", "intro\n@@ -1 +1 @@\n-a\n+b\n", 2, "", "without a preceding"},
		{"absolute path", "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", 1, "/etc/passwd", "absolute path"},
		{"escaping path", "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", 1, "../x", "leaves the workspace"},
		{"create with old lines", "--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", 5, "f", "empty old side"},
		{"marker first", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", 4, "f", "without a preceding line"},
		{"combined diff", "diff --cc f\n--- a/f\n+++ b/f\n@@@ -1,1 -1,1 +1,1 @@@\n", 4, "f", "combined"},
		{"copy", "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n", 3, "y", "copy"},
		{"header only", "--- a/f\n+++ b/f\n", 3, "f", "without any @@ hunk"},

		{"bp no begin", "*** Begin Patchy\n", 1, "", "no file sections"},
		{"bp missing end", "*** Begin Patch\n*** Add File: a\n+x\n", 4, "", "missing \"*** End Patch\""},
		{"bp add bad line", "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch\n", 4, "a", "must start with '+'"},
		{"bp update bad line", "*** Begin Patch\n*** Update File: a\n x\n?y\n*** End Patch\n", 4, "a", "must start with ' ', '-' or '+'"},
		{"bp update empty", "*** Begin Patch\n*** Update File: a\n*** End Patch\n", 2, "a", "no chunks"},
		{"bp empty chunk", "*** Begin Patch\n*** Update File: a\n@@ f\n@@\n*** End Patch\n", 5, "a", "empty chunk"},
		{"bp delete with body", "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch\n", 3, "a", "takes no lines"},
		{"bp unknown section", "*** Begin Patch\n*** Frobnicate File: a\n*** End Patch\n", 2, "", "expected"},
		{"bp no files", "*** Begin Patch\n*** End Patch\n", 2, "", "no file sections"},
		{"bp eof without chunk", "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch\n", 3, "a", "without a chunk"},
		{"bp bad path", "*** Begin Patch\n*** Add File: ../../etc/x\n+a\n*** End Patch\n", 2, "../../etc/x", "leaves the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "want *ParseError, got %v", err)
			assert.Equal(t, tt.line, pe.Line, "line of %q", pe.Error())
			assert.Equal(t, tt.file, pe.File)
			assert.Contains(t, pe.Message, tt.msg)
			f := pe.Failure()
			assert.Equal(t, CodeParseFailed, f.Code)
			assert.True(t, strings.Contains(f.Message, tt.msg))
		})
	}
}

func TestParseBeginPatchDirect(t *testing.T) {
	_, err := ParseBeginPatch("diff --git a/x b/x\n")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Line)
	assert.Contains(t, pe.Message, "Begin Patch")
}

// TestRecountsWrongHunkCounts: a hunk whose header counts are off (models
// write them by hand) is read up to the next header, and its counts come from
// the body; a body that is not diff lines is still refused.
func TestRecountsWrongHunkCounts(t *testing.T) {
	for name, tc := range map[string]struct {
		text           string
		oldN, newN     int
		lines          string
		hunks, nextOld int
	}{
		"ends early": {"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n", 2, 1, " a|-b", 1, 0},
		"too long":   {"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n", 1, 2, "-a|+b|+c", 1, 0},
		"next hunk":  {"--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n a\n-b\n+B\n\n@@ -20,1 +20,1 @@\n-y\n+Y\n", 2, 2, " a|-b|+B", 2, 1},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := ParseUnified(tc.text)
			require.NoError(t, err)
			require.Len(t, p.Files, 1)
			require.Len(t, p.Files[0].Hunks, tc.hunks)
			h := p.Files[0].Hunks[0]
			assert.Equal(t, tc.oldN, h.OldLines)
			assert.Equal(t, tc.newN, h.NewLines)
			var got []string
			for _, l := range h.Lines {
				got = append(got, string(l.Kind)+l.Text)
			}
			assert.Equal(t, tc.lines, strings.Join(got, "|"))
			if tc.hunks > 1 {
				assert.Equal(t, tc.nextOld, p.Files[0].Hunks[1].OldLines)
			}
		})
	}
	// And it applies where the lines say, whatever the numbers.
	p, err := ParseUnified("--- a/f\n+++ b/f\n@@ -7,2 +7,2 @@\n a\n-b\n+B\n c\n")
	require.NoError(t, err)
	changes, err := Apply(p, func(string) ([]byte, bool, error) { return []byte("x\na\nb\nc\n"), true, nil })
	require.NoError(t, err)
	assert.Equal(t, "x\na\nB\nc\n", string(changes[0].Content))
}
