package contract

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

// input is a tool's input object split into its fields' raw JSON; its
// getters turn every wrong shape into CodeInputInvalid naming the field.
type input map[string]json.RawMessage

// parseInput checks that raw is one JSON object whose keys are all among
// allowed, each given once. Both tools take only optional fields, so an
// empty input reads as {}.
//
// It walks tokens rather than unmarshalling into a struct: encoding/json
// matches keys ignoring case, lets a repeated key win silently and ignores
// data after the object, and each would let the pack read an input
// differently from the host's schema check.
func parseInput(raw json.RawMessage, allowed ...string) (input, *plugin.ToolError) {
	in := input{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return in, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("", "input is not valid JSON (%v); send a JSON object", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid("", "input must be a JSON object")
	}
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

// names returns an optional list of distinct non-empty strings of at most
// limit entries, or nil when the field is absent.
func (in input) names(field string, limit int) ([]string, *plugin.ToolError) {
	raw, ok := in[field]
	if !ok {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, invalid(field, "%s must be an array of tool names", field)
	}
	if len(items) == 0 || len(items) > limit {
		return nil, invalid(field, "%s must have between 1 and %d names, not %d", field, limit, len(items))
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		var s string
		if err := json.Unmarshal(item, &s); err != nil {
			return nil, invalid(field, "%s[%d] must be a string", field, i)
		}
		if s == "" {
			return nil, invalid(field, "%s[%d] is empty", field, i)
		}
		if slices.Contains(out, s) {
			return nil, invalid(field, "%s names %q twice", field, s)
		}
		out = append(out, s)
	}
	return out, nil
}

// integer returns an optional integer field between lo and hi, or def when
// absent. JSON Schema counts 3.0 as an integer, so it reads as 3.
func (in input) integer(field string, lo, hi, def int) (int, *plugin.ToolError) {
	raw, ok := in[field]
	if !ok {
		return def, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, invalid(field, "%s is not valid JSON", field)
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, invalid(field, "%s must be an integer between %d and %d", field, lo, hi)
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, invalid(field, "%s must be an integer between %d and %d, not %s", field, lo, hi, n)
	}
	return int(f), nil
}

func invalid(field, format string, args ...any) *plugin.ToolError {
	return &plugin.ToolError{Code: CodeInputInvalid, Message: fmt.Sprintf(format, args...), Field: field}
}
