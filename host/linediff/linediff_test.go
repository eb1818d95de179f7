package linediff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// applyEdits replays an edit script on a and returns the lines it yields.
func applyEdits(t testing.TB, a, b [][]byte, edits []Edit) [][]byte {
	var out [][]byte
	ai := 0
	for _, e := range edits {
		switch e.Op {
		case Equal:
			if e.A != ai || !bytes.Equal(a[e.A], b[e.B]) {
				t.Fatalf("bad equal edit %+v at a[%d]", e, ai)
			}
			out = append(out, a[e.A])
			ai++
		case Delete:
			if e.A != ai {
				t.Fatalf("delete out of order: %+v at a[%d]", e, ai)
			}
			ai++
		case Insert:
			out = append(out, b[e.B])
		}
	}
	if ai != len(a) {
		t.Fatalf("script consumed %d of %d lines", ai, len(a))
	}
	return out
}

// lcs is the textbook O(nm) longest common subsequence length.
func lcs(a, b [][]byte) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if bytes.Equal(a[i], b[j]) {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func randText(r *rand.Rand, n int, alphabet string) []byte {
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
		b.WriteByte('\n')
	}
	if r.IntN(4) == 0 && b.Len() > 0 {
		s := b.String()
		return []byte(s[:len(s)-1]) // no final newline
	}
	return []byte(b.String())
}

func TestDiffIsMinimalAndCorrect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		a := Lines(randText(r, r.IntN(30), "abcd"))
		b := Lines(randText(r, r.IntN(30), "abcd"))
		edits := Diff(a, b)
		got := applyEdits(t, a, b, edits)
		require.Equal(t, bytes.Join(b, nil), bytes.Join(got, nil), "case %d", i)
		changes := 0
		for _, e := range edits {
			if e.Op != Equal {
				changes++
			}
		}
		assert.Equal(t, len(a)+len(b)-2*lcs(a, b), changes, "case %d: not minimal", i)
	}
}

func TestUnifiedTable(t *testing.T) {
	cases := []struct{ name, a, b, want string }{
		{"equal", "x\n", "x\n", ""},
		{"edit", "a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"no final newline", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"add final newline", "a", "a\n", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Unified("f", "f", []byte(tc.a), []byte(tc.b), 3))
		})
	}
	assert.Equal(t, "--- /dev/null\n+++ b/new\n@@ -0,0 +1,2 @@\n+x\n+y\n", Unified("", "new", nil, []byte("x\ny\n"), 3))
	assert.Equal(t, "--- a/old\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", Unified("old", "", []byte("x\n"), nil, 3))
}

// TestUnifiedRoundTripWithGitApply: git apply accepts every diff and
// reproduces b.
func TestUnifiedRoundTripWithGitApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	for i := range 150 {
		a := randText(r, 1+r.IntN(40), "abcdefg")
		b := mutate(r, a)
		if r.IntN(5) == 0 {
			a = bytes.ReplaceAll(a, []byte("\n"), []byte("\r\n"))
			b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
		}
		d := Unified("f.txt", "f.txt", a, b, 3)
		if d == "" {
			continue
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), a, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "p.diff"), []byte(d), 0o644))
		cmd := exec.Command("git", "apply", "p.diff")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "case %d: git apply refused:\n%s\n%s", i, out, d)
		got, err := os.ReadFile(filepath.Join(dir, "f.txt"))
		require.NoError(t, err)
		require.Equal(t, string(b), string(got), "case %d:\n%s", i, d)
	}
}

// mutate changes a few random lines of text (replace, delete, insert).
func mutate(r *rand.Rand, text []byte) []byte {
	ls := Lines(text)
	for range 1 + r.IntN(4) {
		i := r.IntN(len(ls) + 1)
		switch r.IntN(3) {
		case 0:
			if i < len(ls) {
				ls[i] = []byte(fmt.Sprintf("changed %d\n", r.IntN(100)))
			}
		case 1:
			if i < len(ls) {
				ls = append(ls[:i:i], ls[i+1:]...)
			}
		default:
			ls = append(ls[:i:i], append([][]byte{[]byte("new\n")}, ls[i:]...)...)
		}
	}
	return bytes.Join(ls, nil)
}

func numbered(over map[int]string) []byte {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		if s, ok := over[i]; ok {
			if s != "" {
				b.WriteString(s + "\n")
			}
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return []byte(b.String())
}

func TestMerge3(t *testing.T) {
	base := numbered(nil)
	t.Run("one side", func(t *testing.T) {
		ours := numbered(map[int]string{3: "three"})
		assert.Equal(t, MergeResult{Merged: ours}, Merge3(base, ours, base))
		assert.Equal(t, MergeResult{Merged: ours}, Merge3(base, base, ours))
		assert.Equal(t, MergeResult{Merged: ours}, Merge3(base, ours, ours), "the same change on both sides")
	})
	t.Run("disjoint", func(t *testing.T) {
		res := Merge3(base, numbered(map[int]string{3: "three"}), numbered(map[int]string{15: "fifteen", 18: ""}))
		assert.Empty(t, res.Conflicts)
		assert.Equal(t, string(numbered(map[int]string{3: "three", 15: "fifteen", 18: ""})), string(res.Merged))
	})
	t.Run("same change inside a larger one", func(t *testing.T) {
		res := Merge3(base, numbered(map[int]string{5: "five"}), numbered(map[int]string{5: "five"}))
		assert.Empty(t, res.Conflicts)
	})
	t.Run("overlap", func(t *testing.T) {
		res := Merge3(base, numbered(map[int]string{10: "ours"}), numbered(map[int]string{10: "theirs"}))
		require.Len(t, res.Conflicts, 1)
		assert.Equal(t, Conflict{BaseStart: 10, BaseEnd: 10, Ours: "ours\n", Theirs: "theirs\n"}, res.Conflicts[0])
		assert.Contains(t, string(res.Merged), "line 9\n<<<<<<< ours\nours\n||||||| base\nline 10\n=======\ntheirs\n>>>>>>> theirs\nline 11\n")
	})
	t.Run("adjacent lines conflict", func(t *testing.T) {
		res := Merge3(base, numbered(map[int]string{10: "ours"}), numbered(map[int]string{11: "theirs"}))
		require.Len(t, res.Conflicts, 1)
		assert.Equal(t, 10, res.Conflicts[0].BaseStart)
		assert.Equal(t, 11, res.Conflicts[0].BaseEnd)
	})
	t.Run("insert at the same point", func(t *testing.T) {
		ours := bytes.Replace(base, []byte("line 5\n"), []byte("line 5\nours\n"), 1)
		theirs := bytes.Replace(base, []byte("line 5\n"), []byte("line 5\ntheirs\n"), 1)
		res := Merge3(base, ours, theirs)
		require.Len(t, res.Conflicts, 1)
		assert.Equal(t, 6, res.Conflicts[0].BaseStart)
		assert.Equal(t, 5, res.Conflicts[0].BaseEnd, "an insertion point")
	})
	t.Run("delete against edit", func(t *testing.T) {
		res := Merge3(base, numbered(map[int]string{7: "", 8: "", 9: ""}), numbered(map[int]string{8: "eight"}))
		require.Len(t, res.Conflicts, 1)
	})
	t.Run("crlf and no final newline kept", func(t *testing.T) {
		b := []byte("a\r\nb\r\nc\r\nd\r\ne")
		o := []byte("A\r\nb\r\nc\r\nd\r\ne")
		th := []byte("a\r\nb\r\nc\r\nd\r\nE")
		res := Merge3(b, o, th)
		assert.Empty(t, res.Conflicts)
		assert.Equal(t, "A\r\nb\r\nc\r\nd\r\nE", string(res.Merged))
	})
}

// TestMerge3Properties: random disjoint edits of a base merge into a result
// holding both; a side equal to base yields the other.
func TestMerge3Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 300 {
		n := 10 + r.IntN(40)
		base := numberedN(n, nil)
		// Ours edits the first half, theirs the second, with a gap of 2.
		mid := n / 2
		o := map[int]string{1 + r.IntN(mid-2): "ours"}
		th := map[int]string{mid + 1 + r.IntN(n-mid): "theirs"}
		ours, theirs := numberedN(n, o), numberedN(n, th)
		res := Merge3(base, ours, theirs)
		require.Empty(t, res.Conflicts, "case %d", i)
		both := map[int]string{}
		for k, v := range o {
			both[k] = v
		}
		for k, v := range th {
			both[k] = v
		}
		require.Equal(t, string(numberedN(n, both)), string(res.Merged), "case %d", i)
		x := randText(r, r.IntN(20), "abc")
		assert.Equal(t, x, Merge3(base, x, base).Merged)
		assert.Equal(t, x, Merge3(base, base, x).Merged)
	}
}

func numberedN(n int, over map[int]string) []byte {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := over[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return []byte(b.String())
}

func FuzzDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd"))
	f.Add([]byte(""), []byte("x"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		al, bl := Lines(a), Lines(b)
		got := applyEdits(t, al, bl, Diff(al, bl))
		if !bytes.Equal(bytes.Join(got, nil), b) {
			t.Fatalf("script does not rebuild b")
		}
		_ = Unified("f", "f", a, b, 3)
	})
}

func FuzzMerge3(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("A\nb\nc\n"), []byte("a\nb\nC\n"))
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		res := Merge3(base, ours, theirs)
		if bytes.Equal(ours, base) && !bytes.Equal(res.Merged, theirs) {
			t.Fatal("ours == base must give theirs")
		}
		if bytes.Equal(theirs, base) && !bytes.Equal(res.Merged, ours) {
			t.Fatal("theirs == base must give ours")
		}
		if len(res.Conflicts) == 0 && bytes.Contains(res.Merged, []byte("<<<<<<< ours\n")) && !bytes.Contains(base, []byte("<<<<<<<")) && !bytes.Contains(ours, []byte("<<<<<<<")) && !bytes.Contains(theirs, []byte("<<<<<<<")) {
			t.Fatal("markers without a conflict")
		}
	})
}

func benchInput(changes int) ([]byte, []byte) {
	var a, b strings.Builder
	r := rand.New(rand.NewPCG(7, 8))
	changed := map[int]bool{}
	for len(changed) < changes {
		changed[r.IntN(5000)] = true
	}
	for i := range 5000 {
		fmt.Fprintf(&a, "\tconst value%d = compute(%d) // a line of code\n", i, i)
		if changed[i] {
			fmt.Fprintf(&b, "\tconst value%d = recompute(%d)\n", i, i)
		} else {
			fmt.Fprintf(&b, "\tconst value%d = compute(%d) // a line of code\n", i, i)
		}
	}
	return []byte(a.String()), []byte(b.String())
}

func BenchmarkDiff(b *testing.B) {
	x, y := benchInput(50)
	xl, yl := Lines(x), Lines(y)
	b.ReportAllocs()
	for b.Loop() {
		Diff(xl, yl)
	}
}

func BenchmarkUnified(b *testing.B) {
	x, y := benchInput(50)
	b.ReportAllocs()
	for b.Loop() {
		Unified("f", "f", x, y, 3)
	}
}

func BenchmarkMerge3(b *testing.B) {
	base, _ := benchInput(0)
	ls := Lines(base)
	ours := make([][]byte, len(ls))
	theirs := make([][]byte, len(ls))
	copy(ours, ls)
	copy(theirs, ls)
	for i := range 30 {
		ours[i*160] = []byte("ours\n")
		theirs[i*160+80] = []byte("theirs\n")
	}
	o, t := bytes.Join(ours, nil), bytes.Join(theirs, nil)
	b.ReportAllocs()
	for b.Loop() {
		if res := Merge3(base, o, t); len(res.Conflicts) > 0 {
			b.Fatal("unexpected conflict")
		}
	}
}
