package orchestrator

import (
	"encoding/json"
)

// The payloads of the tool.* events the host emits. tool.started carries
// the call's input and tool.completed its output, which may be large (an
// apply_patch of a big patch, a read_file of a big file). encoding/json
// compacts a json.RawMessage it marshals with its scanner, about 8 ns a
// byte here: 0.5 ms for a 64 KiB input, on top of the checks the host has
// already made of it. These payloads are built by hand instead, with
// appendCompactValid, into exactly the bytes json.Marshal of the map
// they replaced gave (keys in name order).

// toolStartedPayload is tool.started's payload. input must be valid JSON:
// CallTool makes it so, and engines' events pass jsonOrNull.
func toolStartedPayload(callID, tool string, input json.RawMessage) json.RawMessage {
	return toolPayload(`{"input":`, input, tool, callID)
}

// toolCompletedPayload is tool.completed's payload. output must be valid
// JSON (jsonOrNull).
func toolCompletedPayload(callID, tool string, output json.RawMessage) json.RawMessage {
	return toolPayload(`{"output":`, output, tool, callID)
}

// toolPayload is {<key>:<raw>,"tool":<tool>,"tool_call_id":<callID>}, open
// being the object's start up to raw.
func toolPayload(open string, raw json.RawMessage, tool, callID string) json.RawMessage {
	b := make([]byte, 0, len(open)+len(raw)+len(tool)+len(callID)+32)
	b = append(b, open...)
	b = appendCompactValid(b, raw)
	b = append(b, `,"tool":`...)
	b = appendJSONString(b, tool)
	b = append(b, `,"tool_call_id":`...)
	b = appendJSONString(b, callID)
	return append(b, '}')
}

// toolFailed is tool.failed's payload (fields in name order, as the map
// it replaced marshalled them). It holds no raw JSON, so json.Marshal is
// cheap for it.
type toolFailed struct {
	ErrorCode    string `json:"error_code"`
	ErrorMessage string `json:"error_message"`
	Field        string `json:"field"`
	Tool         string `json:"tool"`
	CallID       string `json:"tool_call_id"`
}

// appendJSONString appends s as json.Marshal writes a string.
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

const hexDigits = "0123456789abcdef"

// compactSpecial marks the bytes appendCompactValid acts on; it copies the
// rest as they are, a table lookup each.
var compactSpecial = [256]bool{'"': true, '\\': true, ' ': true, '\t': true, '\n': true, '\r': true, '<': true, '>': true, '&': true, 0xE2: true}

// appendCompactValid appends src, which must be valid JSON, as json.Marshal
// writes a json.RawMessage: without the whitespace between tokens, and
// with <, >, & and U+2028, U+2029 escaped (\u003c …) so the result is safe
// inside HTML. It only tracks whether it is inside a string, so it runs
// about ten times faster than encoding/json's scanner; it does not check
// src, and invalid JSON comes out as garbage.
func appendCompactValid(dst, src []byte) []byte {
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
