package outline

import "unicode"

// The JS/TS outline is two passes: the tokenizer of lex_jsts.go, then a
// walk over the tokens with a stack of brace contexts that recognises
// declarations at statement starts (module and namespace bodies) and
// methods at member starts (class bodies), ignoring everything nested in
// function bodies, object literals and types.

// jsLookahead bounds every forward look of the declaration walk (matching a
// parameter list, finding "=>"), which keeps Outline linear even on
// pathological input; real declaration headers are far shorter.
const jsLookahead = 256

type jsCtxKind uint8

const (
	ctxBlock jsCtxKind = iota // function body, object literal, type: nothing to outline
	ctxTop                    // module or namespace body: statements
	ctxClass                  // class body: members
)

type jsCtx struct {
	kind  jsCtxKind
	depth int // Depth of the symbols declared directly inside
	paren int // paren depth when the brace opened
}

// jsWalker walks the tokens of one file.
type jsWalker struct {
	src  []byte
	toks []jsTok
	jsx  bool
	c    *collector
}

func (w *jsWalker) text(i int) string {
	if i < 0 || i >= len(w.toks) {
		return ""
	}
	t := w.toks[i]
	return string(w.src[t.start:t.end])
}

func (w *jsWalker) is(i int, s string) bool {
	if i < 0 || i >= len(w.toks) {
		return false
	}
	t := w.toks[i]
	return t.kind != jsString && int(t.end-t.start) == len(s) && string(w.src[t.start:t.end]) == s
}

func (w *jsWalker) ident(i int) bool { return i >= 0 && i < len(w.toks) && w.toks[i].kind == jsIdent }

// continues reports whether a token ends an unfinished expression, so that a
// line starting after it is no new statement (no automatic semicolon).
func (w *jsWalker) continues(i int) bool {
	if i < 0 {
		return false
	}
	t := w.toks[i]
	if t.kind == jsTmplOpen {
		return true
	}
	if t.kind != jsPunct {
		return false
	}
	switch w.src[t.start] {
	case ')', ']', '}', ';':
		return false
	}
	return true
}

func outlineJS(src []byte, jsx bool, c *collector) {
	w := &jsWalker{src: src, toks: jsTokenize(src), jsx: jsx, c: c}
	w.walk()
}

func (w *jsWalker) walk() {
	stack := []jsCtx{{kind: ctxTop}}
	paren := 0
	pending, pendingDepth, pendingParen, angle := ctxBlock, 0, 0, 0
	handled := -1 // tokens up to here were consumed by a declaration header
	for i := 0; i < len(w.toks) && !w.c.full(); i++ {
		t := w.toks[i]
		top := stack[len(stack)-1]
		switch t.kind {
		case jsTmplOpen:
			paren++
			continue
		case jsTmplClose:
			if paren > top.paren {
				paren--
			}
			continue
		case jsPunct:
			switch w.src[t.start] {
			case '(', '[':
				paren++
			case ')', ']':
				if paren > top.paren {
					paren--
				}
			case '<':
				angle++
			case '>':
				if angle > 0 {
					angle--
				}
			case ';':
				if paren == top.paren {
					pending = ctxBlock
				}
			case '{':
				ctx := jsCtx{kind: ctxBlock, paren: paren}
				// Braces inside the header's parentheses or type arguments
				// (extends Base<{ a: T }>) are not the body.
				if pending != ctxBlock && paren == pendingParen && angle == 0 {
					ctx.kind, ctx.depth = pending, pendingDepth
					pending = ctxBlock
				}
				stack = append(stack, ctx)
				continue
			case '}':
				if len(stack) > 1 {
					stack = stack[:len(stack)-1]
					paren = top.paren
				}
				continue
			}
		}
		if i <= handled || paren != top.paren || top.kind == ctxBlock {
			continue
		}
		prev := i - 1
		start := prev < 0 || w.is(prev, ";") || w.is(prev, "{") || w.is(prev, "}") ||
			t.nl && !w.continues(prev)
		if !start {
			continue
		}
		var next int
		var opens jsCtxKind
		if top.kind == ctxTop {
			next, opens = w.statement(i, top.depth)
		} else {
			next, opens = w.member(i, top.depth)
		}
		if next > i {
			handled = next
		}
		if opens != ctxBlock {
			pending, pendingDepth, pendingParen, angle = opens, top.depth+1, paren, 0
		}
	}
}

// skipBalanced returns the index just after the group opened at i ("(",
// "[", "{" or "<"), or -1 when it does not close within jsLookahead tokens.
func (w *jsWalker) skipBalanced(i int) int {
	depth := 0
	for j := i; j < len(w.toks) && j < i+jsLookahead; j++ {
		t := w.toks[j]
		if t.kind == jsTmplOpen {
			depth++
			continue
		}
		if t.kind == jsTmplClose {
			depth--
			continue
		}
		if t.kind != jsPunct {
			continue
		}
		switch w.src[t.start] {
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			if t.end-t.start == 1 { // not "=>"
				depth--
			}
		}
		if depth == 0 {
			return j + 1
		}
	}
	return -1
}

// statement recognises a declaration starting at token i of a module or
// namespace body. It returns the last token it consumed (or i-1 when there
// was none) and the context the declaration's "{" opens.
func (w *jsWalker) statement(i, depth int) (int, jsCtxKind) {
	j := i
	isDefault, isExport := false, false
	for k := 0; k < 4; k++ {
		switch w.text(j) {
		case "export":
			isExport = true
		case "default":
			isDefault = true
		case "declare", "async", "abstract":
		default:
			k = 4
			continue
		}
		j++
	}
	line := int(w.toks[min(j, len(w.toks)-1)].line)
	switch kw := w.text(j); {
	case kw == "function" && w.ident(j):
		j++
		if w.is(j, "*") {
			j++
		}
		name := "default"
		if w.ident(j) {
			name = w.text(j)
		} else if !isDefault {
			return j, ctxBlock
		}
		w.c.add(name, w.fnKind(name), line, depth)
		return j, ctxBlock
	case kw == "class" && w.ident(j):
		j++
		name := "default"
		if w.ident(j) && !w.is(j, "extends") && !w.is(j, "implements") {
			name = w.text(j)
		} else if !isDefault {
			return j, ctxBlock
		}
		w.c.add(name, "class", line, depth)
		return j, ctxClass
	case kw == "interface" && w.ident(j+1):
		w.c.add(w.text(j+1), "interface", line, depth)
		return j + 1, ctxBlock
	case kw == "type" && w.ident(j+1) && (w.is(j+2, "=") || w.is(j+2, "<")):
		w.c.add(w.text(j+1), "type", line, depth)
		return j + 1, ctxBlock
	case kw == "enum" && w.ident(j+1):
		w.c.add(w.text(j+1), "enum", line, depth)
		return j + 1, ctxBlock
	case kw == "const" && w.is(j+1, "enum") && w.ident(j+2):
		w.c.add(w.text(j+2), "enum", line, depth)
		return j + 2, ctxBlock
	case (kw == "const" || kw == "let" || kw == "var") && w.ident(j) && w.ident(j+1):
		name := w.text(j + 1)
		kind := "var"
		if kw == "const" {
			kind = "const"
		}
		k := j + 2
		if w.is(k, ":") { // type annotation: find the "=" at nesting level 0
			for k < len(w.toks) && k < j+jsLookahead && !w.is(k, "=") && !w.is(k, ";") {
				if w.is(k, "(") || w.is(k, "[") || w.is(k, "{") || w.is(k, "<") {
					if e := w.skipBalanced(k); e > 0 {
						k = e
						continue
					}
				}
				k++
			}
		}
		if w.is(k, "=") && w.isFuncValue(k+1) {
			kind = w.fnKind(name)
		}
		w.c.add(name, kind, line, depth)
		return j + 1, ctxBlock
	case (kw == "namespace" || kw == "module") && w.ident(j) &&
		(w.ident(j+1) || w.toks[min(j+1, len(w.toks)-1)].kind == jsString) && w.is(j+2, "{") ||
		kw == "namespace" && w.ident(j+1) && w.is(j+2, "."):
		name := w.text(j + 1)
		if len(name) >= 2 && (name[0] == '"' || name[0] == '\'') {
			name = name[1 : len(name)-1]
		}
		w.c.add(name, "namespace", line, depth)
		return j + 1, ctxTop
	case kw == "import" && w.ident(j) && !isExport && !w.is(j+1, "(") && !w.is(j+1, "."):
		for k := j + 1; k < len(w.toks) && k < j+jsLookahead; k++ {
			if w.is(k, ";") {
				break
			}
			if t := w.toks[k]; t.kind == jsString && t.end-t.start >= 2 {
				w.c.add(string(w.src[t.start+1:t.end-1]), "import", line, depth)
				return k, ctxBlock
			}
		}
	case isExport && w.is(j, "{"):
		// export { a, b as c } [from "x"]: each exported name.
		k := j + 1
		for ; k < len(w.toks) && k < j+jsLookahead && !w.is(k, "}"); k++ {
			if !w.ident(k) || w.is(k, "type") && w.ident(k+1) {
				continue
			}
			if w.is(k+1, "as") && w.ident(k+2) {
				k += 2
			}
			w.c.add(w.text(k), "export", int(w.toks[k].line), depth)
		}
		return k, ctxBlock
	case isDefault && w.ident(j) && (j+1 >= len(w.toks) || w.is(j+1, ";") || w.toks[j+1].nl):
		w.c.add(w.text(j), "export", line, depth)
		return j, ctxBlock
	}
	return i - 1, ctxBlock
}

// jsModifiers may precede a class member's name.
var jsModifiers = map[string]bool{
	"public": true, "private": true, "protected": true, "static": true, "async": true,
	"get": true, "set": true, "readonly": true, "abstract": true, "override": true,
	"declare": true, "accessor": true,
}

// member recognises a method at token i of a class body: name(...) {...},
// name<T>(...), or name = (...) => ... (the React class-field handler).
func (w *jsWalker) member(i, depth int) (int, jsCtxKind) {
	j := i
	for w.is(j, "@") { // decorators: @a.b or @a.b(...)
		j++
		for w.ident(j) && w.is(j+1, ".") {
			j += 2
		}
		if w.ident(j) {
			j++
		}
		if w.is(j, "(") {
			e := w.skipBalanced(j)
			if e < 0 {
				return j, ctxBlock
			}
			j = e
		}
	}
	for k := 0; k < 6 && w.ident(j) && jsModifiers[w.text(j)]; k++ {
		if nt := w.toks[min(j+1, len(w.toks)-1)]; j+1 >= len(w.toks) ||
			nt.kind != jsIdent && nt.kind != jsString && !w.is(j+1, "*") && !w.is(j+1, "[") {
			break // a member named like a modifier: get() {...}
		}
		j++
	}
	if w.is(j, "*") {
		j++
	}
	if j >= len(w.toks) {
		return j, ctxBlock
	}
	t := w.toks[j]
	if t.kind != jsIdent && t.kind != jsString {
		return j - 1, ctxBlock
	}
	name := string(w.src[t.start:t.end])
	if t.kind == jsString {
		if len(name) < 2 {
			return j, ctxBlock
		}
		name = name[1 : len(name)-1]
	}
	k := j + 1
	if w.is(k, "?") || w.is(k, "!") {
		k++
	}
	if w.is(k, "(") || w.is(k, "<") || w.is(k, "=") && w.isFuncValue(k+1) {
		w.c.add(name, "method", int(t.line), depth)
	}
	return j, ctxBlock
}

// isFuncValue reports whether the expression at token i is a function: an
// arrow function, a function expression, or a component wrapper such as
// memo(...), forwardRef(...) or styled.button`...`.
func (w *jsWalker) isFuncValue(i int) bool {
	if w.is(i, "async") && !w.is(i+1, "=>") {
		i++
	}
	switch {
	case w.is(i, "function"):
		return true
	case w.ident(i) && w.is(i+1, "=>"):
		return true
	case w.is(i, "(") || w.is(i, "<"):
		k := i
		if w.is(k, "<") { // generic arrow: <T,>(x: T) => ...
			if k = w.skipBalanced(k); k < 0 || !w.is(k, "(") {
				return false
			}
		}
		k = w.skipBalanced(k)
		if k < 0 {
			return false
		}
		if w.is(k, "=>") {
			return true
		}
		if w.is(k, ":") { // return type annotation
			for e := k + 1; e < len(w.toks) && e < k+jsLookahead; e++ {
				if w.is(e, "=>") {
					return true
				}
				if w.is(e, ";") || w.is(e, "=") || w.toks[e].nl && w.is(e, "}") {
					return false
				}
			}
		}
		return false
	case w.ident(i):
		first := w.text(i)
		for w.ident(i) && w.is(i+1, ".") && w.ident(i+2) {
			i += 2
		}
		last := w.text(i)
		if first == "styled" {
			return true
		}
		return (last == "memo" || last == "forwardRef" || last == "observer" || last == "lazy") &&
			w.is(i+1, "(")
	}
	return false
}

// fnKind names a function: in JSX files a capitalised function is, by
// React's own convention, a component.
func (w *jsWalker) fnKind(name string) string {
	if w.jsx && name != "" {
		r := rune(name[0])
		if r < 0x80 && unicode.IsUpper(r) {
			return "component"
		}
	}
	return "function"
}
