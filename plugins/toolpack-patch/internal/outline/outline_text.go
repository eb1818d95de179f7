package outline

import (
	"bytes"
	"strings"
)

// Light outlines for documentation and configuration formats. Line-based
// and deliberately shallow: headings, top-level keys, tables, functions.

// outlineMarkdown outlines ATX headings (# … ######) outside fenced code
// blocks; Depth is the level minus one.
func outlineMarkdown(src []byte, c *collector) {
	var fence []byte
	forEachLine(src, func(l []byte, n int) bool {
		indent, rest := indentWidth(l)
		if indent <= 3 && (bytes.HasPrefix(rest, []byte("```")) || bytes.HasPrefix(rest, []byte("~~~"))) {
			if fence == nil {
				fence = rest[:3]
			} else if bytes.HasPrefix(rest, fence) {
				fence = nil
			}
			return true
		}
		if fence != nil || indent > 3 {
			return true
		}
		level := 0
		for level < len(rest) && rest[level] == '#' {
			level++
		}
		if level == 0 || level > 6 || level < len(rest) && rest[level] != ' ' && rest[level] != '\t' {
			return true
		}
		text := strings.TrimRight(strings.TrimSpace(string(rest[level:])), "#")
		c.add(text, "heading", n, level-1)
		return !c.full()
	})
}

// outlineYAML outlines top-level keys and the keys one level below them
// (Depth 1), skipping comments, sequences and block scalars (| and >),
// whose content may look like keys.
func outlineYAML(src []byte, c *collector) {
	childIndent := -1  // indentation of the first nested key under the current top-level key
	scalarIndent := -1 // while >= 0, lines indented deeper belong to a block scalar
	forEachLine(src, func(l []byte, n int) bool {
		indent, rest := indentWidth(l)
		if len(rest) == 0 {
			return true
		}
		if scalarIndent >= 0 {
			if indent > scalarIndent {
				return true
			}
			scalarIndent = -1
		}
		if rest[0] == '#' || rest[0] == '-' || bytes.HasPrefix(rest, []byte("---")) {
			return true
		}
		key, val, ok := yamlKey(rest)
		if !ok {
			return true
		}
		if v := strings.TrimSpace(val); strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">") {
			scalarIndent = indent
		}
		switch {
		case indent == 0:
			childIndent = -1
			c.add(key, "key", n, 0)
		case childIndent < 0 || indent == childIndent:
			childIndent = indent
			c.add(key, "key", n, 1)
		}
		return !c.full()
	})
}

// yamlKey splits "key: value" (the key possibly quoted).
func yamlKey(l []byte) (string, string, bool) {
	s := string(l)
	if s[0] == '"' || s[0] == '\'' {
		e := strings.IndexByte(s[1:], s[0])
		if e < 0 {
			return "", "", false
		}
		key, rest := s[1:1+e], s[2+e:]
		if !strings.HasPrefix(rest, ":") {
			return "", "", false
		}
		return key, rest[1:], true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return strings.TrimSpace(s[:i]), s[i+1:], i > 0
		}
		if s[i] == '#' && i > 0 && s[i-1] == ' ' {
			break
		}
	}
	return "", "", false
}

// outlineTOML outlines [tables], [[arrays of tables]] and the keys before
// the first table, skipping multi-line strings.
func outlineTOML(src []byte, c *collector) {
	inTable, inString := false, false
	forEachLine(src, func(l []byte, n int) bool {
		l = bytes.TrimSpace(l)
		if inString || len(l) == 0 || l[0] == '#' {
			if bytes.Count(l, []byte(`"""`))%2 == 1 || bytes.Count(l, []byte(`'''`))%2 == 1 {
				inString = !inString
			}
			return true
		}
		if bytes.Count(l, []byte(`"""`))%2 == 1 || bytes.Count(l, []byte(`'''`))%2 == 1 {
			inString = true
		}
		if l[0] == '[' {
			name := strings.Trim(string(l), "[] \t")
			if e := strings.Index(name, "]"); e >= 0 {
				name = strings.TrimRight(name[:e], "] \t")
			}
			inTable = true
			c.add(name, "table", n, 0)
		} else if e := bytes.IndexByte(l, '='); e > 0 && !inTable {
			c.add(strings.Trim(strings.TrimSpace(string(l[:e])), `"'`), "key", n, 0)
		}
		return !c.full()
	})
}

// outlineShell outlines function definitions: "name() {" and
// "function name".
func outlineShell(src []byte, c *collector) {
	forEachLine(src, func(l []byte, n int) bool {
		_, rest := indentWidth(l)
		if bytes.HasPrefix(rest, []byte("function ")) {
			rest = bytes.TrimLeft(rest[len("function "):], " \t")
			if name := shellName(rest); name != "" {
				c.add(name, "function", n, 0)
			}
			return !c.full()
		}
		name := shellName(rest)
		if name == "" {
			return true
		}
		after := bytes.TrimLeft(rest[len(name):], " \t")
		if bytes.HasPrefix(after, []byte("()")) {
			c.add(name, "function", n, 0)
		}
		return !c.full()
	})
}

// shellName returns the function-name-like word at the start of b.
func shellName(b []byte) string {
	i := 0
	for i < len(b) && (isIdentByte(b[i]) || b[i] == '-' || b[i] == ':' || b[i] == '.') {
		i++
	}
	return string(b[:i])
}
