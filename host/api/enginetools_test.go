package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEngineReportedToolsKeepTheInvariant: tools an engine runs itself reach
// the timeline started once and finished once, in order, whatever the
// engine repeats or skips; one still open when the run ends is finished
// before the terminal event.
func TestEngineReportedToolsKeepTheInvariant(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, strings.Join([]string{
			`report completed c1 bash {"output":"ok"}`,
			`report started c2 edit {"filePath":"a.txt"}`,
			`report started c2 edit {"filePath":"again"}`,
			`report failed c2 edit`,
			`report failed c2 edit`,
			`report completed c2 edit`,
			`report started c3 bash {}`,
			`say done`,
		}, "\n"))
		done := e.waitRun(app, run.ID)
		require.Equal(t, "completed", done.Status)
		var tools []string
		for _, typ := range e.eventTypes(app, run.ID) {
			if strings.HasPrefix(typ, "tool.") || typ == "run.completed" {
				tools = append(tools, typ)
			}
		}
		assert.Equal(t, []string{"tool.started", "tool.completed", "tool.started", "tool.failed", "tool.started", "tool.failed", "run.completed"}, tools)
		started := e.payloads(app, run.ID, "tool.started")
		require.Len(t, started, 3)
		assert.Contains(t, started[0], `"tool_call_id":"c1"`)
		assert.Contains(t, started[0], `"input":null`, "a finish without a start gets a start with no input")
		assert.Contains(t, started[1], `a.txt`, "the first start wins")
		failed := e.payloads(app, run.ID, "tool.failed")
		assert.Contains(t, failed[0], "MOCK_TOOL_FAILED")
		assert.Contains(t, failed[1], `"tool_call_id":"c3"`)
	})
}
