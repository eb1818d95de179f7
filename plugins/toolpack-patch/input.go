package patch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/sdk/plugin"
)

// input is a tool's input object split into its fields' raw JSON. Tools read
// fields through its typed getters so that every wrong shape comes back as
// CodeInputInvalid naming the field.
type input map[string]json.RawMessage

// parseInput checks that raw is exactly one JSON object whose keys are all
// among allowed, each given once, and splits it into fields.
//
// It walks tokens instead of unmarshalling into a struct because
// encoding/json matches keys case-insensitively, lets a repeated key win
// silently and ignores data after the object: each would let the pack act on
// an input the host's schema check (exact keys) read differently.
func parseInput(raw json.RawMessage, allowed ...string) (input, *plugin.ToolError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("", "input is not valid JSON (%v); send a JSON object", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid("", "input must be a JSON object, not %s", tokenKind(tok))
	}
	in := input{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("", "input is not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		if !slices.Contains(allowed, key) {
			return nil, invalid(key, "unknown field %q; this tool takes %s", key, strings.Join(allowed, ", "))
		}
		if _, dup := in[key]; dup {
			return nil, invalid(key, "field %q is given twice", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid(key, "field %q is not valid JSON: %v", key, err)
		}
		in[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, invalid("", "input is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("", "input has more data after the JSON object")
	}
	return in, nil
}

// str returns a string field. A required field must be present; nonEmpty
// refuses "" too (a required path that is empty is a malformed call, not a
// policy question).
func (in input) str(name string, required, nonEmpty bool) (string, *plugin.ToolError) {
	raw, ok := in[name]
	if !ok {
		if required {
			return "", invalid(name, "%s is required", name)
		}
		return "", nil
	}
	var s string
	if kind := jsonKind(raw); kind != "a string" {
		return "", invalid(name, "%s must be a string, not %s", name, kind)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(name, "%s is not a valid JSON string: %v", name, err)
	}
	if nonEmpty && s == "" {
		return "", invalid(name, "%s must not be empty", name)
	}
	return s, nil
}

// line returns an optional 1-based line number field, or 0 when absent.
// JSON Schema counts 3.0 as an integer, so it is accepted as 3.
func (in input) line(name string) (int, *plugin.ToolError) {
	raw, ok := in[name]
	if !ok {
		return 0, nil
	}
	if kind := jsonKind(raw); kind != "a number" {
		return 0, invalid(name, "%s must be an integer ≥ 1, not %s", name, kind)
	}
	f, err := json.Number(bytes.TrimSpace(raw)).Float64()
	if err != nil || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return 0, invalid(name, "%s must be an integer between 1 and %d, not %s", name, math.MaxInt32, raw)
	}
	return int(f), nil
}

func invalid(field, format string, args ...any) *plugin.ToolError {
	return &plugin.ToolError{Code: CodeInputInvalid, Message: fmt.Sprintf(format, args...), Field: field}
}

// jsonKind names the JSON type of a valid raw value, for messages.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// tokenKind names the JSON type of a decoder token, for messages.
func tokenKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
