package opencode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// OpenCode wants a custom tool's arguments as zod schemas (a raw shape:
// name → schema), and the host describes tools with JSON Schema. zodArgs
// writes the JavaScript for that shape from a tool's input schema, for the
// subset tool schemas use: objects of strings, numbers, integers, booleans,
// enums and arrays of those, with their bounds, descriptions and required
// fields. Anything else becomes z.unknown(): the host validates every call
// against the full JSON Schema anyway (toolinput), so the zod schema only
// has to tell the model what to send, never to be the gate.

// jsonSchema is the part of a JSON Schema zodArgs reads.
type jsonSchema struct {
	Type        any                    `json:"type"`
	Description string                 `json:"description"`
	Properties  map[string]*jsonSchema `json:"properties"`
	Required    []string               `json:"required"`
	Items       *jsonSchema            `json:"items"`
	Enum        []any                  `json:"enum"`
	Minimum     *float64               `json:"minimum"`
	Maximum     *float64               `json:"maximum"`
	MinLength   *int                   `json:"minLength"`
	MaxLength   *int                   `json:"maxLength"`
	MinItems    *int                   `json:"minItems"`
	MaxItems    *int                   `json:"maxItems"`
}

// zodArgs is the source of the args object for a tool with this input
// schema, e.g. `{"n": z.number().int().optional()}`; "{}" for a schema
// with no properties.
func zodArgs(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "{}", nil
	}
	var s jsonSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("input schema: %w", err)
	}
	return zodShape(&s), nil
}

// zodShape is an object schema's properties as a zod raw shape, in name
// order (the seeded file is the same from run to run).
func zodShape(s *jsonSchema) string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("{")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		expr := zodOf(s.Properties[n])
		if !slices.Contains(s.Required, n) {
			expr += ".optional()"
		}
		fmt.Fprintf(&b, "%s: %s", jsString(n), expr)
	}
	b.WriteString("}")
	return b.String()
}

// zodOf is the zod expression for one schema.
func zodOf(s *jsonSchema) string {
	if s == nil {
		return "z.unknown()"
	}
	var e string
	switch typ, _ := s.Type.(string); {
	case len(s.Enum) > 0 && allStrings(s.Enum):
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vals[i] = jsString(v.(string))
		}
		e = "z.enum([" + strings.Join(vals, ", ") + "])"
	case typ == "string":
		e = "z.string()" + bound("min", s.MinLength) + bound("max", s.MaxLength)
	case typ == "integer" || typ == "number":
		e = "z.number()"
		if typ == "integer" {
			e += ".int()"
		}
		e += boundF("min", s.Minimum) + boundF("max", s.Maximum)
	case typ == "boolean":
		e = "z.boolean()"
	case typ == "array":
		e = "z.array(" + zodOf(s.Items) + ")" + bound("min", s.MinItems) + bound("max", s.MaxItems)
	case typ == "object" && len(s.Properties) > 0:
		e = "z.object(" + zodShape(s) + ")"
	case typ == "object":
		e = "z.record(z.string(), z.unknown())"
	default:
		e = "z.unknown()"
	}
	if s.Description != "" {
		e += ".describe(" + jsString(s.Description) + ")"
	}
	return e
}

func bound(method string, n *int) string {
	if n == nil {
		return ""
	}
	return fmt.Sprintf(".%s(%d)", method, *n)
}

func boundF(method string, f *float64) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf(".%s(%s)", method, strings.TrimSuffix(fmt.Sprintf("%g", *f), ".0"))
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// jsString quotes s for JavaScript source: a JSON string is one, and
// json.Marshal escapes <, > and & too, so no "</script>"-like text and no
// U+2028 can end it early.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
