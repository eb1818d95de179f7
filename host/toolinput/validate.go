package toolinput

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolschema"
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
type Problem = toolschema.Problem

// Guard normalises and validates tool inputs. Compiled schemas are cached by
// tool name and schema digest, so a toolpack relaunched with a new schema is
// recompiled. Safe for concurrent use.
type Guard struct {
	mu    sync.Mutex
	cache map[string]*compiled
}

type compiled struct {
	digest [32]byte
	schema *toolschema.Schema
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
	if problems := c.schema.Validate(input); len(problems) > 0 {
		return nil, notes, refusal(spec.Name, problems, notes)
	}
	return input, notes, nil
}

func refusal(tool string, problems []Problem, notes []string) *plugin.ToolError {
	total := len(problems)
	if len(problems) > maxReportedProblems {
		problems = problems[:maxReportedProblems]
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.String()
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

func (g *Guard) compile(spec plugin.ToolSpec) *compiled {
	digest := sha256.Sum256(spec.InputSchema)
	g.mu.Lock()
	c, ok := g.cache[spec.Name]
	g.mu.Unlock()
	if ok && c.digest == digest {
		return c
	}
	c = &compiled{digest: digest, props: map[string]bool{}}
	schema, err := toolschema.Compile(spec.InputSchema)
	if err == nil {
		c.schema, c.props = schema, schema.Properties()
	}
	c.err = err
	g.mu.Lock()
	g.cache[spec.Name] = c
	g.mu.Unlock()
	return c
}
