package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Fields listed per schema unless max_fields_per_tool says otherwise, and
// its bounds: 20 covers the inputs and outputs of most tools; 200 is a
// summary no longer.
const (
	DefaultFieldsPerTool = 20
	maxFieldsPerTool     = 200
)

// maxSummaryDescriptionRunes bounds the agent's and each tool's description
// in the summary: a paragraph; the full contract has the rest.
const maxSummaryDescriptionRunes = 300

// MaxSummaryOutput bounds what coding_agent_describe_selected_agent_contract
// returns, like MaxContractOutput.
const MaxSummaryOutput = 256 << 10

// maxReadinessReasons bounds the unresolved references readiness_reasons
// spells out; unresolved_references lists them all.
const maxReadinessReasons = 20

// The readiness values.
const (
	readinessReady      = "ready"
	readinessIncomplete = "incomplete"
	readinessNone       = "none"
)

var describeContractTool = tool{name: "coding_agent_describe_selected_agent_contract", spec: describeSpec, run: describeContract}

type summaryOutput struct {
	Available bool `json:"available"`
	// Reason says why there is no agent, when Available is false.
	Reason string `json:"reason,omitempty"`
	// Readiness is ready, incomplete or none; ReadinessReasons say why it
	// is not ready.
	Readiness        string                     `json:"readiness"`
	ReadinessReasons []string                   `json:"readiness_reasons"`
	AppID            string                     `json:"app_id,omitempty"`
	GeneratedAt      string                     `json:"generated_at,omitempty"`
	Agent            *agentSummary              `json:"agent,omitempty"`
	Tools            []toolSummary              `json:"tools"`
	Unresolved       []agentcontract.Unresolved `json:"unresolved_references"`
	Truncated        bool                       `json:"truncated"`
	Note             string                     `json:"note,omitempty"`
}

type agentSummary struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	ModelID     string `json:"model_id,omitempty"`
	// InstructionsChars is the length of the instructions, which the full
	// contract holds.
	InstructionsChars int `json:"instructions_chars"`
}

type toolSummary struct {
	Name                 string `json:"name"`
	Description          string `json:"description"`
	DescriptionTruncated bool   `json:"description_truncated,omitempty"`
	// InputType and OutputType are the schemas' top-level types; empty
	// when the tool declares no such schema.
	InputType    string  `json:"input_type,omitempty"`
	OutputType   string  `json:"output_type,omitempty"`
	InputFields  []field `json:"input_fields"`
	OutputFields []field `json:"output_fields"`
	// InputFieldsOmitted and OutputFieldsOmitted count fields past
	// max_fields_per_tool (or cut to fit the result).
	InputFieldsOmitted  int `json:"input_fields_omitted,omitempty"`
	OutputFieldsOmitted int `json:"output_fields_omitted,omitempty"`
	// UnresolvedSchemaRefs are $refs in the schemas that point outside
	// them or at nothing.
	UnresolvedSchemaRefs []string               `json:"unresolved_schema_refs,omitempty"`
	UIHints              *agentcontract.UIHints `json:"ui_hints,omitempty"`
	// SchemaBytes is the size of both schemas, compact: what
	// coding_agent_get_agent_integration_contract would return of them.
	SchemaBytes int `json:"schema_bytes"`
}

const fieldListSchema = `{"type": "array", "items": {"type": "object", "required": ["name", "type", "required", "description"],
        "properties": {"name": {"type": "string"}, "type": {"type": "string"}, "required": {"type": "boolean"},
          "description": {"type": "string"}, "ref": {"type": "string"}}}}`

func describeSpec() plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("Summarise the app's selected runtime agent in a few KiB: the agent (id, name, "+
			"description), readiness (ready: it has tools and every tool reference resolved; incomplete, with "+
			"readiness_reasons; none: the app has no selected agent), and per tool its description, its input_fields "+
			"and output_fields ({name, type, required, description}; rows[].x is field x of the objects in array rows), "+
			"ui_hints (chart, table or stat) and schema_bytes. At most max_fields_per_tool (default %d) input and "+
			"output fields are listed per tool. Full schemas are not included: get them with "+
			"coding_agent_get_agent_integration_contract.", DefaultFieldsPerTool),
		InputSchema: json.RawMessage(fmt.Sprintf(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "max_fields_per_tool": {"type": "integer", "minimum": 1, "maximum": %d,
      "description": "Most input fields and most output fields listed per tool; default %d"}
  }
}`, maxFieldsPerTool, DefaultFieldsPerTool)),
		OutputSchema: json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["available", "readiness", "readiness_reasons", "tools", "unresolved_references", "truncated"],
  "properties": {
    "available": {"type": "boolean", "description": "False when the app has no selected runtime agent"},
    "reason": {"type": "string"},
    "readiness": {"enum": ["ready", "incomplete", "none"]},
    "readiness_reasons": {"type": "array", "items": {"type": "string"}},
    "app_id": {"type": "string"},
    "generated_at": {"type": "string", "format": "date-time"},
    "agent": {"type": "object", "required": ["id", "name", "description", "instructions_chars"],
      "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "description": {"type": "string"},
        "model_id": {"type": "string"}, "instructions_chars": {"type": "integer"}}},
    "tools": {"type": "array", "items": {"type": "object",
      "required": ["name", "description", "input_fields", "output_fields", "schema_bytes"],
      "properties": {
        "name": {"type": "string"}, "description": {"type": "string"}, "description_truncated": {"type": "boolean"},
        "input_type": {"type": "string"}, "output_type": {"type": "string"},
        "input_fields": ` + fieldListSchema + `,
        "output_fields": ` + fieldListSchema + `,
        "input_fields_omitted": {"type": "integer"}, "output_fields_omitted": {"type": "integer"},
        "unresolved_schema_refs": {"type": "array", "items": {"type": "string"}},
        "ui_hints": ` + uiHintsSchema + `,
        "schema_bytes": {"type": "integer"}}}},
    "unresolved_references": ` + unresolvedSchema + `,
    "truncated": {"type": "boolean", "description": "True when field lists or tools were cut to fit; see note"},
    "note": {"type": "string"}
  }
}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func describeContract(ctx context.Context, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "max_fields_per_tool")
	if te != nil {
		return failed(te), nil
	}
	limit, te := in.integer("max_fields_per_tool", 1, maxFieldsPerTool, DefaultFieldsPerTool)
	if te != nil {
		return failed(te), nil
	}
	c, te, err := load(ctx, ws)
	if err != nil || te != nil {
		return failed(te), err
	}
	out := summaryOutput{Tools: []toolSummary{}, Unresolved: []agentcontract.Unresolved{}, ReadinessReasons: []string{}}
	if c != nil {
		out.AppID, out.GeneratedAt = c.AppID, timestamp(c.GeneratedAt)
	}
	if c == nil || c.Agent == nil {
		out.Reason, out.Readiness = noAgent(c), readinessNone
		out.ReadinessReasons = []string{out.Reason}
		return plugin.ToolOK(out), nil
	}

	out.Available = true
	desc, _ := trimRunes(c.Agent.Description, maxSummaryDescriptionRunes)
	out.Agent = &agentSummary{ID: c.Agent.ID, Name: c.Agent.Name, Description: desc, ModelID: c.Agent.ModelID,
		InstructionsChars: utf8.RuneCountInString(c.Agent.Instructions)}
	out.Unresolved = c.Unresolved
	out.Readiness, out.ReadinessReasons = readiness(c)
	for _, t := range c.Tools {
		out.Tools = append(out.Tools, summariseTool(t, limit))
	}
	if err := fitSummary(&out, MaxSummaryOutput); err != nil {
		return plugin.ToolResult{}, err
	}
	return plugin.ToolOK(out), nil
}

// readiness judges a contract with an agent: ready when it has a resolved
// tool and every reference resolved, incomplete otherwise.
func readiness(c *agentcontract.Contract) (string, []string) {
	reasons := []string{}
	if len(c.Tools) == 0 {
		reasons = append(reasons, "the agent has no resolved tools")
	}
	for i, u := range c.Unresolved {
		if i == maxReadinessReasons {
			reasons = append(reasons, fmt.Sprintf("%d more tool references did not resolve (see unresolved_references)", len(c.Unresolved)-i))
			break
		}
		why := strings.TrimSpace(u.Reason)
		if why == "" {
			why = "no reason given"
		}
		why, _ = trimRunes(why, maxSummaryDescriptionRunes)
		reasons = append(reasons, fmt.Sprintf("tool reference %q did not resolve: %s", u.Reference, why))
	}
	if len(reasons) > 0 {
		return readinessIncomplete, reasons
	}
	return readinessReady, reasons
}

func summariseTool(t agentcontract.Tool, limit int) toolSummary {
	desc, cut := trimRunes(strings.TrimSpace(t.Description), maxSummaryDescriptionRunes)
	s := toolSummary{
		Name: t.Name, Description: desc, DescriptionTruncated: cut,
		UIHints: hintsOf(t), SchemaBytes: len(t.InputSchema) + len(t.OutputSchema),
	}
	in, out := summarise(t.InputSchema), summarise(t.OutputSchema)
	s.InputType, s.OutputType = in.Type, out.Type
	s.InputFields, s.InputFieldsOmitted = capFields(in.Fields, limit)
	s.OutputFields, s.OutputFieldsOmitted = capFields(out.Fields, limit)
	for _, ref := range append(in.Unresolved, out.Unresolved...) {
		if !slices.Contains(s.UnresolvedSchemaRefs, ref) {
			s.UnresolvedSchemaRefs = append(s.UnresolvedSchemaRefs, ref)
		}
	}
	return s
}

// capFields keeps the first limit fields, never nil, and counts the rest.
func capFields(fields []field, limit int) ([]field, int) {
	if fields == nil {
		return []field{}, 0
	}
	if len(fields) <= limit {
		return fields, 0
	}
	return fields[:limit], len(fields) - limit
}

// fitSummary keeps out within limit bytes for agents with very many tools:
// it drops the field lists of tools from the last one back (they keep their
// name, description and counts), then whole tools from the end, then
// unresolved references from the end.
func fitSummary(out *summaryOutput, limit int) error {
	size, err := encodedSize(out)
	if err != nil || size <= limit {
		return err
	}
	out.Truncated = true
	limit -= noteRoom
	stripped, dropped := 0, 0
	for i := len(out.Tools) - 1; i >= 0 && size > limit; i-- {
		t := &out.Tools[i]
		if len(t.InputFields) == 0 && len(t.OutputFields) == 0 {
			continue
		}
		before, err := encodedSize(t)
		if err != nil {
			return err
		}
		t.InputFieldsOmitted += len(t.InputFields)
		t.OutputFieldsOmitted += len(t.OutputFields)
		t.InputFields, t.OutputFields = []field{}, []field{}
		after, err := encodedSize(t)
		if err != nil {
			return err
		}
		size -= before - after
		stripped++
	}
	for size > limit && len(out.Tools) > 0 {
		n, err := encodedSize(out.Tools[len(out.Tools)-1])
		if err != nil {
			return err
		}
		out.Tools = out.Tools[:len(out.Tools)-1]
		size -= n + 1 // and its comma
		dropped++
	}
	droppedRefs := 0
	for size > limit && len(out.Unresolved) > 0 {
		n, err := encodedSize(out.Unresolved[len(out.Unresolved)-1])
		if err != nil {
			return err
		}
		out.Unresolved = out.Unresolved[:len(out.Unresolved)-1]
		size -= n + 1
		droppedRefs++
	}
	var notes []string
	if stripped > 0 {
		notes = append(notes, fmt.Sprintf("the field lists of the last %d tools were left out (see *_fields_omitted)", stripped))
	}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("the last %d tools were left out; coding_agent_get_agent_integration_contract with tool_names has them", dropped))
	}
	if droppedRefs > 0 {
		notes = append(notes, fmt.Sprintf("the last %d unresolved references were left out", droppedRefs))
	}
	out.Note = strings.Join(notes, ". ")
	return nil
}
