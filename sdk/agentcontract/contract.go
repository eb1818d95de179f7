// Package agentcontract is the document that tells a coding agent how to call
// an app's selected runtime agent: the agent's identity and instructions, and
// every tool it offers with its input and output JSON Schemas and UI hints.
//
// The host writes it at the start of every run into the run's workspace at
// Path (under .cache/, which is never part of the app's saved revisions);
// toolpacks read it back through the workspace they are lent. Both sides use
// these types, Parse and Marshal, so they agree on one shape.
package agentcontract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Path is where the host writes the selected agent's contract, relative to
// the workspace root.
const Path = ".cache/agenthost/selected_agent_contract.json"

// SchemaVersion is the version of the document this package reads and
// writes. A change that old readers would misread bumps it; adding an
// optional field does not (readers ignore fields they do not know).
const SchemaVersion = 1

// StatusResolved is the status of a tool whose definition was found and
// whose schemas are complete. References the host could not resolve are
// listed in Contract.Unresolved instead of Tools.
const StatusResolved = "resolved"

// The kinds of UI hint a tool's schema can carry.
const (
	KindChart = "chart"
	KindTable = "table"
	KindStat  = "stat"
)

// Contract is the integration contract of an app's selected runtime agent.
type Contract struct {
	SchemaVersion int    `json:"schema_version"`
	AppID         string `json:"app_id"`
	// Agent is nil when the app has no selected agent; Reason then says why.
	Agent *Agent `json:"agent"`
	// Reason explains a nil Agent in words for the coding agent ("the
	// selected agent was deleted"); empty otherwise.
	Reason string `json:"reason,omitempty"`
	// Tools are the agent's resolved tools, in the agent's order.
	Tools []Tool `json:"tools"`
	// Unresolved are the tool references of the agent that the host could
	// not turn into a Tool (a deleted tool, a schema that does not parse).
	Unresolved  []Unresolved `json:"unresolved_references"`
	GeneratedAt time.Time    `json:"generated_at"`
}

// Agent is the selected runtime agent.
type Agent struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Instructions are the agent's system instructions as configured.
	Instructions string `json:"instructions"`
	// ModelID is the model the agent is pinned to, if any.
	ModelID string `json:"model_id,omitempty"`
}

// Tool is one resolved tool of the agent.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema and OutputSchema are JSON Schemas (objects or booleans);
	// nil when the tool declares none.
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// UIHints is how an app should present the tool's output, normalised
	// from the output schema's x-ui object by NormaliseUIHints.
	UIHints *UIHints `json:"ui_hints,omitempty"`
	// Status is StatusResolved.
	Status string `json:"status"`
}

// Unresolved is a tool reference of the agent that did not resolve.
type Unresolved struct {
	// Reference is the reference as the agent names it (a tool name or id).
	Reference string `json:"reference"`
	// Reason says why it did not resolve.
	Reason string `json:"reason"`
}

// UIHints is the normalised form of a schema's x-ui object. Kind says which
// of the kind-specific fields may be set; fields of other kinds stay empty.
// Every field name refers to a property of the tool's output (of the items
// of Data, when Data names an array).
type UIHints struct {
	// Kind is KindChart, KindTable or KindStat.
	Kind  string `json:"kind"`
	Title string `json:"title,omitempty"`
	// Data names the output property holding the rows or points; empty
	// means the output itself.
	Data string `json:"data,omitempty"`

	// ChartType is the chart's style as the schema names it (line, bar, …).
	ChartType string `json:"chart_type,omitempty"`
	// X is the field on the horizontal axis; Y the plotted fields.
	X string   `json:"x,omitempty"`
	Y []string `json:"y,omitempty"`
	// Series is the field that splits points into series.
	Series string `json:"series,omitempty"`

	// Columns are a table's columns in display order.
	Columns []Column `json:"columns,omitempty"`

	// Value is the field a stat shows, Label its caption, Unit its unit.
	Value string `json:"value,omitempty"`
	Label string `json:"label,omitempty"`
	Unit  string `json:"unit,omitempty"`
}

// Column is one column of a table hint.
type Column struct {
	Field string `json:"field"`
	Label string `json:"label,omitempty"`
}

// Parse decodes and checks a contract document. It refuses anything but a
// single JSON object of SchemaVersion, and documents that break Validate.
// Fields it does not know are ignored (see SchemaVersion).
func Parse(data []byte) (*Contract, error) {
	// The version first: a document of another version may not decode into
	// these types at all, and "unsupported version" is the useful error.
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := decodeOne(data, &head); err != nil {
		return nil, err
	}
	switch {
	case head.SchemaVersion == nil:
		return nil, errors.New("agent contract: schema_version is missing")
	case *head.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("agent contract: schema_version %d is not supported (want %d)", *head.SchemaVersion, SchemaVersion)
	}
	var c Contract
	if err := decodeOne(data, &c); err != nil {
		return nil, err
	}
	for i := range c.Tools {
		c.Tools[i].InputSchema = compactSchema(c.Tools[i].InputSchema)
		c.Tools[i].OutputSchema = compactSchema(c.Tools[i].OutputSchema)
	}
	// Readers range over these; null and absent mean none.
	if c.Tools == nil {
		c.Tools = []Tool{}
	}
	if c.Unresolved == nil {
		c.Unresolved = []Unresolved{}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// decodeOne decodes data, which must hold exactly one JSON value, into v.
func decodeOne(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("agent contract: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("agent contract: data after the JSON object")
	}
	return nil
}

// compactSchema drops a schema's insignificant whitespace, so that its size
// is what it costs a reader and the same schema has the same bytes however
// it was written; null becomes nil (no schema).
func compactSchema(raw json.RawMessage) json.RawMessage {
	raw = nullToNil(raw)
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw // cannot happen after a successful decode; Validate reports it
	}
	return b.Bytes()
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

// Validate checks what Parse and Marshal promise: the version, an agent
// with an id (or none, and then no tools), uniquely named resolved tools
// whose schemas are JSON Schema objects or booleans and whose hints are of
// a known kind, and unresolved references that name something.
func (c *Contract) Validate() error {
	if c.SchemaVersion != SchemaVersion {
		return fmt.Errorf("agent contract: schema_version %d is not supported (want %d)", c.SchemaVersion, SchemaVersion)
	}
	if c.Agent == nil && len(c.Tools) > 0 {
		return fmt.Errorf("agent contract: %d tools but no agent", len(c.Tools))
	}
	if c.Agent != nil && strings.TrimSpace(c.Agent.ID) == "" {
		return errors.New("agent contract: agent.id is empty")
	}
	seen := make(map[string]bool, len(c.Tools))
	for i, t := range c.Tools {
		where := fmt.Sprintf("agent contract: tools[%d]", i)
		switch {
		case strings.TrimSpace(t.Name) == "":
			return fmt.Errorf("%s: name is empty", where)
		case seen[t.Name]:
			return fmt.Errorf("%s: tool %q is listed twice", where, t.Name)
		case t.Status != StatusResolved:
			return fmt.Errorf("%s (%s): status %q is not %q", where, t.Name, t.Status, StatusResolved)
		}
		seen[t.Name] = true
		if err := checkSchema(t.InputSchema); err != nil {
			return fmt.Errorf("%s (%s): input_schema %w", where, t.Name, err)
		}
		if err := checkSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("%s (%s): output_schema %w", where, t.Name, err)
		}
		if t.UIHints != nil {
			if err := t.UIHints.validate(); err != nil {
				return fmt.Errorf("%s (%s): ui_hints: %w", where, t.Name, err)
			}
		}
	}
	for i, u := range c.Unresolved {
		if strings.TrimSpace(u.Reference) == "" {
			return fmt.Errorf("agent contract: unresolved_references[%d]: reference is empty", i)
		}
	}
	return nil
}

// checkSchema accepts no schema, a JSON object or a boolean (JSON Schema's
// two forms).
func checkSchema(raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil
	}
	if !json.Valid(t) {
		return errors.New("is not valid JSON")
	}
	switch {
	case t[0] == '{', string(t) == "true", string(t) == "false":
		return nil
	}
	return errors.New("is neither a JSON object nor a boolean")
}

// Marshal checks c with Validate and encodes it as the host writes it, with
// empty lists as [] rather than null so readers need not tell them apart.
func Marshal(c *Contract) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out := *c
	if out.Tools == nil {
		out.Tools = []Tool{}
	}
	if out.Unresolved == nil {
		out.Unresolved = []Unresolved{}
	}
	return json.MarshalIndent(&out, "", "  ")
}

func (h *UIHints) validate() error {
	switch h.Kind {
	case KindChart, KindTable, KindStat:
	default:
		return fmt.Errorf("kind %q is not %s, %s or %s", h.Kind, KindChart, KindTable, KindStat)
	}
	for i, col := range h.Columns {
		if col.Field == "" {
			return fmt.Errorf("columns[%d]: field is empty", i)
		}
	}
	for i, y := range h.Y {
		if y == "" {
			return fmt.Errorf("y[%d] is empty", i)
		}
	}
	return nil
}

// NormaliseUIHints reads the `x-ui` (or, failing that, `x_ui`) key of a JSON
// Schema object and returns its normalised hints: nil when the key is absent
// or null, or the schema is not an object; an error when the key is
// malformed or names an unknown kind.
//
// x-ui is written by hand, so the reading is forgiving about spelling: keys
// match ignoring case, "_" and "-" (x_field, xField and x-field are one
// key), the kind may be given as "kind" or "type" or as the whole value
// ("x-ui": "table"), a chart's y may be one name or a list, and a table's
// columns may be names or {field, label} objects. Keys it does not know are
// ignored: hints are advice, and a renderer may read more than we do.
func NormaliseUIHints(schema json.RawMessage) (*UIHints, error) {
	schema = bytes.TrimSpace(schema)
	if len(schema) == 0 {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil {
		if !json.Valid(schema) {
			return nil, fmt.Errorf("schema is not valid JSON: %w", err)
		}
		return nil, nil // a boolean schema, or not a schema at all: no hints
	}
	key := "x-ui"
	raw, ok := obj[key]
	if !ok {
		key = "x_ui"
		raw = obj[key]
	}
	raw = nullToNil(raw)
	if raw == nil {
		return nil, nil
	}
	var kindOnly string
	if err := json.Unmarshal(raw, &kindOnly); err == nil {
		h := &UIHints{Kind: normaliseKind(kindOnly)}
		if err := h.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return h, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, fmt.Errorf("%s must be an object or a kind name", key)
	}
	r := hintReader{keys: map[string]string{}, vals: map[string]json.RawMessage{}}
	for k, v := range members {
		n := foldKey(k)
		if prev, dup := r.keys[n]; dup {
			return nil, fmt.Errorf("%s has both %q and %q", key, min(prev, k), max(prev, k))
		}
		r.keys[n], r.vals[n] = k, v
	}
	h, err := r.hints()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return h, nil
}

// hintReader reads an x-ui object's members by folded key (see foldKey).
type hintReader struct {
	keys map[string]string // folded → as written, for messages
	vals map[string]json.RawMessage
}

func (r hintReader) hints() (*UIHints, error) {
	kind, err := r.str("kind")
	if err != nil {
		return nil, err
	}
	// "type" names the kind unless "kind" did; then, on a chart, it is the
	// chart's style ({"kind": "chart", "type": "bar"}).
	typ, err := r.str("type")
	if err != nil {
		return nil, err
	}
	if kind == "" {
		kind, typ = typ, ""
	}
	if kind == "" {
		return nil, errors.New("kind is missing")
	}
	h := &UIHints{Kind: normaliseKind(kind)}
	if err := h.validate(); err != nil {
		return nil, err
	}
	if h.Title, err = r.str("title"); err != nil {
		return nil, err
	}
	if h.Data, err = r.str("data", "datafield", "datapath", "datakey"); err != nil {
		return nil, err
	}
	switch h.Kind {
	case KindChart:
		if h.ChartType, err = r.str("charttype", "variant"); err != nil {
			return nil, err
		}
		if h.ChartType == "" {
			h.ChartType = typ
		}
		if h.X, err = r.str("x", "xfield", "xkey", "xaxis"); err != nil {
			return nil, err
		}
		if h.Y, err = r.names("y", "yfield", "yfields", "ykey", "ykeys", "yaxis"); err != nil {
			return nil, err
		}
		if h.Series, err = r.str("series", "seriesfield", "serieskey"); err != nil {
			return nil, err
		}
	case KindTable:
		if h.Columns, err = r.columns(); err != nil {
			return nil, err
		}
	case KindStat:
		if h.Value, err = r.str("value", "valuefield", "valuekey"); err != nil {
			return nil, err
		}
		if h.Label, err = r.str("label"); err != nil {
			return nil, err
		}
		if h.Unit, err = r.str("unit"); err != nil {
			return nil, err
		}
	}
	if err := h.validate(); err != nil {
		return nil, err
	}
	return h, nil
}

// find returns the first of the folded names present, with its key as
// written.
func (r hintReader) find(names ...string) (json.RawMessage, string) {
	for _, n := range names {
		if v, ok := r.vals[n]; ok && nullToNil(v) != nil {
			return v, r.keys[n]
		}
	}
	return nil, ""
}

func (r hintReader) str(names ...string) (string, error) {
	raw, key := r.find(names...)
	if raw == nil {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s must be a string", key)
	}
	return strings.TrimSpace(s), nil
}

// names reads one name or a list of names.
func (r hintReader) names(names ...string) ([]string, error) {
	raw, key := r.find(names...)
	if raw == nil {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{strings.TrimSpace(one)}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s must be a string or a list of strings", key)
	}
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	return list, nil
}

func (r hintReader) columns() ([]Column, error) {
	raw, key := r.find("columns", "fields")
	if raw == nil {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s must be a list", key)
	}
	cols := make([]Column, 0, len(items))
	for i, item := range items {
		var name string
		if err := json.Unmarshal(item, &name); err == nil {
			cols = append(cols, Column{Field: strings.TrimSpace(name)})
			continue
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(item, &members); err != nil {
			return nil, fmt.Errorf("%s[%d] must be a field name or an object with a field", key, i)
		}
		col := hintReader{keys: map[string]string{}, vals: map[string]json.RawMessage{}}
		for k, v := range members {
			col.keys[foldKey(k)], col.vals[foldKey(k)] = fmt.Sprintf("%s[%d].%s", key, i, k), v
		}
		field, err := col.str("field", "key", "name", "accessor")
		if err != nil {
			return nil, err
		}
		label, err := col.str("label", "title", "header")
		if err != nil {
			return nil, err
		}
		cols = append(cols, Column{Field: field, Label: label})
	}
	return cols, nil
}

// foldKey is the spelling-blind form of an x-ui key: lower case without
// "_" and "-".
func foldKey(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(k))
}

func normaliseKind(k string) string { return strings.ToLower(strings.TrimSpace(k)) }
