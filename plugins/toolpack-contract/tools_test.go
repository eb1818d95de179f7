package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	getTool      = "coding_agent_get_agent_integration_contract"
	describeTool = "coding_agent_describe_selected_agent_contract"
)

// salesAgent is a contract with one tool of each hint kind and one that
// did not resolve.
func salesAgent() *agentcontract.Contract {
	return &agentcontract.Contract{
		SchemaVersion: agentcontract.SchemaVersion, AppID: "app-1",
		GeneratedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		Agent: &agentcontract.Agent{ID: "ag-1", Name: "Sales bot", Description: "Answers questions about sales",
			Instructions: "Answer in one sentence.", ModelID: "model-a"},
		Tools: []agentcontract.Tool{
			{Name: "sales_by_month", Description: "Monthly sales totals", Status: agentcontract.StatusResolved,
				InputSchema: json.RawMessage(`{"type":"object","required":["year"],"properties":{
					"year":{"type":"integer","description":"Calendar year"},
					"region":{"$ref":"#/$defs/region","description":"Only this region"}},
					"$defs":{"region":{"enum":["north","south"]}}}`),
				OutputSchema: json.RawMessage(`{"type":"object","required":["points"],
					"x-ui":{"kind":"chart","chartType":"line","data":"points","x":"month","y":"total"},
					"properties":{"points":{"type":"array","items":{"type":"object","required":["month"],
						"properties":{"month":{"type":"string"},"total":{"type":"number","description":"Sum in EUR"}}}}}}`)},
			{Name: "top_customers", Description: "The best customers", Status: agentcontract.StatusResolved,
				InputSchema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":["integer","null"]}}}`),
				OutputSchema: json.RawMessage(`{"type":"array","x_ui":{"kind":"table","columns":["name",{"field":"spend","label":"Spend"}]},
					"items":{"$ref":"#/$defs/customer"},
					"$defs":{"customer":{"type":"object","properties":{"name":{"type":"string"},"spend":{"type":"number"},
						"owner":{"$ref":"https://example.com/user.json"}}}}}`)},
			{Name: "revenue_today", Description: "Revenue so far today", Status: agentcontract.StatusResolved,
				InputSchema:  json.RawMessage(`{"type":"object"}`),
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"revenue":{"type":"number"}}}`),
				UIHints:      &agentcontract.UIHints{Kind: agentcontract.KindStat, Value: "revenue", Label: "Revenue", Unit: "EUR"}},
		},
		Unresolved: []agentcontract.Unresolved{},
	}
}

func encode(t *testing.T, c *agentcontract.Contract) string {
	t.Helper()
	data, err := agentcontract.Marshal(c)
	require.NoError(t, err)
	return string(data)
}

// workspaceWith is a confined folder workspace holding the contract
// document (none when doc is empty) and an app file.
func workspaceWith(t *testing.T, doc string) *dirfs.FS {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{}`), 0o644))
	if doc != "" {
		full := filepath.Join(dir, filepath.FromSlash(agentcontract.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(doc), 0o644))
	}
	ws, err := dirfs.New(dir, nil)
	require.NoError(t, err)
	return ws
}

// call runs one tool of a fresh pack and decodes a successful output into
// out.
func call(t *testing.T, ws *dirfs.FS, tool, input string, out any) plugin.ToolResult {
	t.Helper()
	res, err := New().Call(t.Context(), toolpack.Call{Tool: tool, Input: json.RawMessage(input)}, ws)
	require.NoError(t, err)
	if out != nil && res.OK {
		require.NoError(t, json.Unmarshal(res.Output, out))
	}
	return res
}

func compactLen(t *testing.T, raw json.RawMessage) int {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, raw))
	return b.Len()
}

func requireFailure(t *testing.T, res plugin.ToolResult, code, field string) {
	t.Helper()
	require.False(t, res.OK, "want %s, got %s", code, res.Output)
	require.NotNil(t, res.Error)
	assert.Equal(t, code, res.Error.Code, res.Error.Message)
	assert.Equal(t, field, res.Error.Field, res.Error.Message)
}

func TestNoContract(t *testing.T) {
	for name, doc := range map[string]string{
		"no file":    "",
		"null agent": `{"schema_version":1,"app_id":"app-1","agent":null,"tools":[],"unresolved_references":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			ws := workspaceWith(t, doc)
			res := call(t, ws, getTool, `{}`, nil)
			require.True(t, res.OK, "%+v", res.Error)
			want := `{"available":false,"reason":"the app has no selected runtime agent"}`
			if doc != "" {
				want = `{"available":false,"reason":"the app has no selected runtime agent","app_id":"app-1"}`
			}
			assert.JSONEq(t, want, string(res.Output))

			var sum summaryOutput
			res = call(t, ws, describeTool, ``, &sum)
			require.True(t, res.OK, "%+v", res.Error)
			assert.False(t, sum.Available)
			assert.Equal(t, "none", sum.Readiness)
			assert.Equal(t, []string{"the app has no selected runtime agent"}, sum.ReadinessReasons)
			assert.Empty(t, sum.Tools)
			assert.Nil(t, sum.Agent)
		})
	}

	t.Run("reason from the document", func(t *testing.T) {
		ws := workspaceWith(t, `{"schema_version":1,"app_id":"a","agent":null,"reason":"the selected agent was deleted"}`)
		res := call(t, ws, getTool, `{"tool_names":["x"]}`, nil)
		require.True(t, res.OK, "%+v", res.Error)
		assert.JSONEq(t, `{"available":false,"reason":"the selected agent was deleted","app_id":"a"}`, string(res.Output))
		var sum summaryOutput
		call(t, ws, describeTool, `{}`, &sum)
		assert.Equal(t, "the selected agent was deleted", sum.Reason)
	})
}

func TestGetContract(t *testing.T) {
	c := salesAgent()
	ws := workspaceWith(t, encode(t, c))
	var out contractOutput
	res := call(t, ws, getTool, `{}`, &out)
	require.True(t, res.OK, "%+v", res.Error)

	assert.True(t, out.Available)
	assert.Equal(t, 1, out.SchemaVersion)
	assert.Equal(t, "app-1", out.AppID)
	assert.Equal(t, "2026-11-22T10:00:00Z", out.GeneratedAt)
	assert.Equal(t, *c.Agent, out.Agent)
	assert.False(t, out.Truncated)
	assert.Empty(t, out.Note)
	assert.Equal(t, []agentcontract.Unresolved{}, out.Unresolved)
	require.Len(t, out.Tools, 3)
	for i, tl := range out.Tools {
		assert.Equal(t, c.Tools[i].Name, tl.Name)
		assert.Equal(t, "resolved", tl.Status)
		assert.JSONEq(t, string(c.Tools[i].InputSchema), string(tl.InputSchema), "complete schemas")
		assert.JSONEq(t, string(c.Tools[i].OutputSchema), string(tl.OutputSchema))
	}
	// Hints from the output schema's x-ui where the host gave none, the
	// host's where it did.
	assert.Equal(t, &agentcontract.UIHints{Kind: "chart", ChartType: "line", Data: "points", X: "month", Y: []string{"total"}}, out.Tools[0].UIHints)
	assert.Equal(t, &agentcontract.UIHints{Kind: "table", Columns: []agentcontract.Column{{Field: "name"}, {Field: "spend", Label: "Spend"}}}, out.Tools[1].UIHints)
	assert.Equal(t, &agentcontract.UIHints{Kind: "stat", Value: "revenue", Label: "Revenue", Unit: "EUR"}, out.Tools[2].UIHints)
}

func TestGetContractToolNames(t *testing.T) {
	ws := workspaceWith(t, encode(t, salesAgent()))
	var out contractOutput
	res := call(t, ws, getTool, `{"tool_names":["revenue_today","nope","sales_by_month"]}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	require.Len(t, out.Tools, 2)
	assert.Equal(t, "sales_by_month", out.Tools[0].Name, "the agent's order, not the request's")
	assert.Equal(t, "revenue_today", out.Tools[1].Name)
	assert.Equal(t, []string{"nope"}, out.UnknownToolNames)

	res = call(t, ws, getTool, `{"tool_names":["nope"]}`, &out)
	require.True(t, res.OK)
	assert.Contains(t, string(res.Output), `"tools":[]`)
}

func TestUnresolvedReferences(t *testing.T) {
	c := salesAgent()
	c.Unresolved = []agentcontract.Unresolved{{Reference: "crm_lookup", Reason: "the tool was deleted"}, {Reference: "weather"}}
	ws := workspaceWith(t, encode(t, c))

	var out contractOutput
	require.True(t, call(t, ws, getTool, `{}`, &out).OK)
	assert.Equal(t, c.Unresolved, out.Unresolved)

	var sum summaryOutput
	require.True(t, call(t, ws, describeTool, `{}`, &sum).OK)
	assert.Equal(t, "incomplete", sum.Readiness)
	assert.Equal(t, []string{
		`tool reference "crm_lookup" did not resolve: the tool was deleted`,
		`tool reference "weather" did not resolve: no reason given`,
	}, sum.ReadinessReasons)
	assert.Equal(t, c.Unresolved, sum.Unresolved)

	// Many unresolved references: readiness_reasons names the first few.
	c = salesAgent()
	for i := range 50 {
		c.Unresolved = append(c.Unresolved, agentcontract.Unresolved{Reference: fmt.Sprintf("ref_%02d", i), Reason: "gone"})
	}
	require.True(t, call(t, workspaceWith(t, encode(t, c)), describeTool, `{}`, &sum).OK)
	assert.Len(t, sum.ReadinessReasons, maxReadinessReasons+1)
	assert.Equal(t, "30 more tool references did not resolve (see unresolved_references)", sum.ReadinessReasons[maxReadinessReasons])
	assert.Len(t, sum.Unresolved, 50)

	// No tools at all is incomplete too.
	c = salesAgent()
	c.Tools = nil
	require.True(t, call(t, workspaceWith(t, encode(t, c)), describeTool, `{}`, &sum).OK)
	assert.Equal(t, "incomplete", sum.Readiness)
	assert.Equal(t, []string{"the agent has no resolved tools"}, sum.ReadinessReasons)
}

func TestDescribe(t *testing.T) {
	c := salesAgent()
	c.Tools[2].Description = strings.Repeat("word ", 100)
	ws := workspaceWith(t, encode(t, c))
	var sum summaryOutput
	res := call(t, ws, describeTool, `{}`, &sum)
	require.True(t, res.OK, "%+v", res.Error)

	assert.True(t, sum.Available)
	assert.Equal(t, "ready", sum.Readiness)
	assert.Equal(t, []string{}, sum.ReadinessReasons)
	assert.Equal(t, &agentSummary{ID: "ag-1", Name: "Sales bot", Description: "Answers questions about sales", ModelID: "model-a", InstructionsChars: 23}, sum.Agent)
	require.Len(t, sum.Tools, 3)

	sales := sum.Tools[0]
	assert.Equal(t, "object", sales.InputType)
	assert.Equal(t, []field{
		{Name: "year", Type: "integer", Required: true, Description: "Calendar year"},
		{Name: "region", Type: "string", Description: "Only this region"},
	}, sales.InputFields, "declaration order; a local $ref followed")
	assert.Equal(t, []field{
		{Name: "points", Type: "array<object>", Required: true},
		{Name: "points[].month", Type: "string", Required: true},
		{Name: "points[].total", Type: "number", Description: "Sum in EUR"},
	}, sales.OutputFields)
	assert.Equal(t, "chart", sales.UIHints.Kind)
	assert.Equal(t, compactLen(t, c.Tools[0].InputSchema)+compactLen(t, c.Tools[0].OutputSchema), sales.SchemaBytes)
	assert.Empty(t, sales.UnresolvedSchemaRefs)

	customers := sum.Tools[1]
	assert.Equal(t, []field{{Name: "limit", Type: "integer|null"}}, customers.InputFields)
	assert.Equal(t, "array<object>", customers.OutputType)
	assert.Equal(t, []field{
		{Name: "[].name", Type: "string"},
		{Name: "[].spend", Type: "number"},
		{Name: "[].owner", Type: "unknown", Ref: "https://example.com/user.json"},
	}, customers.OutputFields)
	assert.Equal(t, []string{"https://example.com/user.json"}, customers.UnresolvedSchemaRefs)
	assert.Equal(t, "table", customers.UIHints.Kind)

	stat := sum.Tools[2]
	assert.True(t, stat.DescriptionTruncated)
	assert.LessOrEqual(t, len([]rune(stat.Description)), maxSummaryDescriptionRunes)
	assert.True(t, strings.HasSuffix(stat.Description, "…"))
	assert.Equal(t, []field{}, stat.InputFields)
	assert.Equal(t, "stat", stat.UIHints.Kind)
	assert.NotContains(t, string(res.Output), `"$defs"`, "no schema in full")
}

func TestDescribeMaxFields(t *testing.T) {
	props := make([]string, 30)
	for i := range props {
		props[i] = fmt.Sprintf(`"f%02d":{"type":"string"}`, i)
	}
	c := salesAgent()
	c.Tools[0].InputSchema = json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
	ws := workspaceWith(t, encode(t, c))

	var sum summaryOutput
	require.True(t, call(t, ws, describeTool, `{}`, &sum).OK)
	assert.Len(t, sum.Tools[0].InputFields, DefaultFieldsPerTool)
	assert.Equal(t, 10, sum.Tools[0].InputFieldsOmitted)
	assert.Equal(t, "f19", sum.Tools[0].InputFields[19].Name)

	require.True(t, call(t, ws, describeTool, `{"max_fields_per_tool":2.0}`, &sum).OK)
	assert.Len(t, sum.Tools[0].InputFields, 2)
	assert.Equal(t, 28, sum.Tools[0].InputFieldsOmitted)
	assert.Len(t, sum.Tools[0].OutputFields, 2)
	assert.Equal(t, 1, sum.Tools[0].OutputFieldsOmitted)
}

func TestCorruptContract(t *testing.T) {
	for name, doc := range map[string]string{
		"broken JSON":    `{"schema_version":1,"agent":`,
		"not an object":  `[1,2]`,
		"future version": `{"schema_version":2,"agent":null}`,
		"bad tool":       `{"schema_version":1,"agent":{"id":"a"},"tools":[{"name":"t","status":"maybe"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			ws := workspaceWith(t, doc)
			for _, tool := range []string{getTool, describeTool} {
				res := call(t, ws, tool, `{}`, nil)
				requireFailure(t, res, CodeContractInvalid, "")
				assert.Contains(t, res.Error.Message, agentcontract.Path)
			}
		})
	}

	t.Run("folder in its place", func(t *testing.T) {
		ws := workspaceWith(t, "")
		require.NoError(t, os.MkdirAll(filepath.Join(ws.Root(), filepath.FromSlash(agentcontract.Path)), 0o755))
		requireFailure(t, call(t, ws, getTool, `{}`, nil), CodeContractInvalid, "")
	})
	t.Run("too large", func(t *testing.T) {
		ws := workspaceWith(t, `{"schema_version":1,"agent":null,"reason":"`+strings.Repeat("x", MaxContractBytes)+`"}`)
		res := call(t, ws, describeTool, `{}`, nil)
		requireFailure(t, res, CodeContractInvalid, "")
		assert.Contains(t, res.Error.Message, "the limit is")
	})
}

func TestOversizedSchemaTruncated(t *testing.T) {
	c := salesAgent()
	// A big but valid schema: many described properties.
	props := make([]string, 3000)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%04d":{"type":"string","description":"%s"}`, i, strings.Repeat("d", 80))
	}
	big := json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
	c.Tools[1].OutputSchema = big
	ws := workspaceWith(t, encode(t, c))

	var out contractOutput
	res := call(t, ws, getTool, `{}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.LessOrEqual(t, len(res.Output), MaxContractOutput)
	assert.True(t, out.Truncated)
	assert.Contains(t, out.Note, "1 of 6 schemas were replaced")
	assert.JSONEq(t, fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(big)), string(out.Tools[1].OutputSchema))
	assert.JSONEq(t, string(c.Tools[0].OutputSchema), string(out.Tools[0].OutputSchema), "the others stay whole")
	assert.JSONEq(t, string(c.Tools[1].InputSchema), string(out.Tools[1].InputSchema))

	// The summary never carries schemas, so it needs no truncation.
	var sum summaryOutput
	res = call(t, ws, describeTool, `{}`, &sum)
	require.True(t, res.OK)
	assert.False(t, sum.Truncated)
	assert.Less(t, len(res.Output), 16<<10)
	assert.Equal(t, 3000-DefaultFieldsPerTool, sum.Tools[1].OutputFieldsOmitted)
	assert.Equal(t, compactLen(t, c.Tools[1].InputSchema)+len(big), sum.Tools[1].SchemaBytes)
}

func TestHugeContractStaysBounded(t *testing.T) {
	// Hundreds of tools with long descriptions and long instructions: even
	// with every schema stubbed the contract is over the bound.
	c := salesAgent()
	c.Agent.Instructions = strings.Repeat("Be kind. ", 50_000)
	c.Tools = nil
	for i := range 600 {
		c.Tools = append(c.Tools, agentcontract.Tool{
			Name: fmt.Sprintf("tool_%03d", i), Description: strings.Repeat("z", 3000), Status: agentcontract.StatusResolved,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}}}`),
		})
	}
	ws := workspaceWith(t, encode(t, c))

	var out contractOutput
	res := call(t, ws, getTool, `{}`, &out)
	require.True(t, res.OK, "%+v", res.Error)
	assert.LessOrEqual(t, len(res.Output), MaxContractOutput)
	assert.True(t, out.Truncated)
	assert.Contains(t, out.Note, "600 of 600 schemas were replaced")
	assert.Contains(t, out.Note, "shortened")
	assert.Contains(t, out.Note, "tools were left out")
	assert.Less(t, len(out.Tools), 600)
	assert.Equal(t, "tool_000", out.Tools[0].Name, "tools are dropped from the end")

	// Names and descriptions of as many tools as fit come first: when
	// leaving out every field list is not enough, tools go from the end.
	var sum summaryOutput
	res = call(t, ws, describeTool, `{}`, &sum)
	require.True(t, res.OK, "%+v", res.Error)
	assert.LessOrEqual(t, len(res.Output), MaxSummaryOutput)
	assert.True(t, sum.Truncated)
	assert.Contains(t, sum.Note, "field lists of the last 600 tools were left out")
	assert.Contains(t, sum.Note, "tools were left out; coding_agent_get_agent_integration_contract")
	assert.Equal(t, []field{}, sum.Tools[0].InputFields)
	assert.Equal(t, 3, sum.Tools[0].InputFieldsOmitted)

	// Many fields per tool: the field lists go from the last tool back,
	// and no tool is left out.
	props := make([]string, 200)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%03d":{"type":"string","description":"%s"}`, i, strings.Repeat("d", 100))
	}
	c.Agent.Instructions = ""
	c.Tools = nil
	for i := range 40 {
		c.Tools = append(c.Tools, agentcontract.Tool{Name: fmt.Sprintf("tool_%03d", i), Status: agentcontract.StatusResolved,
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)})
	}
	ws = workspaceWith(t, encode(t, c))
	res = call(t, ws, describeTool, `{"max_fields_per_tool":200}`, &sum)
	require.True(t, res.OK, "%+v", res.Error)
	assert.LessOrEqual(t, len(res.Output), MaxSummaryOutput)
	assert.True(t, sum.Truncated)
	assert.Len(t, sum.Tools, 40)
	assert.Len(t, sum.Tools[0].InputFields, 200)
	assert.Equal(t, []field{}, sum.Tools[39].InputFields)
	assert.Equal(t, 200, sum.Tools[39].InputFieldsOmitted)
	assert.NotContains(t, sum.Note, "tools were left out;")
}

func TestBadInput(t *testing.T) {
	ws := workspaceWith(t, encode(t, salesAgent()))
	cases := []struct {
		tool, input, field string
	}{
		{getTool, `{"tool_name":["x"]}`, "tool_name"},
		{getTool, `{"tool_names":"sales_by_month"}`, "tool_names"},
		{getTool, `{"tool_names":[1]}`, "tool_names"},
		{getTool, `{"tool_names":[]}`, "tool_names"},
		{getTool, `{"tool_names":[""]}`, "tool_names"},
		{getTool, `{"tool_names":["a","a"]}`, "tool_names"},
		{getTool, `{"tool_names":null}`, "tool_names"},
		{getTool, `{"tool_names":["a"],"tool_names":["b"]}`, "tool_names"},
		{getTool, `[]`, ""},
		{getTool, `{} {}`, ""},
		{describeTool, `{"max_fields":5}`, "max_fields"},
		{describeTool, `{"max_fields_per_tool":"5"}`, "max_fields_per_tool"},
		{describeTool, `{"max_fields_per_tool":0}`, "max_fields_per_tool"},
		{describeTool, `{"max_fields_per_tool":201}`, "max_fields_per_tool"},
		{describeTool, `{"max_fields_per_tool":2.5}`, "max_fields_per_tool"},
		{describeTool, `{"max_fields_per_tool":1e400}`, "max_fields_per_tool"},
		{describeTool, `"text"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+tc.input, func(t *testing.T) {
			requireFailure(t, call(t, ws, tc.tool, tc.input, nil), CodeInputInvalid, tc.field)
		})
	}
}

func TestUnknownToolAndConfig(t *testing.T) {
	ws := workspaceWith(t, "")
	requireFailure(t, call(t, ws, "coding_agent_read_file", `{}`, nil), toolpack.CodeUnknownTool, "tool")

	p := New()
	assert.NoError(t, p.Configure(t.Context(), nil))
	assert.NoError(t, p.Configure(t.Context(), json.RawMessage(`{}`)))
	err := p.Configure(t.Context(), json.RawMessage(`{"budget":1}`))
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "%v", err)
}

func TestTrimRunes(t *testing.T) {
	s, cut := trimRunes("héllo wörld", 20)
	assert.Equal(t, "héllo wörld", s)
	assert.False(t, cut)
	s, cut = trimRunes("héllo wörld", 7)
	assert.Equal(t, "héllo…", s)
	assert.True(t, cut)
	assert.LessOrEqual(t, len([]rune(s)), 7)
}
