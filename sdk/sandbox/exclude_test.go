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
		x := NewExcluder(pats)
		for _, p := range paths {
			want := matchExcludeReference(p, pats)
			if got := MatchExclude(p, pats); got != want {
				t.Errorf("MatchExclude(%q, %q) = %v, want %v", p, pats, got, want)
			}
			if got := x.Match(p); got != want {
				t.Errorf("NewExcluder(%q).Match(%q) = %v, want %v", pats, p, got, want)
			}
		}
	}
}

// generatedArtifacts are core.GeneratedArtifacts' patterns, which every
// snapshot leaves out.
var generatedArtifacts = []string{"node_modules", "dist", ".vite", ".turbo", ".cache", ".parcel-cache", ".next", ".svelte-kit", "coverage",
	"*.tsbuildinfo", ".eslintcache", ".DS_Store", ".opencode"}

// snapshotPaths are the paths of a 500-file app in 20 folders.
func snapshotPaths() []string {
	paths := make([]string, 500)
	for i := range paths {
		paths[i] = fmt.Sprintf("src/dir%d/file%d.ts", i%20, i)
	}
	return paths
}

// BenchmarkMatchExclude: one path of a snapshot against the generated
// artifacts' patterns, each pattern in turn.
func BenchmarkMatchExclude(b *testing.B) {
	paths := snapshotPaths()
	for i := 0; b.Loop(); i++ {
		if MatchExclude(paths[i%len(paths)], generatedArtifacts) {
			b.Fatal("excluded")
		}
	}
}

// BenchmarkExcluder: the same with the patterns compiled, as a snapshot
// matches them.
func BenchmarkExcluder(b *testing.B) {
	paths := snapshotPaths()
	x := NewExcluder(generatedArtifacts)
	for i := 0; b.Loop(); i++ {
		if x.Match(paths[i%len(paths)]) {
			b.Fatal("excluded")
		}
	}
}
