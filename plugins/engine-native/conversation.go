package native

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/sdk/engine"
)

// stateVersion is the format of the saved conversation. A state of another
// version is refused rather than misread.
const stateVersion = 1

// Roles of a conversation message. Tool results are their own role here;
// each provider maps them onto its wire format.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
	roleTool      = "tool"
)

// toolCall is one call the model asked for, with its arguments exactly as
// the model sent them (they are echoed back to the provider verbatim).
type toolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

// message is one turn of the provider-neutral conversation.
type message struct {
	Role      string     `json:"role"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	// ToolCallID and ToolName tie a tool result to its call.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// Elided: the tool output was replaced by a note (compact.go).
	Elided bool `json:"elided,omitempty"`
}

// conversation is everything the loop needs to go on: it is what the engine
// saves after each iteration, so a run interrupted anywhere resumes from the
// last complete one.
type conversation struct {
	Version  int       `json:"v"`
	System   string    `json:"system"`
	Messages []message `json:"messages"`
	// Iterations counts tool rounds executed (the max_tool_iterations cap).
	Iterations int `json:"iterations"`
	// ForcedText is set once the one plain-text nudge has been used.
	ForcedText bool `json:"forced_text,omitempty"`
	// InputTokens and OutputTokens are the run's usage so far.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// BudgetFloor is the usage when the current token-budget window began:
	// each resume after a budget pause grants one more budget.
	BudgetFloor int64 `json:"budget_floor"`
	// BudgetPaused is set while the run is paused for its budget.
	BudgetPaused bool `json:"budget_paused,omitempty"`
	// Output is the assistant text of every completed turn.
	Output string `json:"output"`
	// RequestAt is the index of this run's request (the user's prompt) in
	// Messages: what comes before it is the chat's history, which
	// compaction may leave out; the request itself it never touches.
	RequestAt int `json:"request_at,omitempty"`
	// Dropped counts the history messages compaction left out.
	Dropped int `json:"dropped,omitempty"`
}

// basePrompt is the engine's own instruction, ahead of the host's system
// messages (contract summary, restore notes).
const basePrompt = `You are a coding agent working on a web app's files in a sandbox.
Read before you edit: use coding_agent_read_file_range, coding_agent_search and coding_agent_workspace_index.
Edit with coding_agent_apply_patch (unified diff or *** Begin Patch); if a patch fails, re-read the windows it names and try again.
Tool arguments are JSON objects with the documented fields (path, from_path, to_path).
Always answer the user in plain language: say what you changed, or answer their question.`

// newConversation starts a conversation from the run's history and prompt.
func newConversation(req engine.RunRequest) *conversation {
	c := &conversation{Version: stateVersion}
	system := []string{basePrompt}
	for _, m := range req.History {
		switch m.Role {
		case "system":
			system = append(system, m.Content)
		case roleUser, roleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				c.Messages = append(c.Messages, message{Role: m.Role, Text: m.Content})
			}
		}
	}
	c.System = strings.Join(system, "\n\n")
	c.RequestAt = len(c.Messages)
	c.Messages = append(c.Messages, message{Role: roleUser, Text: req.Prompt})
	return c
}

// restoreConversation reads a saved state.
func restoreConversation(state []byte) (*conversation, error) {
	var c conversation
	if err := json.Unmarshal(state, &c); err != nil {
		return nil, fmt.Errorf("saved state is not a conversation: %w", err)
	}
	if c.Version != stateVersion {
		return nil, fmt.Errorf("saved state has version %d, this engine reads %d", c.Version, stateVersion)
	}
	return &c, nil
}

func (c *conversation) used() int64 { return c.InputTokens + c.OutputTokens }

// answerDanglingCalls gives every tool call of the last assistant message a
// result. States are saved only between rounds, so this is a guard: a
// provider refuses a conversation with an unanswered call, and a run must
// not be stuck on one.
func (c *conversation) answerDanglingCalls() {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if m.Role != roleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, r := range c.Messages[i+1:] {
			if r.Role == roleTool {
				answered[r.ToolCallID] = true
			}
		}
		for _, call := range m.ToolCalls {
			if !answered[call.ID] {
				c.Messages = append(c.Messages, message{Role: roleTool, ToolCallID: call.ID, ToolName: call.Name, IsError: true,
					Text: `{"error":{"code":"TOOL_NOT_RUN","message":"the run was interrupted before this call ran; call it again if it is still needed"}}`})
			}
		}
		return
	}
}
