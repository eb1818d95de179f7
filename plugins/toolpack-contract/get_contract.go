package contract

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// MaxContractOutput bounds what coding_agent_get_agent_integration_contract
// returns: the tools of a typical agent with all their schemas fit many
// times over, while one result stays a modest part of a model's context.
const MaxContractOutput = 256 << 10

// maxToolNames bounds tool_names: more than any agent has tools.
const maxToolNames = 100

// Bounds on text a result over MaxContractOutput keeps, once every schema
// has been replaced and it is still too large (a pathological document):
// instructions keep room for their gist, descriptions a paragraph.
const (
	cutInstructionsRunes = 16 << 10
	cutDescriptionRunes  = 1000
)

// noteRoom is what a truncated result's note may take: its few sentences
// are well under 512 bytes.
const noteRoom = 512

var getContractTool = tool{name: "coding_agent_get_agent_integration_contract", spec: getContractSpec, run: getContract}

// notAvailable is the answer when the app has no selected agent.
type notAvailable struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason"`
	AppID     string `json:"app_id,omitempty"`
}

type contractOutput struct {
	Available     bool                       `json:"available"`
	SchemaVersion int                        `json:"schema_version"`
	AppID         string                     `json:"app_id"`
	GeneratedAt   string                     `json:"generated_at,omitempty"`
	Agent         agentcontract.Agent        `json:"agent"`
	Tools         []contractTool             `json:"tools"`
	Unresolved    []agentcontract.Unresolved `json:"unresolved_references"`
	// UnknownToolNames are names in tool_names the agent has no resolved
	// tool of.
	UnknownToolNames []string `json:"unknown_tool_names,omitempty"`
	Truncated        bool     `json:"truncated"`
	// Note says what was cut when Truncated.
	Note string `json:"note,omitempty"`
}

type contractTool struct {
	Name         string                 `json:"name"`
	Description  string                 `json:"description"`
	Status       string                 `json:"status"`
	InputSchema  json.RawMessage        `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage        `json:"output_schema,omitempty"`
	UIHints      *agentcontract.UIHints `json:"ui_hints,omitempty"`
}

// schemaStub stands in for a schema left out of a truncated result.
type schemaStub struct {
	Truncated bool `json:"truncated"`
	Bytes     int  `json:"bytes"`
}

const uiHintsSchema = `{"type": "object", "description": "How to present the tool's output",
      "required": ["kind"],
      "properties": {
        "kind": {"enum": ["chart", "table", "stat"]},
        "title": {"type": "string"},
        "data": {"type": "string", "description": "Output property holding the rows or points; absent: the output itself"},
        "chart_type": {"type": "string"}, "x": {"type": "string"}, "y": {"type": "array", "items": {"type": "string"}},
        "series": {"type": "string"},
        "columns": {"type": "array", "items": {"type": "object", "required": ["field"],
          "properties": {"field": {"type": "string"}, "label": {"type": "string"}}}},
        "value": {"type": "string"}, "label": {"type": "string"}, "unit": {"type": "string"}
      }}`

const unresolvedSchema = `{"type": "array", "description": "Tool references of the agent that did not resolve",
      "items": {"type": "object", "required": ["reference", "reason"],
        "properties": {"reference": {"type": "string"}, "reason": {"type": "string"}}}}`

func getContractSpec() plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("Get the integration contract of the app's selected runtime agent, to write code "+
			"that calls it: the agent (id, name, description, instructions, model_id), every resolved tool with its "+
			"complete input_schema and output_schema (JSON Schema) and ui_hints (kind chart, table or stat: how the app "+
			"should show the output), and unresolved_references (tools the agent names that could not be resolved). "+
			"Give tool_names to get only those tools. available=false with a reason when the app has no selected "+
			"agent. At most %d KiB comes back: a larger contract says truncated=true and replaces its largest "+
			"schemas with {\"truncated\": true, \"bytes\": N}; ask for fewer tool_names to get them whole. "+
			"For an overview first, use coding_agent_describe_selected_agent_contract.", MaxContractOutput>>10),
		InputSchema: json.RawMessage(fmt.Sprintf(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "tool_names": {"type": "array", "minItems": 1, "maxItems": %d, "uniqueItems": true,
      "items": {"type": "string", "minLength": 1},
      "description": "Only these tools of the agent; default all"}
  }
}`, maxToolNames)),
		OutputSchema: json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["available"],
  "properties": {
    "available": {"type": "boolean", "description": "False when the app has no selected runtime agent"},
    "reason": {"type": "string", "description": "Why there is no contract, when available is false"},
    "schema_version": {"type": "integer"},
    "app_id": {"type": "string"},
    "generated_at": {"type": "string", "format": "date-time"},
    "agent": {"type": "object", "required": ["id", "name", "description", "instructions"],
      "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "description": {"type": "string"},
        "instructions": {"type": "string"}, "model_id": {"type": "string"}}},
    "tools": {"type": "array", "items": {"type": "object", "required": ["name", "description", "status"],
      "properties": {
        "name": {"type": "string"}, "description": {"type": "string"}, "status": {"const": "resolved"},
        "input_schema": {"type": ["object", "boolean"]}, "output_schema": {"type": ["object", "boolean"]},
        "ui_hints": ` + uiHintsSchema + `}}},
    "unresolved_references": ` + unresolvedSchema + `,
    "unknown_tool_names": {"type": "array", "items": {"type": "string"},
      "description": "Names in tool_names the agent has no resolved tool of"},
    "truncated": {"type": "boolean", "description": "True when the result was cut to fit; see note"},
    "note": {"type": "string"}
  }
}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func getContract(ctx context.Context, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "tool_names")
	if te != nil {
		return failed(te), nil
	}
	names, te := in.names("tool_names", maxToolNames)
	if te != nil {
		return failed(te), nil
	}
	c, te, err := load(ctx, ws)
	if err != nil || te != nil {
		return failed(te), err
	}
	if c == nil || c.Agent == nil {
		out := notAvailable{Reason: noAgent(c)}
		if c != nil {
			out.AppID = c.AppID
		}
		return plugin.ToolOK(out), nil
	}

	out := contractOutput{
		Available: true, SchemaVersion: c.SchemaVersion, AppID: c.AppID, GeneratedAt: timestamp(c.GeneratedAt),
		Agent: *c.Agent, Tools: []contractTool{}, Unresolved: c.Unresolved,
	}
	for _, t := range c.Tools {
		if names != nil && !slices.Contains(names, t.Name) {
			continue
		}
		out.Tools = append(out.Tools, contractTool{
			Name: t.Name, Description: t.Description, Status: t.Status,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, UIHints: hintsOf(t),
		})
	}
	for _, n := range names {
		if !slices.ContainsFunc(c.Tools, func(t agentcontract.Tool) bool { return t.Name == n }) {
			out.UnknownToolNames = append(out.UnknownToolNames, n)
		}
	}
	if err := fit(&out, MaxContractOutput); err != nil {
		return plugin.ToolResult{}, err
	}
	return plugin.ToolOK(out), nil
}

// fit cuts out until it encodes in at most limit bytes: first it replaces
// schemas, largest first, with a stub giving their size (the rest of the
// contract stays whole, and a narrower tool_names gets them back); if that
// is not enough, it shortens the agent's instructions and the descriptions,
// then leaves out tools and unresolved references from the end.
func fit(out *contractOutput, limit int) error {
	size, err := encodedSize(out)
	if err != nil || size <= limit {
		return err
	}
	out.Truncated = true
	var notes []string
	// Fit under the limit less room for the note, written at the end.
	limit -= noteRoom

	type slot struct {
		schema *json.RawMessage
		size   int
	}
	var slots []slot
	for i := range out.Tools {
		for _, s := range []*json.RawMessage{&out.Tools[i].InputSchema, &out.Tools[i].OutputSchema} {
			if len(*s) > 0 {
				n, err := encodedSize(*s)
				if err != nil {
					return err
				}
				slots = append(slots, slot{s, n})
			}
		}
	}
	slices.SortStableFunc(slots, func(a, b slot) int { return cmp.Compare(b.size, a.size) })
	replaced := 0
	for _, s := range slots {
		if size <= limit {
			break
		}
		stub, err := json.Marshal(schemaStub{Truncated: true, Bytes: s.size})
		if err != nil {
			return err
		}
		*s.schema = stub
		size -= s.size - len(stub)
		replaced++
	}
	if replaced > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d schemas were replaced by {\"truncated\": true, \"bytes\": N}, largest first; "+
			"ask again with fewer tool_names to get them whole", replaced, len(slots)))
	}
	if size, err = encodedSize(out); err != nil || size <= limit {
		out.Note = strings.Join(notes, ". ")
		return err
	}

	shortened := false
	for _, text := range []struct {
		s     *string
		runes int
	}{{&out.Agent.Instructions, cutInstructionsRunes}, {&out.Agent.Description, cutDescriptionRunes}} {
		if cut, ok := trimRunes(*text.s, text.runes); ok {
			*text.s, shortened = cut, true
		}
	}
	for i := range out.Tools {
		if cut, ok := trimRunes(out.Tools[i].Description, cutDescriptionRunes); ok {
			out.Tools[i].Description, shortened = cut, true
		}
	}
	// out.Unresolved is this call's own parse of the document: changing it
	// touches nothing shared.
	for i := range out.Unresolved {
		if cut, ok := trimRunes(out.Unresolved[i].Reason, cutDescriptionRunes); ok {
			out.Unresolved[i].Reason, shortened = cut, true
		}
	}
	if shortened {
		notes = append(notes, "long instructions and descriptions were shortened")
	}
	if size, err = encodedSize(out); err != nil || size <= limit {
		out.Note = strings.Join(notes, ". ")
		return err
	}

	// Last resort: whole entries from the end, tools first (tool_names gets
	// them back). Each entry's size is measured once; the comma before it
	// goes with it.
	droppedTools, droppedRefs := 0, 0
	for size > limit && len(out.Tools) > 0 {
		n, err := encodedSize(out.Tools[len(out.Tools)-1])
		if err != nil {
			return err
		}
		out.Tools = out.Tools[:len(out.Tools)-1]
		size -= n + 1
		droppedTools++
	}
	for size > limit && len(out.Unresolved) > 0 {
		n, err := encodedSize(out.Unresolved[len(out.Unresolved)-1])
		if err != nil {
			return err
		}
		out.Unresolved = out.Unresolved[:len(out.Unresolved)-1]
		size -= n + 1
		droppedRefs++
	}
	if droppedTools > 0 {
		notes = append(notes, fmt.Sprintf("the last %d tools were left out; ask for them with tool_names", droppedTools))
	}
	if droppedRefs > 0 {
		notes = append(notes, fmt.Sprintf("the last %d unresolved references were left out", droppedRefs))
	}
	if size > limit {
		// Only the agent is left and it still does not fit (ids and names
		// of megabytes): drop the instructions rather than go over.
		out.Agent.Instructions = ""
		notes = append(notes, "the agent's instructions were left out")
	}
	out.Note = strings.Join(notes, ". ")
	return nil
}

// encodedSize is the size of v as plugin.ToolOK encodes it.
func encodedSize(v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode contract output: %w", err)
	}
	return len(b), nil
}

// timestamp renders a time for an output, empty when unset.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
