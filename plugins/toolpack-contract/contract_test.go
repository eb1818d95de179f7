package contract

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/toolpacktest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConformance(t *testing.T) {
	withContract := func(doc string) map[string]string {
		return map[string]string{"src/main.ts": "export {}\n", agentcontract.Path: doc}
	}
	full := withContract(encode(t, salesAgent()))
	noAgent := withContract(`{"schema_version":1,"app_id":"app-1","agent":null,"reason":"the selected agent was deleted"}`)
	corrupt := withContract(`{"schema_version":1,"agent":{`)
	none := map[string]string{"src/main.ts": "export {}\n"}
	in := func(s string) json.RawMessage { return json.RawMessage(s) }
	decode := func(t *testing.T, res plugin.ToolResult, out any) {
		t.Helper()
		require.True(t, res.OK, "%+v", res.Error)
		require.NoError(t, json.Unmarshal(res.Output, out))
	}

	toolpacktest.Run(t, func(t *testing.T, ws workspace.Resolver) *toolpack.Client {
		return plugintest.Toolpack(t, New(), nil, ws)
	}, []toolpacktest.Case{
		{Name: "get full", Tool: getTool, Files: full, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out contractOutput
				decode(t, res, &out)
				assert.True(t, out.Available)
				assert.Equal(t, "Sales bot", out.Agent.Name)
				assert.Len(t, out.Tools, 3)
				assert.Equal(t, "chart", out.Tools[0].UIHints.Kind)
			}},
		{Name: "get some tools", Tool: getTool, Files: full, Input: in(`{"tool_names":["top_customers","gone"]}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out contractOutput
				decode(t, res, &out)
				require.Len(t, out.Tools, 1)
				assert.Equal(t, "top_customers", out.Tools[0].Name)
				assert.Equal(t, []string{"gone"}, out.UnknownToolNames)
			}},
		{Name: "get without file", Tool: getTool, Files: none, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				assert.JSONEq(t, `{"available":false,"reason":"the app has no selected runtime agent"}`, string(res.Output))
			}},
		{Name: "get null agent", Tool: getTool, Files: noAgent, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				assert.JSONEq(t, `{"available":false,"reason":"the selected agent was deleted","app_id":"app-1"}`, string(res.Output))
			}},
		{Name: "get corrupt", Tool: getTool, Files: corrupt, Input: in(`{}`), WantCode: CodeContractInvalid},
		{Name: "get unknown field", Tool: getTool, Files: full, Input: in(`{"tools":["x"]}`), WantCode: CodeInputInvalid, WantField: "tools"},
		{Name: "get wrong type", Tool: getTool, Files: full, Input: in(`{"tool_names":"x"}`), WantCode: CodeInputInvalid, WantField: "tool_names"},
		{Name: "describe full", Tool: describeTool, Files: full, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out summaryOutput
				decode(t, res, &out)
				assert.Equal(t, "ready", out.Readiness)
				require.Len(t, out.Tools, 3)
				assert.Equal(t, "year", out.Tools[0].InputFields[0].Name)
				assert.Equal(t, "stat", out.Tools[2].UIHints.Kind)
			}},
		{Name: "describe few fields", Tool: describeTool, Files: full, Input: in(`{"max_fields_per_tool":1}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out summaryOutput
				decode(t, res, &out)
				assert.Len(t, out.Tools[0].InputFields, 1)
				assert.Equal(t, 1, out.Tools[0].InputFieldsOmitted)
			}},
		{Name: "describe without file", Tool: describeTool, Files: none, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out summaryOutput
				decode(t, res, &out)
				assert.Equal(t, "none", out.Readiness)
			}},
		{Name: "describe null agent", Tool: describeTool, Files: noAgent, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out summaryOutput
				decode(t, res, &out)
				assert.Equal(t, []string{"the selected agent was deleted"}, out.ReadinessReasons)
			}},
		{Name: "describe corrupt", Tool: describeTool, Files: corrupt, Input: in(`{}`), WantCode: CodeContractInvalid},
		{Name: "describe out of range", Tool: describeTool, Files: full, Input: in(`{"max_fields_per_tool":0}`), WantCode: CodeInputInvalid, WantField: "max_fields_per_tool"},
	})
}
