package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/core"
	"github.com/gin-gonic/gin"
)

// Every piece of text a request carries — JSON strings and keys, query
// parameters, path parameters, the headers in textHeaders — must be valid
// UTF-8 without NUL. PostgreSQL refuses both in a text column while SQLite
// stores them, so without one check at the edge the same request answered
// 201 on one dialect and 500 on the other. Handlers get this for free: the
// middleware covers the URL and headers, bindJSON covers bodies.

// textHeaders are the request headers the API reads as text.
var textHeaders = []string{"Idempotency-Key", "Last-Event-ID"}

// textProblem says what is wrong with s as text, or "" when nothing is.
func textProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

// checkRequestText refuses a request whose path parameters, query or text
// headers are not acceptable text (400 INVALID_REQUEST, field named).
func checkRequestText(c *gin.Context) {
	if err := requestTextError(c); err != nil {
		_ = c.Error(err)
		c.Abort()
		return
	}
	c.Next()
}

func requestTextError(c *gin.Context) error {
	for _, p := range c.Params {
		if why := textProblem(p.Value); why != "" {
			return core.Errf(core.CodeInvalidRequest, p.Key, "path parameter %s %s", p.Key, why)
		}
	}
	for key, values := range c.Request.URL.Query() {
		if why := textProblem(key); why != "" {
			return core.Errf(core.CodeInvalidRequest, "", "query parameter name %q %s", key, why)
		}
		for _, v := range values {
			if why := textProblem(v); why != "" {
				return core.Errf(core.CodeInvalidRequest, key, "query parameter %s %s", key, why)
			}
		}
	}
	for _, h := range textHeaders {
		if why := textProblem(c.GetHeader(h)); why != "" {
			return core.Errf(core.CodeInvalidRequest, h, "header %s %s", h, why)
		}
	}
	return nil
}

// fileContents is implemented by request bodies some of whose strings are
// file contents: bytes, in which a NUL is legitimate. Every other string of
// a body is text.
type fileContents interface {
	// isFileContent reports whether the string at path (object keys and
	// array indexes from the body's root) is a file's content.
	isFileContent(path []string) bool
}

// nulEscape is how a NUL can appear in JSON text: JSON forbids raw control
// characters inside strings, so only the escape needs looking for.
var nulEscape = []byte(`\u0000`)

// checkJSONText refuses a decoded body whose raw bytes hold invalid UTF-8
// anywhere or a NUL in a string that is not file content. encoding/json
// replaces invalid UTF-8 with U+FFFD while decoding, so the raw bytes are
// what must be checked; body is known to be valid JSON by now.
func checkJSONText(body []byte, v any) error {
	if utf8.Valid(body) && !bytes.Contains(body, nulEscape) {
		return nil // the common case: nothing to look for
	}
	content := func([]string) bool { return false }
	if fc, ok := v.(fileContents); ok {
		content = fc.isFileContent
	}
	// Walk the tokens, keeping the path to each string so the error names
	// the field; the raw bytes of a string token are those since the end of
	// the previous token.
	type level struct {
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []*level
	// path is the place of the current token: keys and indexes from the
	// root, and the same rendered as the error's field.
	path := func() ([]string, string) {
		var segs []string
		var field strings.Builder
		for _, l := range stack {
			switch {
			case l.object && l.wantKey:
				continue
			case l.object:
				segs = append(segs, l.key)
				if field.Len() > 0 {
					field.WriteByte('.')
				}
				field.WriteString(l.key)
			default:
				segs = append(segs, strconv.Itoa(l.index))
				fmt.Fprintf(&field, "[%d]", l.index)
			}
		}
		return segs, field.String()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end (the body already decoded without error)
		}
		raw := body[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].wantKey = true
			}
			continue
		}
		if top != nil && top.object && top.wantKey {
			key := tok.(string)
			why := textProblem(key)
			if !utf8.Valid(raw) {
				why = "is not valid UTF-8"
			}
			if why != "" {
				_, field := path()
				where := field
				if where == "" {
					where = "the body"
				}
				return core.Errf(core.CodeInvalidRequest, field, "the key %q of %s %s", key, where, why)
			}
			top.key, top.wantKey = key, false
			continue
		}
		if top != nil && !top.object {
			top.index++
		}
		switch t := tok.(type) {
		case json.Delim:
			stack = append(stack, &level{object: t == '{', wantKey: t == '{', index: -1})
			continue
		case string:
			segs, field := path()
			switch {
			case !utf8.Valid(raw):
				return core.Errf(core.CodeInvalidRequest, field, "%s is not valid UTF-8", field)
			case strings.IndexByte(t, 0) >= 0 && !content(segs):
				return core.Errf(core.CodeInvalidRequest, field, "%s contains a NUL character", field)
			}
		}
		if top != nil && top.object {
			top.wantKey = true
		}
	}
}
