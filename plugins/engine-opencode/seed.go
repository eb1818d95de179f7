package opencode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// OpenCode takes its arguments as zod schemas (zodArgs writes them from
// the tool's JSON Schema), with zod from the pinned build seeded beside it
// (zodFile): the sandbox has no npm install to get it from.
const toolSource = `// Written by agenthost for every run: calls the host's %[1]s tool.
%[3]s
export default {
  description: %[2]s,
  args: %[4]s,
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

// zodFile is where the zod build goes in the sandbox, beside the tools
// (not in tool/, where OpenCode would take it for a tool).
const zodFile = seedDir + "/agenthost/zod.mjs"

// zodImport is how a seeded tool imports it, relative to tool/.
const zodImport = `import { z } from "../agenthost/zod.mjs"`

// seed writes the custom tools (and what stops OpenCode installing npm
// packages into the folder) before the session starts. With zod (the
// pinned build's source) the tools take their arguments; without it
// (an opencode installed by other means than make) they take none, and
// the host's defaults apply.
//
// The contract tools are always bridged; extra names more host tools (a
// custom toolpack's, Config.BridgeTools) that the run offers.
func seed(ctx context.Context, ws workspace.Workspace, tools []engine.ToolDescriptor, zod []byte, extra []string) (map[string]bool, error) {
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
	for _, name := range append(append([]string{}, contractTools...), extra...) {
		t, ok := have[name]
		if !ok || bridged[name] {
			continue // the run does not offer it (its toolpack is not loaded)
		}
		desc, _ := json.Marshal(t.Description)
		imports, args := "", "{}"
		if zod != nil {
			var err error
			if args, err = zodArgs(t.InputSchema); err != nil {
				return nil, fmt.Errorf("tool %s: %w", name, err)
			}
			imports = zodImport
		}
		files[seedDir+"/tool/"+name+".ts"] = fmt.Sprintf(toolSource, name, desc, imports, args)
		bridged[name] = true
	}
	if zod != nil && len(bridged) > 0 {
		files[zodFile] = string(zod)
	}
	// All at once: each is a round trip through the host to the sandbox.
	errs := make(chan error, len(files))
	for path, body := range files {
		go func() { errs <- seedFile(ctx, ws, path, []byte(body)) }()
	}
	var first error
	for range files {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return bridged, nil
}

// seedFile writes a seeded file unless the sandbox has it already, as a
// chat's warm sandbox does from its first run: rewriting it would only
// touch its time, and OpenCode's file watcher would reload its tools
// before the next prompt.
func seedFile(ctx context.Context, ws workspace.Workspace, path string, body []byte) error {
	sum := sha256.Sum256(body)
	if fi, err := ws.Stat(ctx, path); err == nil && !fi.IsDir && fi.Size == int64(len(body)) &&
		fi.SHA256 == hex.EncodeToString(sum[:]) {
		return nil
	}
	if _, err := ws.WriteFile(ctx, path, body, 0o644); err != nil {
		return fmt.Errorf("seed %s: %w", path, err)
	}
	return nil
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
