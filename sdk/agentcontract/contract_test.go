package agentcontract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormaliseUIHints(t *testing.T) {
	cases := []struct {
		name, schema string
		want         *UIHints
		err          string
	}{
		{"no schema", ``, nil, ""},
		{"no hints", `{"type":"object"}`, nil, ""},
		{"null hints", `{"x-ui":null}`, nil, ""},
		{"boolean schema", `true`, nil, ""},
		{"not an object", `[1]`, nil, ""},
		{"chart", `{"x-ui":{"kind":"chart","title":"Sales","x":"month","y":["total","net"],"series":"region","data":"points"}}`,
			&UIHints{Kind: KindChart, Title: "Sales", Data: "points", X: "month", Y: []string{"total", "net"}, Series: "region"}, ""},
		{"chart: x_ui, type as kind, one y, camelCase keys", `{"x_ui":{"type":"Chart","xField":"day","y_field":"count","chartType":"bar"}}`,
			&UIHints{Kind: KindChart, ChartType: "bar", X: "day", Y: []string{"count"}}, ""},
		{"chart: type as style when kind is given", `{"x-ui":{"kind":"chart","type":"line"}}`,
			&UIHints{Kind: KindChart, ChartType: "line"}, ""},
		{"x-ui wins over x_ui", `{"x-ui":{"kind":"stat"},"x_ui":{"kind":"table"}}`, &UIHints{Kind: KindStat}, ""},
		{"table: names and objects", `{"x-ui":{"kind":"table","data":"rows","columns":["name",{"key":"email","header":"E-mail"}]}}`,
			&UIHints{Kind: KindTable, Data: "rows", Columns: []Column{{Field: "name"}, {Field: "email", Label: "E-mail"}}}, ""},
		{"stat", `{"x-ui":{"kind":"stat","value":"revenue","label":"Revenue","unit":"EUR","x":"ignored"}}`,
			&UIHints{Kind: KindStat, Value: "revenue", Label: "Revenue", Unit: "EUR"}, ""},
		{"kind only", `{"x-ui":"table"}`, &UIHints{Kind: KindTable}, ""},
		{"unknown kind", `{"x-ui":{"kind":"map"}}`, nil, `kind "map" is not chart, table or stat`},
		{"unknown kind as string", `{"x-ui":"gauge"}`, nil, `kind "gauge"`},
		{"no kind", `{"x-ui":{"title":"T"}}`, nil, "kind is missing"},
		{"x-ui a number", `{"x-ui":3}`, nil, "x-ui must be an object"},
		{"wrong type", `{"x-ui":{"kind":"chart","x":5}}`, nil, "x must be a string"},
		{"bad y", `{"x-ui":{"kind":"chart","y":[1]}}`, nil, "y must be a string or a list"},
		{"empty y", `{"x-ui":{"kind":"chart","y":[""]}}`, nil, "y[0] is empty"},
		{"bad columns", `{"x-ui":{"kind":"table","columns":[1,2]}}`, nil, "columns[0] must be"},
		{"column without field", `{"x-ui":{"kind":"table","columns":[{"label":"L"}]}}`, nil, "columns[0]: field is empty"},
		{"two spellings", `{"x_ui":{"kind":"chart","x_field":"a","xField":"b"}}`, nil, `both "xField" and "x_field"`},
		{"broken JSON", `{"x-ui":`, nil, "not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormaliseUIHints(json.RawMessage(tc.schema))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

const fullDoc = `{
  "schema_version": 1,
  "app_id": "app-1",
  "agent": {"id": "ag-1", "name": "Sales bot", "description": "Answers sales questions",
    "instructions": "Be brief.", "model_id": "gpt-x"},
  "tools": [
    {"name": "sales_by_month", "description": "Monthly sales", "status": "resolved",
     "input_schema": {"type": "object", "properties": {"year": {"type": "integer"}}},
     "output_schema": {"type": "object", "x-ui": {"kind": "chart", "x": "month", "y": "total"}},
     "ui_hints": {"kind": "chart", "x": "month", "y": ["total"]}},
    {"name": "no_schemas", "description": "", "status": "resolved", "input_schema": null}
  ],
  "unresolved_references": [{"reference": "crm_lookup", "reason": "the tool was deleted"}],
  "generated_at": "2026-11-22T10:00:00Z",
  "some_future_field": {"ignored": true}
}`

func TestParse(t *testing.T) {
	c, err := Parse([]byte(fullDoc))
	require.NoError(t, err)
	assert.Equal(t, "app-1", c.AppID)
	require.NotNil(t, c.Agent)
	assert.Equal(t, Agent{ID: "ag-1", Name: "Sales bot", Description: "Answers sales questions", Instructions: "Be brief.", ModelID: "gpt-x"}, *c.Agent)
	require.Len(t, c.Tools, 2)
	assert.JSONEq(t, `{"type":"object","properties":{"year":{"type":"integer"}}}`, string(c.Tools[0].InputSchema))
	assert.Equal(t, &UIHints{Kind: KindChart, X: "month", Y: []string{"total"}}, c.Tools[0].UIHints)
	assert.Nil(t, c.Tools[1].InputSchema, "null is no schema")
	assert.Nil(t, c.Tools[1].OutputSchema)
	assert.Equal(t, []Unresolved{{Reference: "crm_lookup", Reason: "the tool was deleted"}}, c.Unresolved)
	assert.Equal(t, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), c.GeneratedAt)

	none, err := Parse([]byte(`{"schema_version":1,"app_id":"a","agent":null,"reason":"the selected agent was deleted"}`))
	require.NoError(t, err)
	assert.Nil(t, none.Agent)
	assert.Equal(t, "the selected agent was deleted", none.Reason)
	assert.Equal(t, []Tool{}, none.Tools, "absent lists read as empty")
	assert.Equal(t, []Unresolved{}, none.Unresolved)
}

func TestParseRefuses(t *testing.T) {
	tool := func(extra string) string {
		return `{"schema_version":1,"agent":{"id":"a"},"tools":[{"name":"t","status":"resolved"` + extra + `}]}`
	}
	cases := []struct{ name, doc, err string }{
		{"empty", ``, "EOF"},
		{"broken", `{`, "unexpected EOF"},
		{"not an object", `[]`, "cannot unmarshal array"},
		{"trailing data", `{"schema_version":1} {}`, "data after"},
		{"no version", `{"app_id":"a"}`, "schema_version is missing"},
		{"future version", `{"schema_version":2}`, "schema_version 2 is not supported"},
		{"version as string", `{"schema_version":"1"}`, "cannot unmarshal string"},
		{"agent as string", `{"schema_version":1,"agent":"x"}`, "cannot unmarshal string"},
		{"agent without id", `{"schema_version":1,"agent":{"name":"x"}}`, "agent.id is empty"},
		{"tools without agent", `{"schema_version":1,"agent":null,"tools":[{"name":"t","status":"resolved"}]}`, "1 tools but no agent"},
		{"tool without name", `{"schema_version":1,"agent":{"id":"a"},"tools":[{"status":"resolved"}]}`, "tools[0]: name is empty"},
		{"duplicate tool", `{"schema_version":1,"agent":{"id":"a"},"tools":[{"name":"t","status":"resolved"},{"name":"t","status":"resolved"}]}`, `tool "t" is listed twice`},
		{"unknown status", tool(`,"status":"pending"`), `status "pending"`},
		{"schema a string", tool(`,"input_schema":"x"`), "input_schema is neither"},
		{"bad hints", tool(`,"ui_hints":{"kind":"map"}`), `ui_hints: kind "map"`},
		{"bad time", `{"schema_version":1,"generated_at":"yesterday"}`, "cannot parse"},
		{"unresolved without reference", `{"schema_version":1,"unresolved_references":[{"reason":"x"}]}`, "reference is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.doc))
			require.Error(t, err)
			assert.Nil(t, c)
			assert.Contains(t, err.Error(), tc.err)
			assert.True(t, strings.HasPrefix(err.Error(), "agent contract"), err.Error())
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	c, err := Parse([]byte(fullDoc))
	require.NoError(t, err)
	data, err := Marshal(c)
	require.NoError(t, err)
	again, err := Parse(data)
	require.NoError(t, err)
	assert.Equal(t, c, again)

	data, err = Marshal(&Contract{SchemaVersion: SchemaVersion, AppID: "a"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"schema_version":1,"app_id":"a","agent":null,"tools":[],"unresolved_references":[],"generated_at":"0001-01-01T00:00:00Z"}`, string(data))

	_, err = Marshal(&Contract{SchemaVersion: 0})
	assert.ErrorContains(t, err, "schema_version 0")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(fullDoc))
	f.Add([]byte(`{"schema_version":1,"agent":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever Parse accepts, Marshal writes and Parse reads back.
		out, err := Marshal(c)
		require.NoError(t, err)
		_, err = Parse(out)
		require.NoError(t, err)
	})
}

func FuzzNormaliseUIHints(f *testing.F) {
	f.Add([]byte(`{"x-ui":{"kind":"table","columns":["a",{"field":"b"}]}}`))
	f.Add([]byte(`{"x_ui":"chart"}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		h, err := NormaliseUIHints(schema)
		if err != nil || h == nil {
			return
		}
		// Hints it returns are hints Parse accepts.
		require.NoError(t, h.validate())
	})
}
