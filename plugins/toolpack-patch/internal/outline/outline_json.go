package outline

import "strconv"

// jsonMaxDepth is the deepest key level outlined: the top-level keys of a
// package.json and their children ("scripts" → "build") tell what a file is;
// deeper levels are data.
const jsonMaxDepth = 1

// outlineJSON outlines object keys up to jsonMaxDepth. It is a tolerant
// hand-written scanner rather than encoding/json because configuration
// files (tsconfig.json, .eslintrc) routinely carry comments and trailing
// commas; it stops at the first byte that cannot be JSON and keeps what it
// found.
func outlineJSON(src []byte, c *collector) {
	var stack []byte // '{' or '['
	expectKey := false
	line := 1
	n := len(src)
	for i := 0; i < n && !c.full(); i++ {
		ch := src[i]
		switch {
		case ch == '\n':
			line++
		case isSpace(ch):
		case ch == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
			i--
		case ch == '/' && i+1 < n && src[i+1] == '*':
			for i += 2; i < n && !(src[i] == '*' && i+1 < n && src[i+1] == '/'); i++ {
				if src[i] == '\n' {
					line++
				}
			}
			i++
		case ch == '{' || ch == '[':
			stack = append(stack, ch)
			expectKey = ch == '{'
		case ch == '}' || ch == ']':
			if len(stack) == 0 {
				return
			}
			stack = stack[:len(stack)-1]
			expectKey = false
		case ch == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ch == ':':
			expectKey = false
		case ch == '"':
			s := i
			escaped := false
			for i++; i < n && src[i] != '"'; i++ {
				if src[i] == '\n' {
					return // raw newline: not JSON
				}
				if src[i] == '\\' {
					escaped = true
					i++
				}
			}
			if i >= n {
				return
			}
			if expectKey && len(stack)-1 <= jsonMaxDepth {
				key := string(src[s+1 : i])
				if escaped {
					if u, err := strconv.Unquote(string(src[s : i+1])); err == nil {
						key = u
					}
				}
				if key == "" {
					key = `""`
				}
				c.add(key, "key", line, len(stack)-1)
			}
			expectKey = false
		case isLetter(ch) || isDigit(ch) || ch == '-' || ch == '+' || ch == '.':
			// true, false, null, numbers: not checked further.
			for i+1 < n && (isLetter(src[i+1]) || isDigit(src[i+1]) || src[i+1] == '-' ||
				src[i+1] == '+' || src[i+1] == '.') {
				i++
			}
		default:
			return
		}
	}
}
