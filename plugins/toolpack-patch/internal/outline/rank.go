package outline

import (
	"bytes"
	"container/heap"
	"math"
	"sort"
	"strings"
)

// Ranking constants. They are the usual BM25 choices and small hand-tuned
// boosts; what matters is their order, not their exact values.
const (
	// DefaultWindowLines is the window height when Rank is given <= 0:
	// a function or a component with a little context around it.
	DefaultWindowLines = 40
	// maxQueryTerms bounds the query; a longer one is a paragraph, and its
	// first terms carry the intent.
	maxQueryTerms = 16
	// bm25K1 saturates term frequency: the tenth "login" in a window adds
	// little over the third.
	bm25K1 = 1.2
	// partialWeight counts a word that differs from a term only by a short
	// suffix ("handle" for "handler", "buttons" for "button").
	partialWeight = 0.5
	// defBoost multiplies the weight of a line that defines a symbol whose
	// name holds a term: the definition is the place to show.
	defBoost = 2.0
	// pathWeight is a path match's share of a term's idf, added to every
	// window of the file.
	pathWeight = 0.75
	// binarySniff is how much of a file is checked for NUL bytes.
	binarySniff = 8000
	// rankOutlineMax is the outline size used to find definitions.
	rankOutlineMax = 2000
)

// stopWords are common English words that say nothing about code.
var stopWords = map[string]bool{
	"the": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "with": true, "is": true, "are": true, "be": true, "it": true,
	"its": true, "this": true, "that": true, "these": true, "those": true, "where": true,
	"what": true, "which": true, "who": true, "how": true, "when": true, "why": true,
	"does": true, "do": true, "did": true, "from": true, "by": true, "at": true, "as": true,
	"into": true, "me": true, "my": true, "we": true, "our": true, "you": true, "your": true,
	"all": true, "any": true, "some": true, "can": true, "should": true, "would": true,
	"could": true, "will": true, "there": true, "here": true, "not": true, "no": true,
	"but": true, "if": true, "then": true, "so": true, "about": true, "please": true,
	"was": true, "were": true, "has": true, "have": true, "had": true, "been": true,
}

// Doc is one file offered for ranking.
type Doc struct {
	Path    string
	Content []byte
}

// Window is a relevant span of a file.
type Window struct {
	Path      string  `json:"path"`
	StartLine int     `json:"start_line"` // 1-based
	EndLine   int     `json:"end_line"`   // 1-based, inclusive
	Score     float64 `json:"score"`
	Content   string  `json:"content"` // the lines, "\n"-separated, without a final newline
}

// Terms returns the search terms of a query: identifiers split on
// camelCase, snake_case, kebab-case, dots and slashes, lower-cased, without
// stop words, one-letter terms and duplicates, at most maxQueryTerms.
func Terms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	splitWords([]byte(query), func(w []byte) bool {
		t := strings.ToLower(string(w))
		if len(t) < 2 || stopWords[t] || seen[t] {
			return true
		}
		seen[t] = true
		terms = append(terms, t)
		return len(terms) < maxQueryTerms
	})
	return terms
}

// splitWords calls fn with each word of s: runs of letters and digits,
// further split at lower→upper case changes (handleLogin → handle, Login)
// and before the last capital of an acronym (HTTPServer → HTTP, Server).
// Bytes >= 0x80 count as lower-case letters. It stops when fn returns false.
func splitWords(s []byte, fn func([]byte) bool) {
	i, n := 0, len(s)
	for i < n {
		for i < n && !isWordByte(s[i]) {
			i++
		}
		start := i
		for i < n && isWordByte(s[i]) {
			if i > start {
				prev, cur := s[i-1], s[i]
				split := isUpper(cur) && (isLower(prev) || isDigit(prev)) ||
					isUpper(prev) && isUpper(cur) && i+1 < n && isLower(s[i+1])
				if split {
					if !fn(s[start:i]) {
						return
					}
					start = i
				}
			}
			i++
		}
		if i > start && !fn(s[start:i]) {
			return
		}
	}
}

func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c >= 0x80 }
func isUpper(c byte) bool    { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool    { return c >= 'a' && c <= 'z' || c >= 0x80 }

// matchWeight scores word w against lower-case term t: 1 for the same word
// (ignoring ASCII case), partialWeight when one is the other plus a suffix
// of at most 3 bytes and the shorter has at least 4, else 0.
func matchWeight(w []byte, t string) float64 {
	short := min(len(w), len(t))
	if short < 2 || len(w)-len(t) > 3 || len(t)-len(w) > 3 {
		return 0
	}
	for i := 0; i < short; i++ {
		c := w[i]
		if isUpper(c) {
			c += 'a' - 'A'
		}
		if c != t[i] {
			return 0
		}
	}
	if len(w) == len(t) {
		return 1
	}
	if short >= 4 {
		return partialWeight
	}
	return 0
}

// lineHit is the weight of each query term on one line.
type lineHit struct {
	line int
	w    [maxQueryTerms]float32
}

// docHits is what the scan found in one document.
type docHits struct {
	doc     int
	path    string
	hits    []lineHit // by line
	pathW   [maxQueryTerms]float64
	lines   int
	offsets []int // start offset of each line, filled when windows are cut
	// cum[k*T+t] is the weight of term t summed over hits[:k], so that a
	// window's term frequencies cost two binary searches, not a loop.
	cum []float64
	// taken are the windows already picked in this file, by start line.
	taken []span
	// boosted is set once definition lines have been looked for.
	boosted bool
}

// span is a picked window's lines.
type span struct{ start, end int }

// scanDoc finds the term weights of every line of content; it returns nil
// hits when nothing matched. scratch is reused between documents.
func scanDoc(content []byte, terms []string, scratch []lineHit) ([]lineHit, int) {
	hits := scratch[:0]
	line := 0
	forEachLine(content, func(l []byte, n int) bool {
		line = n
		var h lineHit
		any := false
		splitWords(l, func(w []byte) bool {
			for t, term := range terms {
				if m := matchWeight(w, term); m > 0 {
					h.w[t] += float32(m)
					any = true
				}
			}
			return true
		})
		if any {
			h.line = n
			hits = append(hits, h)
		}
		return true
	})
	return hits, max(line, 1)
}

// Rank returns the windows most relevant to query across docs, best first,
// whose total Content bytes fit within budget (a window that would not fit
// is skipped; a later, smaller one may fit), each window at most
// windowLines lines (DefaultWindowLines when <= 0), windows of one file
// never overlapping. Empty query, no terms or no hits give an empty result.
//
// Scoring: BM25 over the window (term frequency in the window's lines ×
// idf over files), definition lines and path matches boosted, scaled by the
// share of query terms the window covers. Ties go to path, then line.
func Rank(query string, docs []Doc, budget int, windowLines int) []Window {
	terms := Terms(query)
	if len(terms) == 0 || budget <= 0 || len(docs) == 0 {
		return nil
	}
	if windowLines <= 0 {
		windowLines = DefaultWindowLines
	}
	df := make([]int, len(terms))
	var found []*docHits
	var scratch []lineHit
	for i, d := range docs {
		if bytes.IndexByte(d.Content[:min(len(d.Content), binarySniff)], 0) >= 0 {
			continue
		}
		hits, lines := scanDoc(d.Content, terms, scratch)
		scratch = hits
		dh := &docHits{doc: i, path: d.Path, lines: lines}
		pathHit := false
		splitWords([]byte(d.Path), func(w []byte) bool {
			for t, term := range terms {
				if m := matchWeight(w, term); m > dh.pathW[t] {
					dh.pathW[t] = m
					pathHit = true
				}
			}
			return true
		})
		if len(hits) == 0 && !pathHit {
			continue
		}
		dh.hits = append([]lineHit(nil), hits...)
		for t := range terms {
			in := dh.pathW[t] > 0
			for k := 0; k < len(hits) && !in; k++ {
				in = hits[k].w[t] > 0
			}
			if in {
				df[t]++
			}
		}
		found = append(found, dh)
	}
	if len(found) == 0 {
		return nil
	}
	idf := make([]float64, len(terms))
	for t := range terms {
		N, n := float64(len(docs)), float64(df[t])
		idf[t] = math.Log(1 + (N-n+0.5)/(n+0.5))
	}
	r := &ranker{docs: docs, terms: terms, idf: idf, win: windowLines}
	for _, dh := range found {
		r.sums(dh)
		r.candidates(dh)
	}
	return r.pick(budget)
}

// ranker holds the state of one Rank call.
type ranker struct {
	docs  []Doc
	terms []string
	idf   []float64
	win   int
	cands candHeap
}

// sums fills the document's prefix sums of term weights.
func (r *ranker) sums(dh *docHits) {
	T := len(r.terms)
	if dh.cum == nil {
		dh.cum = make([]float64, (len(dh.hits)+1)*T)
	}
	for k, h := range dh.hits {
		for t := 0; t < T; t++ {
			dh.cum[(k+1)*T+t] = dh.cum[k*T+t] + float64(h.w[t])
		}
	}
}

// boostable reports whether definition lines could raise the document's
// scores, which needs an outline, hence a known language and some hits.
func (r *ranker) boostable(dh *docHits) bool {
	lang := Language(dh.path)
	return len(dh.hits) > 0 && lang != "" && lang != "text"
}

// boostDefinitions multiplies the weights of lines that define a symbol
// whose name matches a term. It outlines the file, the costliest step of
// ranking, which is why pick calls it only for files that reach the top.
func (r *ranker) boostDefinitions(dh *docHits) {
	if dh.boosted {
		return
	}
	dh.boosted = true
	if !r.boostable(dh) {
		return
	}
	d := r.docs[dh.doc]
	lang := Language(d.Path)
	defs := map[int]bool{}
	for _, s := range Outline(lang, d.Content, rankOutlineMax) {
		if s.Kind == "import" {
			continue
		}
		splitWords([]byte(s.Name), func(w []byte) bool {
			for _, term := range r.terms {
				if matchWeight(w, term) > 0 {
					defs[s.Line] = true
					return false
				}
			}
			return true
		})
	}
	if len(defs) == 0 {
		return
	}
	for k := range dh.hits {
		if defs[dh.hits[k].line] {
			for t := range r.terms {
				dh.hits[k].w[t] *= defBoost
			}
		}
	}
	r.sums(dh)
}

// candidates adds one window centred on each hit line of the document (or,
// for a file that matched by path only, its first lines).
func (r *ranker) candidates(dh *docHits) {
	add := func(centre int) {
		start := max(1, min(centre-r.win/2, dh.lines-r.win+1))
		end := min(dh.lines, start+r.win-1)
		c := &cand{dh: dh, centre: centre, start: start, end: end, exact: !r.boostable(dh)}
		c.score = r.score(c)
		if !c.exact {
			// Boosting at most multiplies every line weight by defBoost,
			// and BM25 is concave, so defBoost × the plain score bounds
			// the boosted one: pick resolves it when it reaches the top.
			c.score *= defBoost
		}
		r.cands = append(r.cands, c)
	}
	if len(dh.hits) == 0 {
		add(1)
		return
	}
	lastStart := -1
	for _, h := range dh.hits {
		start := max(1, min(h.line-r.win/2, dh.lines-r.win+1))
		if start == lastStart { // clamped at the file's end: same window
			continue
		}
		lastStart = start
		add(h.line)
	}
}

// score is BM25 of the window's lines plus the path bonus, scaled by the
// share of terms covered.
func (r *ranker) score(c *cand) float64 {
	hits, T := c.dh.hits, len(r.terms)
	lo := sort.Search(len(hits), func(k int) bool { return hits[k].line >= c.start })
	hi := sort.Search(len(hits), func(k int) bool { return hits[k].line > c.end })
	var tf [maxQueryTerms]float64
	if hi > lo {
		for t := 0; t < T; t++ {
			tf[t] = c.dh.cum[hi*T+t] - c.dh.cum[lo*T+t]
		}
	}
	score, covered := 0.0, 0
	for t := range r.terms {
		if tf[t] > 0 {
			score += r.idf[t] * tf[t] * (bm25K1 + 1) / (tf[t] + bm25K1)
		}
		score += r.idf[t] * pathWeight * c.dh.pathW[t]
		if tf[t] > 0 || c.dh.pathW[t] > 0 {
			covered++
		}
	}
	return score * (0.5 + 0.5*float64(covered)/float64(len(r.terms)))
}

// pick takes the best candidates while the budget lasts. A candidate that
// overlaps a window already taken in its file is cut to the free gap around
// its centre line, re-scored (never higher) and put back; one whose score is
// still a bound is resolved and put back. Both checks that can drop a
// candidate (overlap, size) come before resolving, so files that never make
// it into the result are never outlined.
func (r *ranker) pick(budget int) []Window {
	heap.Init(&r.cands)
	var out []Window
	for r.cands.Len() > 0 && budget > 0 {
		c := heap.Pop(&r.cands).(*cand)
		// The picked windows around the centre line bound the free gap.
		taken := c.dh.taken
		k := sort.Search(len(taken), func(k int) bool { return taken[k].end >= c.centre })
		lo, hi := 1, c.dh.lines
		if k > 0 {
			lo = taken[k-1].end + 1
		}
		if k < len(taken) {
			if taken[k].start <= c.centre {
				continue // its best line is already shown
			}
			hi = taken[k].start - 1
		}
		if c.start < lo || c.end > hi {
			c.start, c.end = max(c.start, lo), min(c.end, hi)
			r.rescore(c)
			heap.Push(&r.cands, c)
			continue
		}
		text := r.lines(c)
		if windowLen(text) > budget {
			continue
		}
		if !c.exact {
			r.boostDefinitions(c.dh)
			c.exact = true
			r.rescore(c)
			heap.Push(&r.cands, c)
			continue
		}
		content := normalizeEOL(text)
		budget -= len(content)
		out = append(out, Window{Path: c.dh.path, StartLine: c.start, EndLine: c.end, Score: c.score, Content: content})
		c.dh.taken = append(c.dh.taken, span{})
		copy(c.dh.taken[k+1:], c.dh.taken[k:])
		c.dh.taken[k] = span{c.start, c.end}
	}
	return out
}

// rescore recomputes a candidate's score, as a bound while it is not exact.
func (r *ranker) rescore(c *cand) {
	c.score = r.score(c)
	if !c.exact {
		c.score *= defBoost
	}
}

// lines returns the raw bytes of the candidate's lines, without the final
// line ending.
func (r *ranker) lines(c *cand) []byte {
	src := r.docs[c.dh.doc].Content
	if c.dh.offsets == nil {
		c.dh.offsets = append(make([]int, 0, c.dh.lines), 0)
		for i, b := range src {
			if b == '\n' {
				c.dh.offsets = append(c.dh.offsets, i+1)
			}
		}
	}
	off := c.dh.offsets
	from := off[min(c.start-1, len(off)-1)]
	to := len(src)
	if c.end < len(off) {
		to = off[c.end] - 1 // before the "\n" ending line c.end
	}
	return src[from:max(from, to)]
}

// windowLen is len(normalizeEOL(s)) without building it.
func windowLen(s []byte) int {
	if bytes.IndexByte(s, '\r') < 0 {
		return len(s)
	}
	n := len(s) - bytes.Count(s, []byte("\r\n"))
	if s[len(s)-1] == '\r' {
		n--
	}
	return n
}

// normalizeEOL turns CRLF line endings into "\n" and drops a final "\r",
// so a window reads the same whichever editor saved the file.
func normalizeEOL(s []byte) string {
	if bytes.IndexByte(s, '\r') < 0 {
		return string(s)
	}
	return strings.TrimSuffix(strings.ReplaceAll(string(s), "\r\n", "\n"), "\r")
}

// cand is a candidate window.
type cand struct {
	dh         *docHits
	centre     int
	start, end int
	score      float64
	exact      bool // score is final, not an upper bound
}

// candHeap orders candidates best first: score, then path, then line.
type candHeap []*cand

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.score != b.score {
		return a.score > b.score
	}
	if a.exact != b.exact { // resolve a bound before taking an equal exact score
		return !a.exact
	}
	if a.dh.path != b.dh.path {
		return a.dh.path < b.dh.path
	}
	if a.dh.doc != b.dh.doc { // the same path offered twice
		return a.dh.doc < b.dh.doc
	}
	return a.start < b.start
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(*cand)) }
func (h *candHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
