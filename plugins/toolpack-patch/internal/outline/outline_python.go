package outline

import (
	"bytes"
	"strings"
)

// pyState carries what a Python line leaves open into the next one.
type pyState struct {
	triple  byte // quote of an open triple-quoted string, or 0
	bracket int  // open ( [ {
	cont    bool // line ended with a backslash
}

// outlinePython outlines def, async def and class with their nesting
// (a def directly in a class is a method), top-level UPPER_CASE constants
// and imports. Only lines that start a statement are looked at: lines inside
// triple-quoted strings, open brackets or backslash continuations are not.
func outlinePython(src []byte, c *collector) {
	type block struct {
		indent int
		class  bool
	}
	var blocks []block
	var st pyState
	forEachLine(src, func(l []byte, n int) bool {
		startsStmt := st.triple == 0 && st.bracket == 0 && !st.cont
		st.scan(l)
		if !startsStmt {
			return !c.full()
		}
		indent, rest := indentWidth(l)
		if len(rest) == 0 || rest[0] == '#' {
			return true
		}
		for len(blocks) > 0 && blocks[len(blocks)-1].indent >= indent {
			blocks = blocks[:len(blocks)-1]
		}
		kw := identAt(rest)
		body := bytes.TrimLeft(rest[len(kw):], " \t")
		if kw == "async" {
			if identAt(body) != "def" {
				return true
			}
			kw = "def"
			body = bytes.TrimLeft(body[3:], " \t")
		}
		switch {
		case (kw == "def" || kw == "class") && len(body) > 0 && len(body) < len(rest):
			name := identAt(body)
			if name == "" {
				return true
			}
			kind := "class"
			if kw == "def" {
				kind = "function"
				if len(blocks) > 0 && blocks[len(blocks)-1].class {
					kind = "method"
				}
			}
			c.add(name, kind, n, len(blocks))
			blocks = append(blocks, block{indent: indent, class: kw == "class"})
		case indent == 0 && (kw == "import" || kw == "from"):
			if mod := pyDotted(body); mod != "" {
				c.add(mod, "import", n, 0)
			}
		case indent == 0 && pyConstName(kw) && pyAssigns(body):
			c.add(kw, "const", n, 0)
		}
		return !c.full()
	})
}

// scan updates the state with one line, skipping strings and comments.
func (st *pyState) scan(l []byte) {
	st.cont = false
	for i := 0; i < len(l); i++ {
		ch := l[i]
		if st.triple != 0 {
			if ch == '\\' {
				i++
			} else if ch == st.triple && i+2 < len(l) && l[i+1] == ch && l[i+2] == ch {
				st.triple = 0
				i += 2
			}
			continue
		}
		switch ch {
		case '#':
			return
		case '\\':
			if i == len(l)-1 {
				st.cont = true
			}
			i++
		case '\'', '"':
			if i+2 < len(l) && l[i+1] == ch && l[i+2] == ch {
				st.triple = ch
				i += 2
				continue
			}
			for i++; i < len(l) && l[i] != ch; i++ {
				if l[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			st.bracket++
		case ')', ']', '}':
			if st.bracket > 0 {
				st.bracket--
			}
		}
	}
}

// pyConstName reports UPPER_CASE names with at least one letter.
func pyConstName(s string) bool {
	letter := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch >= 'A' && ch <= 'Z':
			letter = true
		case ch == '_' || isDigit(ch) && i > 0:
		default:
			return false
		}
	}
	return letter
}

// pyAssigns reports whether the rest of a statement after a name is an
// assignment ("= x" or ": T = x"), not a comparison.
func pyAssigns(b []byte) bool {
	if len(b) > 0 && b[0] == ':' {
		e := bytes.IndexByte(b, '=')
		if e < 0 {
			return true // annotated declaration without value: still a constant
		}
		b = b[e:]
	}
	return len(b) > 0 && b[0] == '=' && (len(b) == 1 || b[1] != '=')
}

// pyDotted returns the dotted module name at the start of b.
func pyDotted(b []byte) string {
	i := 0
	for i < len(b) && (isIdentByte(b[i]) || b[i] == '.') {
		i++
	}
	return strings.TrimSpace(string(b[:i]))
}
