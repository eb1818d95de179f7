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
	for _, pat := range patterns {
		if matchPattern(p, strings.Trim(pat, "/")) {
			return true
		}
	}
	return false
}

// matchPattern is MatchExclude for one pattern, without allocating: it runs
// for every path of every snapshot. A pattern without glob characters is
// compared as text (path.Match would say the same).
func matchPattern(p, pat string) bool {
	if !strings.ContainsAny(pat, `*?[\`) {
		if strings.IndexByte(pat, '/') < 0 {
			// Only a segment can equal it (a leading run of two or more
			// segments holds a slash).
			for rest := p; ; {
				seg, tail, more := strings.Cut(rest, "/")
				if seg == pat {
					return true
				}
				if !more {
					return false
				}
				rest = tail
			}
		}
		// Only a leading run of segments can equal it.
		return p == pat || len(p) > len(pat) && p[len(pat)] == '/' && p[:len(pat)] == pat
	}
	if suffix, ok := strings.CutPrefix(pat, "*"); ok && !strings.ContainsAny(suffix, `*?[\/`) {
		// "*.ext": a segment that ends so ("*" never spans a slash).
		for rest := p; ; {
			seg, tail, more := strings.Cut(rest, "/")
			if strings.HasSuffix(seg, suffix) {
				return true
			}
			if !more {
				return false
			}
			rest = tail
		}
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if ok, _ := path.Match(pat, p[start:i]); ok {
				return true
			}
			if ok, _ := path.Match(pat, p[:i]); ok {
				return true
			}
			start = i + 1
		}
	}
	return false
}
