package outline

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// DefaultMaxSymbols is the outline size used when Outline is given max <= 0:
// enough to outline any hand-written file of an app while keeping the index
// of a 10,000-file tree within a model's reach.
const DefaultMaxSymbols = 200

// maxNameLen caps a symbol name (a long selector list, a heading paragraph):
// an outline names things, it does not quote them.
const maxNameLen = 120

// Symbol is one outline entry.
type Symbol struct {
	Name string `json:"name"`
	// Kind is what the symbol is: function, method, class, interface, type,
	// enum, const, var, component, export, import, namespace, struct (Go),
	// selector, media, keyframes, font-face, custom-property, mixin (CSS),
	// id, script, link, heading, title (HTML, Markdown), key (JSON, YAML,
	// TOML), table (TOML).
	Kind string `json:"kind"`
	// Line is the 1-based line the symbol is defined on.
	Line int `json:"line"`
	// Depth is the nesting: methods in a class are 1, JSON keys of a
	// top-level key are 1, an h2 heading is 1.
	Depth int `json:"depth,omitempty"`
}

// Outline returns the symbols of content in language lang (as named by
// Language), in file order, at most max entries (max <= 0: DefaultMaxSymbols).
// Unknown languages and "text" have no outline. It never panics on any input
// and runs in linear time: it is called on every file of a 10,000-file tree.
func Outline(lang string, content []byte, max int) []Symbol {
	if max <= 0 {
		max = DefaultMaxSymbols
	}
	c := &collector{max: max}
	switch lang {
	case "typescript", "tsx", "javascript", "jsx":
		outlineJS(content, lang == "tsx" || lang == "jsx", c)
	case "css":
		outlineCSS(content, false, c)
	case "scss":
		outlineCSS(content, true, c)
	case "html":
		outlineHTML(content, c)
	case "json":
		outlineJSON(content, c)
	case "go":
		outlineGo(content, c)
	case "python":
		outlinePython(content, c)
	case "markdown":
		outlineMarkdown(content, c)
	case "yaml":
		outlineYAML(content, c)
	case "toml":
		outlineTOML(content, c)
	case "shell":
		outlineShell(content, c)
	}
	return c.syms
}

// collector gathers symbols up to a limit; scanners poll full() to stop early.
type collector struct {
	syms []Symbol
	max  int
}

func (c *collector) full() bool { return len(c.syms) >= c.max }

// add records a symbol with a cleaned-up name; empty names are dropped.
func (c *collector) add(name, kind string, line, depth int) {
	if c.full() {
		return
	}
	name = cleanName(name)
	if name == "" {
		return
	}
	c.syms = append(c.syms, Symbol{Name: name, Kind: kind, Line: line, Depth: depth})
}

// cleanName collapses whitespace, caps the length at maxNameLen (on a rune
// boundary) and makes the name valid UTF-8 so it survives JSON encoding.
func cleanName(s string) string {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "\t\r\n\f\v") || strings.Contains(s, "  ") {
		s = strings.Join(strings.Fields(s), " ")
	}
	if len(s) > maxNameLen {
		cut := maxNameLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// lineCounter turns increasing byte offsets into 1-based line numbers in
// amortised linear time, for scanners that do not count lines themselves.
type lineCounter struct {
	src  []byte
	pos  int
	line int
}

func newLineCounter(src []byte) *lineCounter { return &lineCounter{src: src, line: 1} }

// at returns the line of offset off; offsets must not decrease between calls.
func (lc *lineCounter) at(off int) int {
	if off > len(lc.src) {
		off = len(lc.src)
	}
	if off > lc.pos {
		lc.line += bytes.Count(lc.src[lc.pos:off], []byte{'\n'})
		lc.pos = off
	}
	return lc.line
}

// forEachLine calls fn with every line (without its "\n" or trailing "\r")
// and its 1-based number until fn returns false.
func forEachLine(src []byte, fn func(line []byte, n int) bool) {
	n := 1
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		var l []byte
		if i < 0 {
			l, src = src, nil
		} else {
			l, src = src[:i], src[i+1:]
		}
		if len(l) > 0 && l[len(l)-1] == '\r' {
			l = l[:len(l)-1]
		}
		if !fn(l, n) {
			return
		}
		n++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// isIdentByte reports bytes that may continue an identifier; any non-ASCII
// byte counts so that Unicode names stay whole without decoding runes.
func isIdentByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}

// indentWidth measures leading blanks, a tab counting to the next multiple
// of 8 as Python does, and returns the width and the rest of the line.
func indentWidth(l []byte) (int, []byte) {
	w, i := 0, 0
	for ; i < len(l); i++ {
		switch l[i] {
		case ' ':
			w++
		case '\t':
			w = w/8*8 + 8
		default:
			return w, l[i:]
		}
	}
	return w, nil
}

// identAt returns the identifier starting at l[0] ("" if none).
func identAt(l []byte) string {
	i := 0
	for i < len(l) && (isIdentByte(l[i]) && (i > 0 || !isDigit(l[i]))) {
		i++
	}
	return string(l[:i])
}
