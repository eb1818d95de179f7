package outline

import (
	"bytes"
	"strings"
)

// htmlTextWindow bounds how far past a <title> or heading tag its text is
// looked for; capping it keeps a page of unclosed headings linear.
const htmlTextWindow = 512

// outlineHTML outlines an HTML page: elements with an id ("tag#id"),
// <script src>, <link href>, <title> and h1–h3 headings. Script and style
// bodies and comments are skipped so that markup-looking text in them does
// not count.
func outlineHTML(src []byte, c *collector) {
	lc := newLineCounter(src)
	n := len(src)
	i := 0
	for i < n && !c.full() {
		k := bytes.IndexByte(src[i:], '<')
		if k < 0 {
			return
		}
		i += k
		switch {
		case bytes.HasPrefix(src[i:], []byte("<!--")):
			end := bytes.Index(src[i+4:], []byte("-->"))
			if end < 0 {
				return
			}
			i += 4 + end + 3
			continue
		case i+1 < n && (src[i+1] == '!' || src[i+1] == '?' || src[i+1] == '/'):
			end := bytes.IndexByte(src[i+1:], '>')
			if end < 0 {
				return
			}
			i += end + 2
			continue
		}
		tagStart := i
		j := i + 1
		for j < n && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '-') {
			j++
		}
		if j == i+1 || !isLetter(src[i+1]) {
			i++
			continue
		}
		tag := strings.ToLower(string(src[i+1 : j]))
		attrs, end := htmlAttrs(src, j)
		i = end
		line := lc.at(tagStart)
		if id := attrs["id"]; id != "" {
			c.add(tag+"#"+id, "id", line, 0)
		}
		switch tag {
		case "script", "style":
			if tag == "script" && attrs["src"] != "" {
				c.add(attrs["src"], "script", line, 0)
			}
			// Raw text: the body ends at the first </script> or </style>.
			if e := indexFold(src[i:], "</"+tag); e >= 0 {
				i += e
			} else {
				return
			}
		case "link":
			if href := attrs["href"]; href != "" {
				c.add(href, "link", line, 0)
			}
		case "title":
			c.add(htmlText(src[i:], "</title"), "title", line, 0)
		case "h1", "h2", "h3":
			c.add(htmlText(src[i:], "</"+tag), "heading", line, int(tag[1]-'1'))
		}
	}
}

// htmlAttrs parses the attributes of a start tag from just after its name
// and returns the few this outline uses (lower-cased names) and the offset
// after the tag's ">".
func htmlAttrs(src []byte, i int) (map[string]string, int) {
	var attrs map[string]string
	n := len(src)
	for i < n {
		for i < n && (isSpace(src[i]) || src[i] == '\n' || src[i] == '/') {
			i++
		}
		if i >= n {
			break
		}
		if src[i] == '>' {
			return attrs, i + 1
		}
		s := i
		for i < n && !isSpace(src[i]) && src[i] != '\n' && src[i] != '=' && src[i] != '>' && src[i] != '/' {
			i++
		}
		name := strings.ToLower(string(src[s:i]))
		if i == s {
			i++ // a stray "=": step over it
			continue
		}
		for i < n && (isSpace(src[i]) || src[i] == '\n') {
			i++
		}
		if i >= n || src[i] != '=' {
			continue
		}
		i++
		for i < n && (isSpace(src[i]) || src[i] == '\n') {
			i++
		}
		var val []byte
		if i < n && (src[i] == '"' || src[i] == '\'') {
			q := src[i]
			e := bytes.IndexByte(src[i+1:], q)
			if e < 0 {
				return attrs, n
			}
			val = src[i+1 : i+1+e]
			i += e + 2
		} else {
			s := i
			for i < n && !isSpace(src[i]) && src[i] != '\n' && src[i] != '>' {
				i++
			}
			val = src[s:i]
		}
		if name == "id" || name == "src" || name == "href" {
			if attrs == nil {
				attrs = map[string]string{}
			}
			attrs[name] = strings.TrimSpace(string(val))
		}
	}
	return attrs, n
}

// htmlText returns the text before the closing tag (looked for within
// htmlTextWindow bytes) with nested tags removed.
func htmlText(src []byte, closing string) string {
	if len(src) > htmlTextWindow {
		src = src[:htmlTextWindow]
	}
	e := indexFold(src, closing)
	if e < 0 {
		return ""
	}
	var b strings.Builder
	inTag := false
	for _, ch := range src[:e] {
		switch {
		case ch == '<':
			inTag = true
		case ch == '>':
			inTag = false
		case !inTag:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// indexFold finds pat (lower-case ASCII starting with "<") in src ignoring
// ASCII case, in linear time.
func indexFold(src []byte, pat string) int {
	off := 0
	for {
		k := bytes.IndexByte(src[off:], pat[0])
		if k < 0 {
			return -1
		}
		off += k
		if len(src)-off < len(pat) {
			return -1
		}
		if bytes.EqualFold(src[off:off+len(pat)], []byte(pat)) {
			return off
		}
		off++
	}
}
