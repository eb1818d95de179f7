package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// contractTools are the host tools OpenCode gets as custom tools: calls go
// back through agenthost (the tool bridge), so the host validates, applies
// policy and reports them exactly as for any other engine.
var contractTools = []string{"coding_agent_get_agent_integration_contract", "coding_agent_describe_selected_agent_contract"}

// seedDir is OpenCode's per-project config folder; the host leaves it out
// of revisions.
const seedDir = ".opencode"

// toolSource is a custom tool that forwards its call to the tool bridge.
// It takes no arguments: OpenCode wants zod schemas for arguments, and zod
// is not importable without an npm install. Both contract tools work with
// their defaults.
const toolSource = `// Written by agenthost for every run: calls the host's %[1]s tool.
export default {
  description: %[2]s,
  args: {},
  async execute(args, context) {
    const res = await fetch(process.env.AGENTHOST_TOOL_URL + "/tools/%[1]s", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer " + process.env.AGENTHOST_TOOL_TOKEN },
      body: JSON.stringify({ sessionID: context.sessionID, callID: context.callID ?? "", args: args ?? {} }),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(text)
    return text
  },
}
`

// seed writes the custom tools (and what stops OpenCode installing npm
// packages into the folder) before the session starts.
func seed(ctx context.Context, ws workspace.Workspace, tools []engine.ToolDescriptor) (map[string]bool, error) {
	have := map[string]engine.ToolDescriptor{}
	for _, t := range tools {
		have[t.Name] = t
	}
	files := map[string]string{
		seedDir + "/package-lock.json":  pluginLock,
		seedDir + "/node_modules/.keep": "",
		seedDir + "/.gitignore":         "node_modules\npackage-lock.json\n",
	}
	bridged := map[string]bool{}
	for _, name := range contractTools {
		t, ok := have[name]
		if !ok {
			continue // the contract toolpack is not loaded
		}
		desc, _ := json.Marshal(t.Description)
		files[seedDir+"/tool/"+name+".ts"] = fmt.Sprintf(toolSource, name, desc)
		bridged[name] = true
	}
	for path, body := range files {
		if _, err := ws.WriteFile(ctx, path, []byte(body), 0o644); err != nil {
			return nil, fmt.Errorf("seed %s: %w", path, err)
		}
	}
	return bridged, nil
}

// maxHistoryChars bounds the history a fresh OpenCode session is given.
const maxHistoryChars = 24000

// renderHistory is the chat's earlier turns as text for a fresh session,
// newest kept when the budget runs out. System messages go to the prompt's
// system field instead.
func renderHistory(history []engine.Message) (system, turns string) {
	var sys []string
	var lines []string
	for _, m := range history {
		switch m.Role {
		case "system":
			sys = append(sys, m.Content)
		case "user", "assistant":
			lines = append(lines, m.Role+": "+m.Content)
		}
	}
	system = strings.Join(sys, "\n\n")
	total := 0
	start := len(lines)
	for start > 0 && total+len(lines[start-1]) <= maxHistoryChars {
		start--
		total += len(lines[start]) + 2
	}
	if start == len(lines) {
		return system, ""
	}
	var b strings.Builder
	b.WriteString("Earlier in this conversation")
	if start > 0 {
		fmt.Fprintf(&b, " (the %d oldest messages left out)", start)
	}
	b.WriteString(":\n\n")
	b.WriteString(strings.Join(lines[start:], "\n\n"))
	return system, b.String()
}
