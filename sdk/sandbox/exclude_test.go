package sandbox

import (
	"fmt"
	"path"
	"strings"
	"testing"
)

// matchExcludeReference is MatchExclude as first written, plainly: each
// pattern against every segment and every leading run of segments.
func matchExcludeReference(p string, patterns []string) bool {
	segs := strings.Split(p, "/")
	for _, pat := range patterns {
		pat = strings.Trim(pat, "/")
		for i, seg := range segs {
			if ok, _ := path.Match(pat, seg); ok {
				return true
			}
			if ok, _ := path.Match(pat, strings.Join(segs[:i+1], "/")); ok {
				return true
			}
		}
	}
	return false
}

// TestMatchExcludeAsWritten: the fast MatchExclude answers as the plain
// one for literal, nested and glob patterns over a spread of paths.
func TestMatchExcludeAsWritten(t *testing.T) {
	patterns := [][]string{
		{"node_modules", "dist", ".vite", "*.tsbuildinfo", ".DS_Store", ".opencode"},
		{"src/gen", "/build/", "a/b/c"},
		{"*", "?"},
		{"[a-c]*.txt", `\*`, "["},
		{"*.txt", "*", "*.", "*x"},
		{""},
		nil,
	}
	paths := []string{"", "a", "node_modules", "node_modules/x.js", "src/node_modules/x", "node_modulesx/y", "xnode_modules",
		"src/gen", "src/gen/a.ts", "src/genx/a.ts", "src/gen.ts", "build", "build/out", "rebuild/x", "a/b/c", "a/b/c/d", "a/b/cd",
		"app.tsbuildinfo", "src/app.tsbuildinfo", "src/app.tsbuildinfo/x", "b.txt", "d.txt", "x/c1.txt", "*", "a*b", "[", "a//b",
		".DS_Store", "x/.DS_Store", ".opencode/tool/t.ts", "dist", "distx", "x/dist/y", "a.txt", "dir.txt/b", ".txt", "x/y.", "ax/b"}
	for _, pats := range patterns {
		for _, p := range paths {
			if got, want := MatchExclude(p, pats), matchExcludeReference(p, pats); got != want {
				t.Errorf("MatchExclude(%q, %q) = %v, want %v", p, pats, got, want)
			}
		}
	}
}

// BenchmarkMatchExclude: one path of a snapshot against the generated
// artifacts' patterns (as core.GeneratedArtifacts).
func BenchmarkMatchExclude(b *testing.B) {
	pats := []string{"node_modules", "dist", ".vite", ".turbo", ".cache", ".parcel-cache", ".next", ".svelte-kit", "coverage",
		"*.tsbuildinfo", ".eslintcache", ".DS_Store", ".opencode"}
	for i := 0; b.Loop(); i++ {
		_ = MatchExclude(fmt.Sprintf("src/dir%d/file%d.ts", i%20, i%500), pats)
	}
}
