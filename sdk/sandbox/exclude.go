package sandbox

import (
	"path"
	"strings"
)

// MatchExclude reports whether a workspace path is left out by any pattern.
// A pattern is matched (path.Match syntax) against every segment of the path
// and against every leading run of segments, so "node_modules" drops the
// folder wherever it is, "*.tsbuildinfo" drops such files anywhere and
// "src/gen" drops that one folder.
func MatchExclude(p string, patterns []string) bool {
	if len(patterns) == 0 {
		return false
	}
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
