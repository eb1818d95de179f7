package core

// maxJSONDepth is encoding/json's nesting limit: deeper JSON is invalid to
// json.Valid, and so to ValidJSON.
const maxJSONDepth = 10000

// ValidJSON reports whether b is one valid JSON value, with whitespace
// around it allowed: exactly what json.Valid reports, at several times its
// speed. The host checks every tool input and output with it before they
// go into events, and some are whole files.
func ValidJSON(b []byte) bool {
	var stack []byte // the open containers, '{' or '['
	i := skipJSONSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		var ok bool
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxJSONDepth {
				return false
			}
			stack = append(stack, c)
			i = skipJSONSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, ok = scanJSONKey(b, i); !ok {
					return false
				}
			}
			continue
		case c == '"':
			if i, ok = scanJSONString(b, i); !ok {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, ok = scanJSONNumber(b, i); !ok {
				return false
			}
		case c == 't':
			if i, ok = scanJSONLiteral(b, i, "true"); !ok {
				return false
			}
		case c == 'f':
			if i, ok = scanJSONLiteral(b, i, "false"); !ok {
				return false
			}
		case c == 'n':
			if i, ok = scanJSONLiteral(b, i, "null"); !ok {
				return false
			}
		default:
			return false
		}
		// A value ended at i: close containers, or go on to the next
		// element or member.
		for {
			i = skipJSONSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipJSONSpace(b, i+1)
			if top == '{' {
				if i, ok = scanJSONKey(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanJSONKey scans a member's key and its colon from i, and returns the
// index where its value starts.
func scanJSONKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := scanJSONString(b, i)
	if !ok {
		return i, false
	}
	i = skipJSONSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipJSONSpace(b, i+1), true
}

// jsonStringPlain marks the bytes a string holds as they are: all but
// control characters, the quote and the backslash. Any other byte, invalid
// UTF-8 included, is as valid to json.Valid.
var jsonStringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanJSONString scans the string whose quote is at i and returns the
// index after its closing quote.
func scanJSONString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		c := b[i]
		if jsonStringPlain[c] {
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		default: // a control character
			return i, false
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanJSONNumber scans the number that starts at i:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanJSONNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		start := i + 1
		if i = skipDigits(b, start); i == start {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		if i = skipDigits(b, start); i == start {
			return i, false
		}
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// scanJSONLiteral scans the literal lit (true, false, null) at i.
func scanJSONLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}
