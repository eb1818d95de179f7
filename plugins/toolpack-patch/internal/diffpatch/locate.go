package diffpatch

import (
	"fmt"
	"strings"
)

// Match levels, tried in order: a hunk is located at the strictest level that finds it.
const (
	levelExact      = iota // equal apart from a trailing CR
	levelTrailingWS        // trailing whitespace ignored
	levelAllWS             // leading/trailing whitespace ignored, inner runs collapsed
	numLevels
)

// windowMargin is how many lines around a failing spot a Window shows: enough to see the
// surrounding block without re-reading the whole file.
const windowMargin = 10

// maxPartialWork bounds the line comparisons spent looking for the best partial match of a
// failing hunk, so that a failure report on a huge file stays cheap.
const maxPartialWork = 20_000_000

// normalize returns s as compared at the given level.
func normalize(s string, level int) string {
	switch level {
	case levelExact:
		return strings.TrimSuffix(s, "\r")
	case levelTrailingWS:
		return strings.TrimRight(s, " \t\r\f\v")
	default:
		return strings.Join(strings.Fields(s), " ")
	}
}

// target is the current content of one file, split into lines, with lazily computed
// normalized copies for the fuzzy match levels.
type target struct {
	lines []string // without "\n"; a CRLF line keeps its "\r"
	norm  [numLevels][]string
}

func (t *target) level(l int) []string {
	if t.norm[l] == nil {
		n := make([]string, len(t.lines))
		for i, s := range t.lines {
			n[i] = normalize(s, l)
		}
		t.norm[l] = n
	}
	return t.norm[l]
}

// matchAt reports whether old (already normalized at level) matches the file at start.
func (t *target) matchAt(old []string, start, level int) bool {
	if start < 0 || start+len(old) > len(t.lines) {
		return false
	}
	fl := t.level(level)
	for i, o := range old {
		if fl[start+i] != o {
			return false
		}
	}
	return true
}

// matchesFrom returns every start position >= from where old matches at level.
func (t *target) matchesFrom(old []string, level, from int) []int {
	var out []int
	for s := max(from, 0); s+len(old) <= len(t.lines); s++ {
		if t.matchAt(old, s, level) {
			out = append(out, s)
		}
	}
	return out
}

// placement is where one hunk goes in the current file.
type placement struct {
	hunk  int // index in FilePatch.Hunks
	start int // 0-based index of the first old-side line (insertion point if n == 0)
	n     int // number of old-side lines
}

// locator locates the hunks of one file section.
type locator struct {
	t        *target
	file     string
	numbered bool // unified: hunks carry line numbers
	drift    int  // actual minus stated start of the last hunk located, for the next guess
}

// locate finds where hunk h (index i) applies, or explains why it cannot.
func (lc *locator) locate(i int, h *Hunk) (placement, *Failure) {
	oldRaw := h.oldLines()
	pl := placement{hunk: i, n: len(oldRaw)}
	nLines := len(lc.t.lines)
	fail := func(code, msg string, w *LineWindow) (placement, *Failure) {
		return pl, &Failure{File: lc.file, Hunk: i + 1, Code: code, Message: msg, Window: w}
	}
	// expected is the 0-based start the header claims, shifted by how far the previous
	// hunk had moved: a file edited above the patch's hunks shifts all of them alike.
	expected := -1
	if lc.numbered {
		expected = h.OldStart - 1
		if len(oldRaw) == 0 {
			expected = h.OldStart // "-5,0" means: insert after line 5
		}
		expected += lc.drift
	}

	// The begin-patch anchor narrows the search to what follows it.
	var anchors []int
	if !lc.numbered && h.Anchor != "" {
		anchors = lc.findAnchors(strings.Split(h.Anchor, "\n"))
		if len(anchors) == 0 {
			return fail(CodeContextMismatch, fmt.Sprintf("anchor line %s (the @@ line) not found in the file", quote(h.Anchor)), nil)
		}
	}

	if len(oldRaw) == 0 {
		// A pure insertion has no context to find: a unified hunk goes by its line number,
		// a begin-patch chunk after its anchor, or else at the end of the file.
		switch {
		case lc.numbered:
			if expected < 0 || expected > nLines {
				return fail(CodeContextMismatch, fmt.Sprintf("insertion after line %d, but the file has %d lines", h.OldStart, nLines), lc.window(nLines-1, 1))
			}
			pl.start = expected
		case len(anchors) > 1 && !h.AtEOF:
			return fail(CodeContextAmbiguous, fmt.Sprintf("anchor %s occurs at lines %s; make it unique", quote(h.Anchor), lineList(anchors, 1)), lc.window(anchors[0], 1))
		case len(anchors) == 1 && !h.AtEOF:
			pl.start = anchors[0] + 1
		default:
			pl.start = nLines
		}
		return pl, nil
	}

	for level := range numLevels {
		old := make([]string, len(oldRaw))
		for j, s := range oldRaw {
			old[j] = normalize(s, level)
		}
		var cands []int
		switch {
		case h.AtEOF:
			if s := nLines - len(old); lc.t.matchAt(old, s, level) {
				cands = []int{s}
			}
		case anchors != nil:
			cands = lc.afterAnchors(old, level, anchors)
		case expected >= 0 && lc.t.matchAt(old, expected, level):
			cands = []int{expected}
		default:
			cands = lc.t.matchesFrom(old, level, 0)
		}
		if len(cands) == 0 {
			continue
		}
		if len(cands) > 1 {
			best, ok := nearest(cands, expected)
			if !ok {
				how := "add more context lines"
				if !lc.numbered {
					how += " or an @@ anchor line that occurs once"
				}
				return fail(CodeContextAmbiguous, fmt.Sprintf("the %d context/removed lines of this hunk occur at lines %s; %s", len(old), lineList(cands, 1), how), lc.window(cands[0], len(old)))
			}
			cands = []int{best}
		}
		pl.start = cands[0]
		if lc.numbered {
			lc.drift = pl.start - (h.OldStart - 1)
		}
		return pl, nil
	}
	msg, w := lc.mismatchMessage(h, oldRaw, expected, anchors)
	return fail(CodeContextMismatch, msg, w)
}

// findAnchors returns the 0-based line of the last anchor for every way the anchor chain
// can be followed: each anchor line is searched (exactly, else ignoring whitespace) after
// the previous one.
func (lc *locator) findAnchors(anchors []string) []int {
	find := func(a string, from int) []int {
		for _, level := range []int{levelExact, levelAllWS} {
			if m := lc.t.matchesFrom([]string{normalize(a, level)}, level, from); len(m) > 0 {
				return m
			}
		}
		return nil
	}
	pos := find(anchors[0], 0)
	for _, a := range anchors[1:] {
		var next []int
		for _, p := range pos {
			if m := find(a, p+1); len(m) > 0 && !contains(next, m[0]) {
				next = append(next, m[0])
			}
		}
		pos = next
	}
	return pos
}

// afterAnchors returns the distinct first matches at or after each anchor position. The
// anchor line itself is included in the search because models often repeat it as the
// first context line.
func (lc *locator) afterAnchors(old []string, level int, anchors []int) []int {
	var out []int
	for _, a := range anchors {
		for s := a; s+len(old) <= len(lc.t.lines); s++ {
			if lc.t.matchAt(old, s, level) {
				if !contains(out, s) {
					out = append(out, s)
				}
				break
			}
		}
	}
	return out
}

// nearest picks the candidate strictly nearest to expected; ok is false when there is no
// expected line or two candidates are equally near.
func nearest(cands []int, expected int) (int, bool) {
	if expected < 0 {
		return 0, false
	}
	best, bestD, tie := -1, -1, false
	for _, c := range cands {
		d := c - expected
		if d < 0 {
			d = -d
		}
		switch {
		case bestD < 0 || d < bestD:
			best, bestD, tie = c, d, false
		case d == bestD:
			tie = true
		}
	}
	return best, !tie
}

// mismatchMessage explains a hunk that was found nowhere, using the place where most of
// its old-side lines match, and returns the window to re-read.
func (lc *locator) mismatchMessage(h *Hunk, oldRaw []string, expected int, anchors []int) (string, *LineWindow) {
	lines := lc.t.level(levelAllWS)
	old := make([]string, len(oldRaw))
	for j, s := range oldRaw {
		old[j] = normalize(s, levelAllWS)
	}
	lo, hi := 0, len(lines)-1
	if len(anchors) > 0 {
		lo = anchors[0]
	}
	if h.AtEOF {
		lo = max(len(lines)-len(old), 0)
	}
	if len(lines)*len(old) > maxPartialWork && expected >= 0 {
		lo, hi = max(expected-1000, 0), min(expected+1000, len(lines)-1)
	}
	best, bestScore := -1, 0
	for s := lo; s <= hi; s++ {
		score := 0
		for j := 0; j < len(old) && s+j < len(lines); j++ {
			if lines[s+j] == old[j] {
				score++
			}
		}
		better := score > bestScore
		if score == bestScore && score > 0 && expected >= 0 && abs(s-expected) < abs(best-expected) {
			better = true
		}
		if better {
			best, bestScore = s, score
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the %d context/removed lines of this hunk were not found", len(old))
	if expected >= 0 {
		fmt.Fprintf(&b, " at line %d or anywhere else in the file", h.OldStart)
	}
	switch {
	case h.AtEOF:
		b.WriteString(" at the end of the file")
	case len(anchors) > 0:
		fmt.Fprintf(&b, " after the anchor line %d", anchors[0]+1)
	}
	if bestScore == 0 {
		fmt.Fprintf(&b, "; none of them occurs in the file (expected first line %s)", quote(oldRaw[0]))
		if expected >= 0 {
			return b.String(), lc.window(expected, len(old))
		}
		if len(anchors) > 0 {
			return b.String(), lc.window(anchors[0], len(old))
		}
		return b.String(), nil
	}
	fmt.Fprintf(&b, "; closest match at line %d (%d of %d lines equal)", best+1, bestScore, len(old))
	for j := range old {
		if best+j >= len(lines) {
			fmt.Fprintf(&b, "; expected %s at line %d, but the file ends at line %d", quote(oldRaw[j]), best+j+1, len(lines))
			break
		}
		if lines[best+j] != old[j] {
			fmt.Fprintf(&b, "; line %d: expected %s, found %s", best+j+1, quote(oldRaw[j]), quote(strings.TrimSuffix(lc.t.lines[best+j], "\r")))
			break
		}
	}
	return b.String(), lc.window(best, len(old))
}

// window returns the 1-based range around n lines at 0-based start, with a margin, clamped
// to the file; nil for an empty file.
func (lc *locator) window(start, n int) *LineWindow {
	total := len(lc.t.lines)
	if total == 0 {
		return nil
	}
	w := &LineWindow{Start: start + 1 - windowMargin, End: start + max(n, 1) + windowMargin}
	w.Start = min(max(w.Start, 1), total)
	w.End = min(max(w.End, w.Start), total)
	return w
}

// lineList renders 0-based positions as 1-based line numbers, at most 10 of them.
func lineList(pos []int, base int) string {
	const maxShown = 10 // enough to show the pattern; the count says the rest
	var parts []string
	for i, p := range pos {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(pos)))
			break
		}
		parts = append(parts, fmt.Sprint(p+base))
	}
	return strings.Join(parts, ", ")
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
