package outline

// The JS/TS tokenizer: it knows where strings, template literals, comments
// and regular expressions are, so that nothing inside them looks like code
// to the declaration walk in outline_jsts.go.

type jsKind uint8

const (
	jsIdent  jsKind = iota
	jsString        // '…', "…" or one literal part of a template
	jsNumber
	jsPunct // one byte, or "=>"
	jsRegex
	jsTmplOpen  // "${" inside a template literal
	jsTmplClose // the "}" that ends a template expression
)

// jsTok is kept small (int32 offsets) because minified files are one token
// every byte or two and the whole file's tokens are held at once.
type jsTok struct {
	start, end int32
	line       int32
	kind       jsKind
	nl         bool // first token on its line
}

// jsMaxSource is the most of a file the JS outline reads, so that offsets
// fit the tokens' int32; nobody writes a 2 GB module by hand.
const jsMaxSource = 1<<31 - 1

// jsRegexAfter are the keywords after which "/" starts a regular expression
// rather than a division.
var jsRegexAfter = map[string]bool{
	"return": true, "typeof": true, "instanceof": true, "in": true, "of": true, "new": true,
	"delete": true, "void": true, "throw": true, "case": true, "do": true, "else": true,
	"yield": true, "await": true,
}

// jsTokenize splits a JS/TS/JSX source into tokens, dropping comments and
// whitespace. It recovers from anything malformed at the next line at worst.
func jsTokenize(src []byte) []jsTok {
	if len(src) > jsMaxSource {
		src = src[:jsMaxSource]
	}
	// Hand-written code averages a token every four or five bytes.
	toks := make([]jsTok, 0, len(src)/4+16)
	n := len(src)
	line, nl := 1, true
	// braces holds, for each open "{" or "${", whether it was a template
	// expression, so that its "}" resumes the template literal.
	var braces []bool
	emit := func(k jsKind, s, e, l int) {
		toks = append(toks, jsTok{kind: k, start: int32(s), end: int32(e), line: int32(l), nl: nl})
		nl = false
	}
	// template scans template text from i to the closing backtick or "${",
	// emits it, and returns where code resumes.
	template := func(i int) int {
		start, startLine := i, line
		for i < n {
			switch src[i] {
			case '\\':
				if i+1 < n && src[i+1] == '\n' {
					line++
				}
				i += 2
				continue
			case '\n':
				line++
			case '`':
				emit(jsString, start, i+1, startLine)
				return i + 1
			case '$':
				if i+1 < n && src[i+1] == '{' {
					emit(jsString, start, i, startLine)
					emit(jsTmplOpen, i, i+2, line)
					braces = append(braces, true)
					return i + 2
				}
			}
			i++
		}
		emit(jsString, start, n, startLine)
		return n
	}
	i := 0
	if n > 1 && src[0] == '#' && src[1] == '!' { // hashbang line
		for i < n && src[i] != '\n' {
			i++
		}
	}
	for i < n {
		c := src[i]
		switch {
		case c == '\n':
			line++
			nl = true
			i++
		case isSpace(c):
			i++
		case c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && src[i+1] == '*':
			i += 2
			for i < n && !(src[i] == '*' && i+1 < n && src[i+1] == '/') {
				if src[i] == '\n' {
					line++
					nl = true
				}
				i++
			}
			i += 2
		case c == '\'' || c == '"':
			// A quote string ends at its quote or, unterminated, at the end
			// of the line: an apostrophe in JSX text then costs one line.
			s := i
			i++
			for i < n && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' && i+1 < n && src[i+1] != '\n' {
					i++
				}
				i++
			}
			if i < n && src[i] == c {
				i++
			}
			emit(jsString, s, i, line)
		case c == '`':
			i = template(i + 1)
		case c == '{':
			braces = append(braces, false)
			emit(jsPunct, i, i+1, line)
			i++
		case c == '}':
			if len(braces) > 0 && braces[len(braces)-1] {
				braces = braces[:len(braces)-1]
				emit(jsTmplClose, i, i+1, line)
				i = template(i + 1)
				continue
			}
			if len(braces) > 0 {
				braces = braces[:len(braces)-1]
			}
			emit(jsPunct, i, i+1, line)
			i++
		case isIdentByte(c) && !isDigit(c) || c == '#':
			s := i
			i++
			for i < n && isIdentByte(src[i]) {
				i++
			}
			emit(jsIdent, s, i, line)
		case isDigit(c) || c == '.' && i+1 < n && isDigit(src[i+1]):
			s := i
			for i < n && (isIdentByte(src[i]) || src[i] == '.') {
				i++
			}
			emit(jsNumber, s, i, line)
		case c == '/' && jsRegexAllowed(src, toks):
			s := i
			i++
			inClass := false
			for i < n && src[i] != '\n' {
				b := src[i]
				if b == '\\' && i+1 < n && src[i+1] != '\n' {
					i += 2
					continue
				}
				i++
				if b == '[' {
					inClass = true
				} else if b == ']' {
					inClass = false
				} else if b == '/' && !inClass {
					for i < n && isLetter(src[i]) {
						i++
					}
					break
				}
			}
			emit(jsRegex, s, i, line)
		case c == '=' && i+1 < n && src[i+1] == '>':
			emit(jsPunct, i, i+2, line)
			i += 2
		default:
			emit(jsPunct, i, i+1, line)
			i++
		}
	}
	return toks
}

// jsRegexAllowed decides whether a "/" after the previous token starts a
// regular expression, the classic heuristic: after a value it is a division.
func jsRegexAllowed(src []byte, toks []jsTok) bool {
	if len(toks) == 0 {
		return true
	}
	p := toks[len(toks)-1]
	switch p.kind {
	case jsPunct:
		switch src[p.start] {
		case ')', ']', '}':
			return false
		case '<': // "</div>" in JSX is a closing tag, not a regex
			return false
		}
		return true
	case jsIdent:
		return jsRegexAfter[string(src[p.start:p.end])]
	case jsTmplOpen:
		return true
	}
	return false
}
