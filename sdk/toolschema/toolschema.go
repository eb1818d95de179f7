// Package toolschema compiles and applies the JSON Schemas of tool inputs
// and outputs. The host validates every tool call with it, and the toolpack
// kit (sdk/toolpacktest) holds a toolpack's example cases to it, so a
// toolpack that passes its kit has its calls accepted by the host.
//
// Schemas must be self-contained: a $ref outside the schema is refused,
// never fetched.
package toolschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one way a value breaks a schema.
type Problem struct {
	// Field is the path of the offending value, dotted with [i] for array
	// items ("edits[2].path"); "" for the value as a whole.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// String renders the problem as "field: message".
func (p Problem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Schema is a compiled schema; safe for concurrent use.
type Schema struct {
	schema *jsonschema.Schema
	props  map[string]bool
}

// Compile compiles a schema document (any draft the library knows; 2020-12
// when it names none).
func Compile(raw json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	const loc = "tool-schema.json"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, err
	}
	compiled, err := comp.Compile(loc)
	if err != nil {
		return nil, err
	}
	s := &Schema{schema: compiled, props: map[string]bool{}}
	if m, ok := doc.(map[string]any); ok {
		if props, ok := m["properties"].(map[string]any); ok {
			for k := range props {
				s.props[k] = true
			}
		}
	}
	return s, nil
}

// Properties are the names the schema declares at its top level.
func (s *Schema) Properties() map[string]bool { return s.props }

// Validate checks a JSON value against the schema; nil means it matches.
// Invalid JSON is one problem for the value as a whole.
func (s *Schema) Validate(value json.RawMessage) []Problem {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return []Problem{{Message: fmt.Sprintf("is not valid JSON: %v", err)}}
	}
	verr := s.schema.Validate(doc)
	if verr == nil {
		return nil
	}
	var problems []Problem
	if ve, ok := verr.(*jsonschema.ValidationError); ok {
		problems = leafProblems(ve, nil)
	}
	if len(problems) == 0 {
		problems = []Problem{{Message: verr.Error()}}
	}
	return problems
}

// leafProblems flattens a validation error tree into its leaves, the
// concrete failures; the inner nodes only say "some subschema failed".
func leafProblems(ve *jsonschema.ValidationError, out []Problem) []Problem {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			out = leafProblems(c, out)
		}
		return out
	}
	field := fieldPath(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			out = append(out, Problem{Field: join(field, m), Message: "is required"})
		}
		return out
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			out = append(out, Problem{Field: join(field, p), Message: "is not a field of this tool"})
		}
		return out
	}
	return append(out, Problem{Field: field, Message: ve.ErrorKind.LocalizedString(printer)})
}

// fieldPath renders a JSON pointer's tokens as edits[2].path.
func fieldPath(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil && b.Len() > 0 {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// printer renders the library's messages in English.
var printer = message.NewPrinter(language.English)

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %s is outside the tool's schema; tool schemas must be self-contained", url)
}
