package core

import (
	"encoding/json"
	"strconv"
)

// Events are encoded on every stream read and every tool call, and their
// payloads may be large (a tool's input or output: a big patch, a big
// file). encoding/json compacts a json.RawMessage with its scanner, about
// 130 MB/s here, even when it already is compact: 0.5 ms for 64 KiB, once
// per event and again for every client that streams it. The encoders here
// write the same bytes for JSON known to be valid, several times faster.

// AppendJSON appends the envelope as json.Marshal writes it. Its payload
// and diagnostics must be valid JSON, as every event the log holds is
// (the host writes them with json.Marshal or AppendCompactJSON;
// PostgreSQL's jsonb gives them back valid, only spaced).
func (e Envelope) AppendJSON(dst []byte) ([]byte, error) {
	ts, err := e.TS.MarshalJSON()
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"event":`...)
	dst = AppendJSONString(dst, string(e.Event))
	dst = append(dst, `,"run_id":`...)
	dst = AppendJSONString(dst, e.RunID)
	dst = append(dst, `,"app_id":`...)
	dst = AppendJSONString(dst, e.AppID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"ts":`...)
	dst = append(dst, ts...)
	dst = append(dst, `,"payload":`...)
	if e.Payload == nil {
		dst = append(dst, "null"...)
	} else {
		dst = AppendCompactJSON(dst, e.Payload)
	}
	if len(e.Diagnostics) > 0 {
		dst = append(dst, `,"diagnostics":`...)
		dst = AppendCompactJSON(dst, e.Diagnostics)
	}
	return append(dst, '}'), nil
}

// AppendJSONString appends s as json.Marshal writes a string.
func AppendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			// Escapes, HTML characters or UTF-8 (checked and escaped
			// by encoding/json): rare in ids and types.
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// compactSpecial marks the bytes AppendCompactJSON acts on; it copies the
// rest as they are, a table lookup each.
var compactSpecial = [256]bool{'"': true, '\\': true, ' ': true, '\t': true, '\n': true, '\r': true, '<': true, '>': true, '&': true, 0xE2: true}

// AppendCompactJSON appends src, which must be valid JSON, as json.Marshal
// writes a json.RawMessage: without the whitespace between tokens, and
// with <, >, & and U+2028, U+2029 escaped (\u003c …) so the result is safe
// inside HTML. It only tracks whether it is inside a string, so it runs
// several times faster than encoding/json's scanner; it does not check
// src, and invalid JSON comes out as garbage.
func AppendCompactJSON(dst, src []byte) []byte {
	inString := false
	start := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		if !compactSpecial[c] {
			continue
		}
		switch c {
		case '"':
			inString = !inString
		case '\\':
			// Only inside a string: the escaped byte (a quote or a
			// backslash among them) neither ends the string nor escapes.
			i++
		case ' ', '\t', '\n', '\r':
			if !inString {
				dst = append(dst, src[start:i]...)
				start = i + 1
			}
		case '<', '>', '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
		}
	}
	return append(dst, src[start:]...)
}
