package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSelectedAgentContract: an app's selected runtime agent is served as
// its integration contract, put into each run's context and history, and
// readable by the contract toolpack inside the run; it never reaches the
// app's revisions.
func TestSelectedAgentContract(t *testing.T) {
	e := startEnvIn(t, "sqlite", testenv.PluginConfigDir(t, "mock", "local", "patch", "contract"))
	app := e.createApp(e.tokenA)
	contractPath := "/admin/apps/" + app + "/builder/agent-contract"

	var none struct {
		Agent  any    `json:"agent"`
		Reason string `json:"reason"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", contractPath, nil, &none))
	assert.Nil(t, none.Agent)
	assert.NotEmpty(t, none.Reason)

	var created struct {
		Agent struct {
			ID string `json:"id"`
		} `json:"agent"`
	}
	require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/agents", map[string]any{
		"name": "Sales analyst", "description": "Answers questions about sales",
		"tools": []map[string]any{{
			"name": "monthly_sales", "description": "Sales per month",
			"input_schema":  map[string]any{"type": "object", "properties": map[string]any{"year": map[string]any{"type": "integer"}}, "required": []string{"year"}},
			"output_schema": map[string]any{"type": "array", "x-ui": map[string]any{"kind": "chart", "x": "month", "y": "total"}},
		}},
	}, &created))
	var er apiError
	assert.Equal(t, http.StatusBadRequest, e.do(e.tokenA, "POST", "/admin/agents", map[string]any{"name": "bad",
		"tools": []map[string]any{{"name": "t", "output_schema": map[string]any{"x-ui": map[string]any{"kind": "map"}}}}}, &er))
	assert.Equal(t, "tools[0].output_schema", er.Detail.Field)
	assert.Equal(t, http.StatusNotFound, e.do(e.tokenB, "GET", "/admin/agents/"+created.Agent.ID, nil, &er), "another tenant's agent")
	assert.Equal(t, http.StatusNotFound, e.do(e.tokenB, "PUT", "/admin/apps/"+app+"/agent", map[string]any{"agent_id": created.Agent.ID}, &er))

	require.Equal(t, http.StatusOK, e.do(e.tokenA, "PUT", "/admin/apps/"+app+"/agent", map[string]any{"agent_id": created.Agent.ID}, nil))
	var contract struct {
		Agent struct {
			Name string `json:"name"`
		} `json:"agent"`
		Tools []struct {
			Name    string `json:"name"`
			Status  string `json:"status"`
			UIHints struct {
				Kind string   `json:"kind"`
				Y    []string `json:"y"`
			} `json:"ui_hints"`
		} `json:"tools"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", contractPath, nil, &contract))
	assert.Equal(t, "Sales analyst", contract.Agent.Name)
	require.Len(t, contract.Tools, 1)
	assert.Equal(t, "resolved", contract.Tools[0].Status)
	assert.Equal(t, "chart", contract.Tools[0].UIHints.Kind)
	assert.Equal(t, []string{"total"}, contract.Tools[0].UIHints.Y)

	// A run sees it: in its context, its history and through the tools.
	run := e.createRun(e.tokenA, app, "history\ntool coding_agent_describe_selected_agent_contract {}\ntool coding_agent_get_agent_integration_contract {\"tool_names\":[\"monthly_sales\"]}")
	var got struct {
		Status     string          `json:"status"`
		OutputText string          `json:"output_text"`
		Context    json.RawMessage `json:"context"`
		Result     string          `json:"result_revision_id"`
	}
	e.waitRun(app, run.ID)
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID, nil, &got))
	require.Equal(t, "completed", got.Status)
	assert.Equal(t, "history=1 system", got.OutputText, "the contract note opens the history")
	assert.Contains(t, string(got.Context), `"selected_agent_contract":{`)
	assert.Contains(t, string(got.Context), `"Sales analyst"`)
	assert.Empty(t, got.Result, "the contract file is not part of the app")
	var page struct {
		Items []struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID+"/events?limit=500", nil, &page))
	described, full := false, false
	for _, it := range page.Items {
		if it.Event != "tool.completed" {
			continue
		}
		described = described || strings.Contains(string(it.Payload), `"readiness":"ready"`)
		full = full || strings.Contains(string(it.Payload), `"available":true`) && strings.Contains(string(it.Payload), `"monthly_sales"`)
	}
	assert.True(t, described, "the contract toolpack described the contract in the run's sandbox")
	assert.True(t, full, "and gave it whole")
}
