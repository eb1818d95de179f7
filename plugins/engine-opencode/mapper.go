package opencode

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/engine"
)

// maxToolOutputBytes bounds the output of one OpenCode tool in our timeline
// (a bash command can print megabytes; the model saw OpenCode's own cap).
const maxToolOutputBytes = 64 << 10

// Codes the mapper and the engine put in results and tool failures.
const (
	// CodeToolError: an OpenCode tool ended in error.
	CodeToolError = "OPENCODE_TOOL_ERROR"
	// CodeUnrecoveredEdit: an edit failed and no later edit recovered it.
	CodeUnrecoveredEdit = "CODING_AGENT_OPENCODE_UNRECOVERED_EDIT_FAILURE"
	// CodeSessionError: OpenCode reported session.error.
	CodeSessionError = "OPENCODE_SESSION_ERROR"
	// CodeModelProviderError: the model's provider refused (session.error
	// APIError), as the native engine names it.
	CodeModelProviderError = "MODEL_PROVIDER_ERROR"
)

// editTools are OpenCode's tools that change files: a failure of one is an
// edit failure (the edit-failure rule).
var editTools = map[string]bool{"edit": true, "write": true, "apply_patch": true, "patch": true, "multiedit": true}

// mapper turns one session's OpenCode events into engine events. It is fed
// every event of the directory's stream and keeps what it must remember
// between them: message roles, part kinds, tool states, text emitted.
type mapper struct {
	session string
	// hostTools are tools OpenCode calls through agenthost (the seeded
	// custom tools): the host reports those itself.
	hostTools map[string]bool

	roles    map[string]string // message id → role
	parts    map[string]string // part id → type
	pending  map[string][]string
	emitted  map[string]int    // text part id → bytes emitted
	tools    map[string]string // part id → last status reported
	callIDs  map[string]string // part id → call id used
	usedCall map[string]bool
	texts    []string // text part ids in order
	// held are parts of messages whose role is not known yet.
	held map[string][]part

	busy bool
	// since is when this run's prompt was sent (Unix ms); prompted turns
	// true with the first user message created since. Only an idle after
	// it ends the run: a reused session may still announce a busy/idle
	// pair of its previous run (an abort's second idle, a late title or
	// summary), and taking that for this run's end returned no answer.
	since    int64
	prompted bool
	idle     bool
	sessErr  *sessionError
	// retries counts OpenCode's retries of failing model requests in the
	// run; lastRetry is the last one's message. retrying is true from a
	// retry until the model's answer streams again.
	retries   int
	lastRetry string
	retrying  bool
	editFails []editFailure
	// textByID is each text part's text so far (a builder: a long answer
	// arrives as thousands of deltas).
	textByID map[string]*strings.Builder
}

type sessionError struct {
	Name    string
	Message string
	Status  int
	Raw     json.RawMessage
}

type editFailure struct {
	Tool    string `json:"tool"`
	File    string `json:"file"`
	Message string `json:"message"`
	CallID  string `json:"tool_call_id"`
}

func newMapper(session string, hostTools map[string]bool) *mapper {
	return &mapper{
		session: session, hostTools: hostTools,
		roles: map[string]string{}, parts: map[string]string{}, pending: map[string][]string{},
		emitted: map[string]int{}, tools: map[string]string{}, callIDs: map[string]string{},
		usedCall: map[string]bool{}, textByID: map[string]*strings.Builder{}, held: map[string][]part{},
	}
}

// Shapes of the event properties the mapper reads.
type (
	sessionProps struct {
		SessionID string `json:"sessionID"`
	}
	statusProps struct {
		SessionID string `json:"sessionID"`
		Status    struct {
			Type    string `json:"type"`
			Attempt int    `json:"attempt"`
			Message string `json:"message"`
		} `json:"status"`
	}
	messageProps struct {
		SessionID string `json:"sessionID"`
		Info      struct {
			ID   string `json:"id"`
			Role string `json:"role"`
			Time struct {
				Created   int64 `json:"created"`
				Completed int64 `json:"completed"`
			} `json:"time"`
		} `json:"info"`
	}
	partProps struct {
		SessionID string `json:"sessionID"`
		Part      part   `json:"part"`
	}
	part struct {
		ID        string `json:"id"`
		MessageID string `json:"messageID"`
		Type      string `json:"type"`
		Text      string `json:"text"`
		Tool      string `json:"tool"`
		CallID    string `json:"callID"`
		State     struct {
			Status   string          `json:"status"`
			Input    json.RawMessage `json:"input"`
			Output   string          `json:"output"`
			Title    string          `json:"title"`
			Error    string          `json:"error"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"state"`
		Tokens struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
		} `json:"tokens"`
	}
	deltaProps struct {
		SessionID string `json:"sessionID"`
		MessageID string `json:"messageID"`
		PartID    string `json:"partID"`
		Field     string `json:"field"`
		Delta     string `json:"delta"`
	}
	errorProps struct {
		SessionID string `json:"sessionID"`
		Error     struct {
			Name string `json:"name"`
			Data struct {
				Message    string `json:"message"`
				StatusCode int    `json:"statusCode"`
			} `json:"data"`
		} `json:"error"`
	}
	permissionProps struct {
		ID         string          `json:"id"`
		SessionID  string          `json:"sessionID"`
		Permission string          `json:"permission"`
		Patterns   []string        `json:"patterns"`
		Metadata   json.RawMessage `json:"metadata"`
		Tool       struct {
			CallID string `json:"callID"`
		} `json:"tool"`
	}
)

// ours reports whether an event's properties name our session.
func (m *mapper) ours(props json.RawMessage) bool {
	var p sessionProps
	return json.Unmarshal(props, &p) == nil && p.SessionID == m.session
}

// stale reports whether an assistant message first seen now belongs to an
// earlier run: created before this run's prompt. Without the times (a
// mapper not told when the prompt went), one first seen finished is. The
// creation time decides when known: a fast model's message can be
// finished by the time its first update arrives, after its parts.
func (m *mapper) stale(created, completed int64) bool {
	if m.since != 0 && created != 0 {
		return created < m.since
	}
	return completed != 0
}

// feed maps one event; it returns the engine events to emit and, for a
// permission ask, the ask to put to the user.
func (m *mapper) feed(ev event) ([]engine.Event, *permissionProps) {
	switch ev.Type {
	case "session.status":
		var p statusProps
		if json.Unmarshal(ev.Properties, &p) != nil || p.SessionID != m.session {
			return nil, nil
		}
		switch p.Status.Type {
		case "busy":
			m.busy = true
		case "retry":
			// OpenCode retries forever; say so rather than look hung. The
			// run bounds the retries (retries.go).
			m.retries = max(m.retries+1, p.Status.Attempt)
			m.lastRetry, m.retrying = p.Status.Message, true
			return []engine.Event{engine.Status("model_retry", fmt.Sprintf("the model provider failed; OpenCode retries (attempt %d): %s", p.Status.Attempt, p.Status.Message))}, nil
		}
	case "session.idle":
		if m.ours(ev.Properties) && m.busy && m.prompted {
			m.idle = true
		}
	case "session.error":
		var p errorProps
		if json.Unmarshal(ev.Properties, &p) != nil || p.SessionID != m.session {
			return nil, nil
		}
		m.sessErr = &sessionError{Name: p.Error.Name, Message: p.Error.Data.Message, Status: p.Error.Data.StatusCode, Raw: ev.Properties}
	case "message.updated":
		var p messageProps
		if json.Unmarshal(ev.Properties, &p) != nil || p.SessionID != m.session || p.Info.ID == "" {
			return nil, nil
		}
		if _, seen := m.roles[p.Info.ID]; seen {
			return nil, nil
		}
		role := p.Info.Role
		if role == "user" && p.Info.Time.Created >= m.since {
			m.prompted = true
		}
		if role == "assistant" && m.stale(p.Info.Time.Created, p.Info.Time.Completed) {
			// A message of an earlier run (an aborted one's last words
			// arrive after its idle).
			role = "stale"
		}
		m.roles[p.Info.ID] = role
		held := m.held[p.Info.ID]
		delete(m.held, p.Info.ID)
		var out []engine.Event
		for _, pt := range held {
			out = append(out, m.onPart(pt)...)
		}
		return out, nil
	case "message.part.updated":
		var p partProps
		if json.Unmarshal(ev.Properties, &p) != nil || p.SessionID != m.session || p.Part.ID == "" {
			return nil, nil
		}
		if p.Part.Type == "text" || p.Part.Type == "reasoning" || p.Part.Type == "tool" {
			m.retrying = false // the model answers again
		}
		if _, known := m.roles[p.Part.MessageID]; !known {
			m.held[p.Part.MessageID] = append(m.held[p.Part.MessageID], p.Part)
			return nil, nil
		}
		return m.onPart(p.Part), nil
	case "message.part.delta":
		var p deltaProps
		if json.Unmarshal(ev.Properties, &p) != nil || p.SessionID != m.session || p.Field != "text" {
			return nil, nil
		}
		m.retrying = false
		if _, known := m.parts[p.PartID]; !known {
			// A delta before its part: hold it until we know whether it
			// is text or reasoning.
			m.pending[p.PartID] = append(m.pending[p.PartID], p.Delta)
			return nil, nil
		}
		return m.onDelta(p.PartID, p.Delta), nil
	case "permission.asked":
		var p permissionProps
		if json.Unmarshal(ev.Properties, &p) != nil || p.SessionID != m.session || p.ID == "" {
			return nil, nil
		}
		return nil, &p
	}
	return nil, nil
}

func (m *mapper) onDelta(partID, delta string) []engine.Event {
	switch m.parts[partID] {
	case "text":
		m.emitted[partID] += len(delta)
		m.text(partID).WriteString(delta)
		return []engine.Event{engine.Delta(delta)}
	case "reasoning":
		return []engine.Event{{Kind: engine.KindReasoning, Text: delta}}
	}
	return nil
}

func (m *mapper) onPart(p part) []engine.Event {
	if m.roles[p.MessageID] != "assistant" {
		// The user's own prompt, or an earlier run's message.
		m.parts[p.ID] = "ignored"
		delete(m.pending, p.ID)
		return nil
	}
	first := m.parts[p.ID] == ""
	m.parts[p.ID] = p.Type
	var out []engine.Event
	if held := m.pending[p.ID]; len(held) > 0 {
		delete(m.pending, p.ID)
		for _, d := range held {
			out = append(out, m.onDelta(p.ID, d)...)
		}
	}
	switch p.Type {
	case "text":
		if first {
			m.texts = append(m.texts, p.ID)
		}
		// A text part that arrives whole (or longer than its deltas):
		// emit what the deltas did not carry.
		if done := m.emitted[p.ID]; len(p.Text) > done && strings.HasPrefix(p.Text, m.text(p.ID).String()) {
			rest := p.Text[done:]
			m.emitted[p.ID] = len(p.Text)
			m.text(p.ID).WriteString(rest)
			out = append(out, engine.Delta(rest))
		}
	case "tool":
		out = append(out, m.onTool(p)...)
	case "step-finish":
		if p.Tokens.Input > 0 || p.Tokens.Output > 0 {
			out = append(out, engine.Event{Kind: engine.KindUsage, InputTokens: p.Tokens.Input, OutputTokens: p.Tokens.Output})
		}
	}
	return out
}

// onTool reports each tool part once started and once finished, whatever
// states OpenCode repeats (bash sends running many times) or skips.
func (m *mapper) onTool(p part) []engine.Event {
	if m.hostTools[p.Tool] {
		return nil
	}
	prev := m.tools[p.ID]
	status := p.State.Status
	if prev == "completed" || prev == "error" || status == prev || status == "pending" {
		return nil
	}
	m.tools[p.ID] = status
	callID := m.callID(p)
	input := p.State.Input
	if !json.Valid(input) {
		input = nil
	}
	switch status {
	case "running":
		return []engine.Event{engine.ToolStarted(callID, p.Tool, input)}
	case "completed":
		out, _ := json.Marshal(map[string]any{"output": capText(p.State.Output, maxToolOutputBytes), "title": p.State.Title})
		m.recovered(p.Tool, fileOf(input))
		return []engine.Event{engine.ToolCompleted(callID, p.Tool, out)}
	case "error":
		diag, _ := json.Marshal(map[string]any{"opencode_tool": p.Tool, "input": json.RawMessage(orNull(input))})
		if editTools[p.Tool] {
			m.editFails = append(m.editFails, editFailure{Tool: p.Tool, File: fileOf(input), Message: p.State.Error, CallID: callID})
		}
		return []engine.Event{engine.ToolFailed(callID, p.Tool, CodeToolError, capText(p.State.Error, 4096), diag)}
	}
	return nil
}

// callID is the part's call id, unless another part of the run used it (a
// model may reuse ids across turns): then the part id, which is unique.
func (m *mapper) callID(p part) string {
	if id, ok := m.callIDs[p.ID]; ok {
		return id
	}
	id := p.CallID
	if id == "" || m.usedCall[id] {
		id = p.ID
	}
	m.usedCall[id] = true
	m.callIDs[p.ID] = id
	return id
}

// recovered clears the edit failures a successful edit makes good: those on
// the same file, or all of them when either side's file is unknown.
func (m *mapper) recovered(tool, file string) {
	if !editTools[tool] {
		return
	}
	kept := m.editFails[:0]
	for _, f := range m.editFails {
		if file != "" && f.File != "" && f.File != file {
			kept = append(kept, f)
		}
	}
	m.editFails = kept
}

func (m *mapper) text(partID string) *strings.Builder {
	b := m.textByID[partID]
	if b == nil {
		b = &strings.Builder{}
		m.textByID[partID] = b
	}
	return b
}

// output is the assistant text of the run, in part order.
func (m *mapper) output() string {
	var b strings.Builder
	for _, id := range m.texts {
		b.WriteString(m.text(id).String())
	}
	return b.String()
}

func fileOf(input json.RawMessage) string {
	var in struct {
		FilePath string `json:"filePath"`
		Path     string `json:"path"`
	}
	_ = json.Unmarshal(input, &in)
	if in.FilePath != "" {
		return in.FilePath
	}
	return in.Path
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// capText cuts s to at most n bytes on a rune boundary, saying so.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[output truncated by agenthost]"
}
