package outline

import (
	"bytes"
	"strings"
)

// cssFrame is one open "{" of a style sheet.
type cssFrame struct {
	children bool // whether rules inside it are outlined (not in @keyframes, @font-face)
	emitted  bool // whether the block itself produced a symbol (counts toward Depth)
	root     bool // a :root rule, whose custom properties are outlined
}

// outlineCSS outlines CSS and (with scss) SCSS: every rule's selector list,
// at-rule blocks, custom properties of :root, and SCSS variables and mixins.
// It accumulates the "prelude" text before each "{" or ";" and classifies
// it there; strings, comments and #{...} interpolation never end a prelude.
func outlineCSS(src []byte, scss bool, c *collector) {
	var stack []cssFrame
	n := len(src)
	line := 1
	preStart, preLine, paren := -1, 0, 0
	depth := 0 // open frames that produced a symbol
	mark := func(i int) {
		if preStart < 0 {
			preStart, preLine = i, line
		}
	}
	for i := 0; i < n && !c.full(); i++ {
		ch := src[i]
		switch {
		case ch == '\n':
			line++
		case isSpace(ch):
		case ch == '/' && i+1 < n && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				end = n - i - 2
			}
			line += bytes.Count(src[i:i+2+end], []byte{'\n'})
			i += end + 3
		case scss && ch == '/' && i+1 < n && src[i+1] == '/' && paren == 0:
			for i < n && src[i] != '\n' {
				i++
			}
			i-- // let the loop see the newline
		case ch == '"' || ch == '\'':
			mark(i)
			for i++; i < n && src[i] != ch && src[i] != '\n'; i++ {
				if src[i] == '\\' && i+1 < n && src[i+1] != '\n' {
					i++
				}
			}
			if i < n && src[i] == '\n' {
				i--
			}
		case scss && ch == '#' && i+1 < n && src[i+1] == '{':
			mark(i)
			for i < n && src[i] != '}' {
				if src[i] == '\n' {
					line++
				}
				i++
			}
		case ch == '(':
			mark(i)
			paren++
		case ch == ')':
			if paren > 0 {
				paren--
			}
		case ch == '{':
			var parent *cssFrame
			if len(stack) > 0 {
				parent = &stack[len(stack)-1]
			}
			f := cssFrame{}
			if preStart >= 0 && (parent == nil || parent.children) {
				f = cssBlock(string(src[preStart:i]), preLine, depth, c)
			}
			if f.emitted {
				depth++
			}
			stack = append(stack, f)
			preStart, paren = -1, 0
		case ch == '}':
			if len(stack) > 0 {
				if stack[len(stack)-1].emitted {
					depth--
				}
				stack = stack[:len(stack)-1]
			}
			preStart, paren = -1, 0
		case ch == ';' && paren == 0:
			if preStart >= 0 {
				inRoot := len(stack) > 0 && stack[len(stack)-1].root
				cssStatement(string(src[preStart:i]), preLine, len(stack) == 0, inRoot, scss, c)
			}
			preStart = -1
		default:
			mark(i)
		}
	}
}

// cssBlock classifies the prelude of a "{" and returns the frame it opens.
func cssBlock(pre string, line, depth int, c *collector) cssFrame {
	pre = strings.TrimSpace(pre)
	if pre == "" {
		return cssFrame{}
	}
	if pre[0] != '@' {
		c.add(pre, "selector", line, depth)
		return cssFrame{children: true, emitted: true, root: pre == ":root"}
	}
	kw, rest, _ := strings.Cut(pre[1:], " ")
	kw = strings.ToLower(strings.TrimSpace(kw))
	rest = strings.TrimSpace(rest)
	switch {
	case kw == "media" || kw == "supports" || kw == "container" || kw == "layer":
		c.add(pre, kw, line, depth)
		return cssFrame{children: true, emitted: true}
	case strings.HasSuffix(kw, "keyframes"): // also -webkit-keyframes
		c.add(rest, "keyframes", line, depth)
		return cssFrame{emitted: true}
	case kw == "font-face" || kw == "page":
		c.add(pre, kw, line, depth)
		return cssFrame{emitted: true}
	case kw == "mixin" || kw == "function":
		name, _, _ := strings.Cut(rest, "(")
		c.add(name, kw, line, depth)
		return cssFrame{emitted: true}
	case kw == "include" || kw == "if" || kw == "else" || kw == "each" || kw == "for" ||
		kw == "while" || kw == "at-root" || kw == "scope" || kw == "starting-style":
		// Control blocks hold rules but are not worth a line of their own.
		return cssFrame{children: true}
	}
	return cssFrame{}
}

// cssStatement classifies a prelude ended by ";": a custom property of
// :root, a top-level SCSS variable or an @import/@use.
func cssStatement(pre string, line int, topLevel, inRoot, scss bool, c *collector) {
	pre = strings.TrimSpace(pre)
	switch {
	case inRoot && strings.HasPrefix(pre, "--"):
		name, _, _ := strings.Cut(pre, ":")
		c.add(name, "custom-property", line, 1)
	case topLevel && scss && strings.HasPrefix(pre, "$"):
		name, _, ok := strings.Cut(pre, ":")
		if ok {
			c.add(name, "var", line, 0)
		}
	case topLevel && (strings.HasPrefix(pre, "@import") || strings.HasPrefix(pre, "@use") ||
		strings.HasPrefix(pre, "@forward")):
		_, rest, _ := strings.Cut(pre, " ")
		c.add(strings.Trim(strings.TrimSpace(rest), `"'`), "import", line, 0)
	}
}
