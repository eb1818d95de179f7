package patch

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// appendJSON appends o exactly as json.Marshal would encode it (same
// fields, order, omitempty and escaping; a test holds the two to it). The
// index of a 10,000-file app is ~3 MB of JSON, and encoding it by
// reflection was a sixth of a warm call. A file's object comes from
// encoded when set (the last index's, see lastIndex); with o.remember, an
// outlined file's object is kept there for the next index.
func (o *workspaceIndexOutput) appendJSON(b []byte) []byte {
	b = append(b, `{"files":`...)
	if o.Files == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range o.Files {
			if i > 0 {
				b = append(b, ',')
			}
			f := &o.Files[i]
			if f.encoded != nil {
				b = append(b, f.encoded...)
				continue
			}
			start := len(b)
			b = f.appendJSON(b)
			if o.remember && f.outlined {
				f.encoded = bytes.Clone(b[start:])
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"skipped_folders":`...)
	if o.SkippedFolders == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range o.SkippedFolders {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		b = append(b, ']')
	}
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, o.Truncated)
	return append(b, '}')
}

func (f *indexedFile) appendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = appendJSONString(b, f.Path)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, f.Size, 10)
	b = append(b, `,"sha256":`...)
	b = appendJSONString(b, f.SHA256)
	b = append(b, `,"language":`...)
	b = appendJSONString(b, f.Language)
	if f.Binary {
		b = append(b, `,"binary":true`...)
	}
	if len(f.Symbols) > 0 {
		b = append(b, `,"symbols":[`...)
		for i, s := range f.Symbols {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendJSONString(b, s.Name)
			b = append(b, `,"kind":`...)
			b = appendJSONString(b, s.Kind)
			b = append(b, `,"line":`...)
			b = strconv.AppendInt(b, int64(s.Line), 10)
			if s.Depth != 0 {
				b = append(b, `,"depth":`...)
				b = strconv.AppendInt(b, int64(s.Depth), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSONString appends s quoted as json.Marshal quotes it. Printable
// ASCII other than the characters it escapes (quote, backslash and, for
// HTML safety, <, > and &) is copied as is; any other string, rare in
// paths and symbol names, goes through json.Marshal itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonPlain marks the bytes appendJSONString copies as they are: one
// table lookup per byte rather than seven comparisons.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// indexJSONBytes estimates the encoded size of an index, so that the
// buffer is allocated once: a file's object is ~64 bytes of field names,
// punctuation and size besides its path, hash and language, and a
// symbol's ~56 besides its name.
func indexJSONBytes(o *workspaceIndexOutput) int {
	n := 64
	for i := range o.Files {
		f := &o.Files[i]
		if f.encoded != nil {
			n += len(f.encoded) + 1
			continue
		}
		n += 64 + len(f.Path) + len(f.SHA256) + len(f.Language) + 56*len(f.Symbols)
		for _, s := range f.Symbols {
			n += len(s.Name)
		}
	}
	for _, s := range o.SkippedFolders {
		n += len(s) + 3
	}
	return n
}
