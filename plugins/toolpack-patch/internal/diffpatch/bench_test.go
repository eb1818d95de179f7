package diffpatch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Benchmark input size: ~25k lines of ~40 bytes is ~1 MB, with 200 hunks spread evenly,
// like a large generated or vendored file under a sweeping edit.
const (
	benchLines = 25_000
	benchHunks = 200
	benchCtx   = 3 // context lines on each side, as git diff writes by default
)

// benchInput returns a deterministic ~1 MB file and a unified patch with benchHunks hunks
// (each replaces one line with two).
func benchInput() (string, string) {
	var file strings.Builder
	lines := make([]string, benchLines)
	for i := range lines {
		// Vary the text so that context is unique, as in real code.
		lines[i] = fmt.Sprintf("line %05d: value = compute(%d, %q)", i+1, (i*7919)%10007, strings.Repeat("x", i%7))
		file.WriteString(lines[i] + "\n")
	}
	var patch strings.Builder
	patch.WriteString("diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n")
	step := benchLines / benchHunks
	for h := range benchHunks {
		at := h*step + step/2 // 0-based line replaced by this hunk
		fmt.Fprintf(&patch, "@@ -%d,%d +%d,%d @@\n", at-benchCtx+1, 2*benchCtx+1, at-benchCtx+1+h, 2*benchCtx+2)
		for i := at - benchCtx; i < at; i++ {
			patch.WriteString(" " + lines[i] + "\n")
		}
		patch.WriteString("-" + lines[at] + "\n")
		fmt.Fprintf(&patch, "+changed %d\n+added %d\n", at, at)
		for i := at + 1; i <= at+benchCtx; i++ {
			patch.WriteString(" " + lines[i] + "\n")
		}
	}
	return file.String(), patch.String()
}

// BenchmarkApply1MB200Hunks measures Parse plus Apply, what a caller does per patch.
func BenchmarkApply1MB200Hunks(b *testing.B) {
	file, patch := benchInput()
	content := []byte(file)
	read := func(string) ([]byte, bool, error) { return content, true, nil }
	b.SetBytes(int64(len(content)))
	b.ResetTimer()
	for b.Loop() {
		p, err := Parse(patch)
		if err != nil {
			b.Fatal(err)
		}
		changes, err := Apply(p, read)
		if err != nil || len(changes) != 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitApply1MB200Hunks runs git apply on the same input for comparison; it
// includes starting the process, which is what a caller would pay too.
func BenchmarkGitApply1MB200Hunks(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git not installed")
	}
	file, patch := benchInput()
	dir := b.TempDir()
	tree := filepath.Join(dir, "tree")
	patchFile := filepath.Join(dir, "p.diff")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(patchFile, []byte(patch), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(file)))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(filepath.Join(tree, "big.txt"), []byte(file), 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cmd := exec.Command("git", "apply", patchFile)
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git apply: %v: %s", err, out)
		}
	}
}

// TestBenchInputMatchesGit makes sure the benchmark measures a correct application.
func TestBenchInputMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	file, patch := benchInput()
	if len(file) < 900_000 || len(file) > 1_200_000 {
		t.Fatalf("benchmark file is %d bytes, want ~1 MB", len(file))
	}
	before := map[string][]byte{"big.txt": []byte(file)}
	want, err := runGitApply(t.TempDir(), before, []byte(patch), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := applyToTree(patch, before)
	if err != nil {
		t.Fatal(err)
	}
	compareTrees(t, "bench", want, got)
}
