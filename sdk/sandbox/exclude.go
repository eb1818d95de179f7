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

// Excluder is a set of exclude patterns compiled once for matching many
// paths, as MatchExclude would: a snapshot asks about every path of the
// sandbox, and a warm sandbox of a big app passes hundreds on every turn.
// Literal names are looked up by segment and "*.ext" patterns compared by
// suffix, so a path costs a pass over its segments, not one per pattern.
type Excluder struct {
	// segments are literal patterns without a slash: a segment equal to
	// one is left out.
	segments map[string]struct{}
	// suffixes are "*x" patterns (x literal, no slash): a segment ending
	// in x is left out.
	suffixes []string
	// runs are literal patterns with a slash: a leading run of segments
	// equal to one is left out.
	runs []string
	// globs are the other patterns, matched as MatchExclude does.
	globs []string
}

// NewExcluder compiles patterns (MatchExclude's).
func NewExcluder(patterns []string) *Excluder {
	x := &Excluder{}
	for _, pat := range patterns {
		pat = strings.Trim(pat, "/")
		switch suffix, star := strings.CutPrefix(pat, "*"); {
		case !strings.ContainsAny(pat, `*?[\`) && strings.IndexByte(pat, '/') < 0:
			if x.segments == nil {
				x.segments = map[string]struct{}{}
			}
			x.segments[pat] = struct{}{}
		case !strings.ContainsAny(pat, `*?[\`):
			x.runs = append(x.runs, pat)
		case star && !strings.ContainsAny(suffix, `*?[\/`):
			x.suffixes = append(x.suffixes, suffix)
		default:
			x.globs = append(x.globs, pat)
		}
	}
	return x
}

// Match reports whether p is left out by any of the patterns.
func (x *Excluder) Match(p string) bool {
	if x.segments != nil || x.suffixes != nil {
		for rest := p; ; {
			seg, tail, more := strings.Cut(rest, "/")
			if _, ok := x.segments[seg]; ok {
				return true
			}
			for _, s := range x.suffixes {
				if strings.HasSuffix(seg, s) {
					return true
				}
			}
			if !more {
				break
			}
			rest = tail
		}
	}
	for _, run := range x.runs {
		if p == run || len(p) > len(run) && p[len(run)] == '/' && p[:len(run)] == run {
			return true
		}
	}
	for _, pat := range x.globs {
		if matchPattern(p, pat) {
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
