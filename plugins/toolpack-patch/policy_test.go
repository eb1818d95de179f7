package patch

import (
	"strings"
	"testing"
)

// blockedFolderIn skips EqualFold for ASCII names of another length; it
// must name the blocked folder EqualFold on every segment names, Unicode
// folding included ("ſ" folds to "s").
func FuzzBlockedFolderIn(f *testing.F) {
	for _, p := range []string{"", "/", "src/App.tsx", "NODE_MODULES/x", "a/.Git", "a/.git/b", "dist", "x/Dist/y",
		"node_moduleſ/a", "ſrc/diſt", ".cache", ".CACHE.bak", "a//b", "é/.vite"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := ""
	segments:
		for _, seg := range strings.Split(p, "/") {
			for _, b := range blockedFolders {
				if strings.EqualFold(seg, b) {
					want = b
					break segments
				}
			}
		}
		if got := blockedFolderIn(p); got != want {
			t.Fatalf("blockedFolderIn(%q) = %q, want %q", p, got, want)
		}
	})
}
