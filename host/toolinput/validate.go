package toolinput

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// CodeValidationFailed is the tool result code for input that does not match
// the tool's schema after normalisation.
const CodeValidationFailed = "TOOL_INPUT_VALIDATION_FAILED"

// CodeSchemaInvalid is the tool result code when the tool's own schema does
// not compile: the toolpack is at fault, not the model.
const CodeSchemaInvalid = "TOOL_SCHEMA_INVALID"

// maxReportedProblems bounds the problems one refusal lists: enough for a
// model to fix its call, not a wall of text when it sent garbage.
const maxReportedProblems = 10

// Problem is one way the input breaks the schema.
type Problem struct {
	// Field is the path of the offending value, dotted with [i] for array
	// items ("edits[2].path"); "" for the input as a whole.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Guard normalises and validates tool inputs. Compiled schemas are cached by
// tool name and schema digest, so a toolpack relaunched with a new schema is
// recompiled. Safe for concurrent use.
type Guard struct {
	mu    sync.Mutex
	cache map[string]*compiled
}

type compiled struct {
	digest [32]byte
	schema *jsonschema.Schema
	props  map[string]bool
	err    error
}

// NewGuard returns an empty Guard.
func NewGuard() *Guard { return &Guard{cache: map[string]*compiled{}} }

// Check returns the input to dispatch for spec, normalised, with the repairs
// made; or a tool error naming the bad fields. A tool without an input schema
// takes its input as sent.
func (g *Guard) Check(spec plugin.ToolSpec, raw json.RawMessage) (json.RawMessage, []string, *plugin.ToolError) {
	if len(bytes.TrimSpace(spec.InputSchema)) == 0 {
		return raw, nil, nil
	}
	c := g.compile(spec)
	if c.err != nil {
		return nil, nil, &plugin.ToolError{Code: CodeSchemaInvalid,
			Message: fmt.Sprintf("the input schema of %s does not compile, so its input cannot be checked: %v", spec.Name, c.err)}
	}
	input, notes := Normalise(raw, c.props)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return nil, notes, &plugin.ToolError{Code: CodeValidationFailed, Message: fmt.Sprintf("the input is not valid JSON: %v; send a JSON object", err)}
	}
	verr := c.schema.Validate(doc)
	if verr == nil {
		return input, notes, nil
	}
	var problems []Problem
	if ve, ok := verr.(*jsonschema.ValidationError); ok {
		problems = leafProblems(ve, nil)
	}
	if len(problems) == 0 {
		problems = []Problem{{Message: verr.Error()}}
	}
	return nil, notes, refusal(spec.Name, problems, notes)
}

func refusal(tool string, problems []Problem, notes []string) *plugin.ToolError {
	total := len(problems)
	if len(problems) > maxReportedProblems {
		problems = problems[:maxReportedProblems]
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		if p.Field == "" {
			parts[i] = p.Message
		} else {
			parts[i] = p.Field + ": " + p.Message
		}
	}
	msg := fmt.Sprintf("the input of %s does not match its schema: %s", tool, strings.Join(parts, "; "))
	if total > len(problems) {
		msg += fmt.Sprintf(" (and %d more)", total-len(problems))
	}
	diag, _ := json.Marshal(map[string]any{"problems": problems, "problem_count": total, "normalised": notesOrEmpty(notes)})
	return &plugin.ToolError{Code: CodeValidationFailed, Message: msg, Field: problems[0].Field, Diagnostics: diag}
}

func notesOrEmpty(n []string) []string {
	if n == nil {
		return []string{}
	}
	return n
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

func (g *Guard) compile(spec plugin.ToolSpec) *compiled {
	digest := sha256.Sum256(spec.InputSchema)
	g.mu.Lock()
	c, ok := g.cache[spec.Name]
	g.mu.Unlock()
	if ok && c.digest == digest {
		return c
	}
	c = &compiled{digest: digest, props: map[string]bool{}}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.InputSchema))
	if err == nil {
		comp := jsonschema.NewCompiler()
		// Tool schemas are self-contained; never fetch a $ref from the
		// network or disk on a model's behalf.
		comp.UseLoader(noLoader{})
		const loc = "tool-input.json"
		if err = comp.AddResource(loc, doc); err == nil {
			c.schema, err = comp.Compile(loc)
		}
		if m, ok := doc.(map[string]any); ok {
			if props, ok := m["properties"].(map[string]any); ok {
				for k := range props {
					c.props[k] = true
				}
			}
		}
	}
	c.err = err
	g.mu.Lock()
	g.cache[spec.Name] = c
	g.mu.Unlock()
	return c
}

// printer renders the library's messages in English.
var printer = message.NewPrinter(language.English)

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %s is outside the tool's schema; tool schemas must be self-contained", url)
}
