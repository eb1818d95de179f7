package patch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"encoding/json"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
)

// benchTree writes a 10,000-file app (100 folders of 100 TSX files, ~300
// bytes each) and returns its folder, committed to a git index so that git
// ls-files can list the same tree.
func benchTree(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for d := range 100 {
		sub := filepath.Join(dir, "src", fmt.Sprintf("feature%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			body := fmt.Sprintf("import { useState } from 'react'\n\nexport function Widget%d_%d() {\n  const [n, setN] = useState(0)\n  return <button onClick={() => setN(n + 1)}>%d</button>\n}\n\nexport const LIMIT_%d = %d\n", d, f, f, f, f)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("Widget%03d.tsx", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
	}
	return dir
}

func benchIndex(b *testing.B, input string) {
	dir := benchTree(b)
	ws, err := dirfs.New(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := New()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := p.Call(b.Context(), toolpack.Call{Tool: "coding_agent_workspace_index", Input: json.RawMessage(input)}, ws)
		if err != nil || !res.OK {
			b.Fatalf("%v %+v", err, res.Error)
		}
	}
}

// BenchmarkWorkspaceIndex10k: path, size, sha256, language and outline of
// every file (every file read and parsed).
func BenchmarkWorkspaceIndex10k(b *testing.B) { benchIndex(b, `{"max_files":10000}`) }

// BenchmarkWorkspaceIndexNoOutline10k: path, size, sha256 and language.
func BenchmarkWorkspaceIndexNoOutline10k(b *testing.B) {
	benchIndex(b, `{"max_files":10000,"outline":false}`)
}

// BenchmarkWorkspaceIndexWarm10k: the full index (outlines on) of an
// unchanged workspace called again, the case an agent repeating the call
// within a run hits: the workspace's hashes and the toolpack's outlines are
// cached, and no file is read.
func BenchmarkWorkspaceIndexWarm10k(b *testing.B) {
	dir := benchTree(b)
	ws, err := dirfs.New(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	// dirfs caches no hash of a file changed within its 2 s racy window;
	// wait it out, as any tree an agent indexes twice has.
	time.Sleep(2100 * time.Millisecond)
	p := New()
	call := func() {
		res, err := p.Call(b.Context(), toolpack.Call{Tool: "coding_agent_workspace_index", Input: json.RawMessage(`{"max_files":10000}`)}, ws)
		if err != nil || !res.OK {
			b.Fatalf("%v %+v", err, res.Error)
		}
	}
	call() // the cold call fills the caches
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
}

// BenchmarkGitLsFiles10k lists the same tree with its blob hashes from git's
// index (hashes computed ahead of time by git add, a process per call).
func BenchmarkGitLsFiles10k(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := benchTree(b)
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command("git", "ls-files", "-s")
		cmd.Dir = dir
		if out, err := cmd.Output(); err != nil || len(out) == 0 {
			b.Fatal(err)
		}
	}
}
