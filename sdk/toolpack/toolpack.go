// Package toolpack is the contract of toolpack plugins: pure logic over a
// workspace the host lends for one call. The host validates input against the
// tool's schema, applies permission policy and emits the tool events before
// Call is reached, so a toolpack only does the work.
package toolpack

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Call is one tool invocation.
type Call struct {
	RunID  string
	CallID string
	Tool   string
	Input  json.RawMessage
}

// Toolpack is a set of tools. One process serves many runs at once.
type Toolpack interface {
	Info() plugin.Info
	Tools(ctx context.Context) ([]plugin.ToolSpec, error)
	// Call runs one tool against ws. A tool that refuses or fails returns a
	// ToolResult with an error code; a returned error means the toolpack
	// itself broke.
	Call(ctx context.Context, call Call, ws workspace.Workspace) (plugin.ToolResult, error)
}

// CodeUnknownTool is the tool error for a call naming a tool the pack lacks.
const CodeUnknownTool = "TOOL_UNKNOWN"
