package toolpacktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/toolschema"
)

// toolName is the shape of a tool name: what model providers accept as a
// function name, in the lower snake case the host's policy rules use.
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// The checks below return problems as sentences instead of failing a
// *testing.T, so that the kit's own tests can feed them broken packs.

// specProblems lists what is wrong with a pack's tool list.
func specProblems(tools []plugin.ToolSpec) []string {
	if len(tools) == 0 {
		return []string{"the toolpack lists no tools"}
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	seen := map[string]bool{}
	for _, tl := range tools {
		if !toolName.MatchString(tl.Name) {
			add("tool name %q does not match %s", tl.Name, toolName)
		}
		if seen[tl.Name] {
			add("tool %q is listed twice", tl.Name)
		}
		seen[tl.Name] = true
		if strings.TrimSpace(tl.Description) == "" {
			add("tool %q has no description: the model chooses tools by it", tl.Name)
		}
		switch tl.DefaultPermission {
		case plugin.PermissionAllow, plugin.PermissionAsk, plugin.PermissionDeny:
		default:
			add("tool %q: default permission %q is not allow, ask or deny", tl.Name, tl.DefaultPermission)
		}
		for _, p := range inputSchemaProblems(tl.InputSchema) {
			add("tool %q: input schema %s", tl.Name, p)
		}
		if _, err := toolschema.Compile(tl.InputSchema); err != nil {
			add("tool %q: input schema does not compile, so the host refuses every call (TOOL_SCHEMA_INVALID): %v", tl.Name, err)
		}
		if len(tl.OutputSchema) > 0 {
			var v any
			if err := json.Unmarshal(tl.OutputSchema, &v); err != nil {
				add("tool %q: output schema is not valid JSON: %v", tl.Name, err)
			} else if _, isObj := v.(map[string]any); !isObj {
				if _, isBool := v.(bool); !isBool {
					add("tool %q: output schema is neither a JSON Schema object nor a boolean", tl.Name)
				}
			} else if _, err := toolschema.Compile(tl.OutputSchema); err != nil {
				add("tool %q: output schema does not compile: %v", tl.Name, err)
			}
		}
	}
	return out
}

func inputSchemaProblems(raw json.RawMessage) []string {
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return []string{fmt.Sprintf("is not a JSON object: %v", err)}
	}
	var out []string
	if schema["type"] != "object" {
		out = append(out, `must say "type": "object": tool input is always an object`)
	}
	props, hasProps := schema["properties"].(map[string]any)
	if p, ok := schema["properties"]; ok && !hasProps {
		out = append(out, fmt.Sprintf("has properties that are not an object: %v", p))
	}
	if r, ok := schema["required"]; ok {
		names, isList := r.([]any)
		if !isList {
			out = append(out, "has required that is not a list")
		}
		for _, n := range names {
			name, isStr := n.(string)
			if !isStr {
				out = append(out, fmt.Sprintf("has a required entry that is not a string: %v", n))
				continue
			}
			if _, declared := props[name]; !declared && schema["additionalProperties"] == false {
				out = append(out, fmt.Sprintf("requires %q, which additionalProperties: false forbids", name))
			}
		}
	}
	return out
}

// caseProblems lists what is wrong with the author's cases for tools: cases
// that cannot be run as written, and tools no successful case shows working.
func caseProblems(tools []plugin.ToolSpec, cases []Case) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	specs := map[string]plugin.ToolSpec{}
	for _, tl := range tools {
		specs[tl.Name] = tl
	}
	names := map[string]bool{}
	succeeds, covered := map[string]bool{}, map[string]bool{}
	for i, cs := range cases {
		label := fmt.Sprintf("case %d (%q)", i, cs.Name)
		if cs.Name == "" {
			add("%s has no Name", label)
		} else if names[cs.Name] {
			add("%s: the name is used twice", label)
		}
		names[cs.Name] = true
		spec, known := specs[cs.Tool]
		if !known && cs.WantCode != toolpack.CodeUnknownTool {
			add("%s names tool %q, which the pack does not list", label, cs.Tool)
		}
		if cs.WantOK && (cs.WantCode != "" || cs.WantField != "") {
			add("%s wants success and a failure code at once", label)
		}
		if !cs.WantOK && cs.WantCode == "" {
			add("%s expects a failure but names no WantCode: say which", label)
		}
		for p := range cs.Files {
			if _, err := cleanPath(p); err != nil {
				add("%s: file %q is not a workspace path: %v", label, p, err)
			}
		}
		if !known {
			continue
		}
		covered[cs.Tool] = true
		if cs.WantOK {
			succeeds[cs.Tool] = true
			// The host validates input against the schema before dispatch: an
			// example that only works with input the schema refuses could
			// never run for real.
			for _, p := range schemaProblems(spec.InputSchema, cs.Input) {
				add("%s: its input does not match the tool's input schema: %s", label, p)
			}
		}
	}
	for _, tl := range tools {
		switch {
		case !covered[tl.Name]:
			add("tool %q has no case: every tool needs at least one example call", tl.Name)
		case !succeeds[tl.Name]:
			add("tool %q has only failing cases: add one that succeeds (WantOK)", tl.Name)
		}
	}
	return out
}

// schemaProblems validates value against a tool's schema with the same
// validator the host uses on every call (sdk/toolschema), so an example
// the kit accepts is one the host accepts. An empty schema accepts all.
func schemaProblems(schemaRaw, valueRaw json.RawMessage) []string {
	if len(bytes.TrimSpace(schemaRaw)) == 0 {
		return nil
	}
	schema, err := toolschema.Compile(schemaRaw)
	if err != nil {
		return []string{fmt.Sprintf("cannot be checked: the schema does not compile: %v", err)}
	}
	var out []string
	for _, p := range schema.Validate(valueRaw) {
		out = append(out, p.String())
	}
	return out
}
