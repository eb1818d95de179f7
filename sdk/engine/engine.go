// Package engine is the contract of engine plugins: agent loops that turn a
// prompt and history into events and tool calls. An engine implements Engine;
// the sdk serves it over gRPC (sdk.ServeEngine) and the host drives it through
// Client. Engines reach tools, durable state, permissions and the workspace
// only through the per-run Host they are given.
package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Message is one turn of the conversation history.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role    string
	Content string
}

// Model is the model pinned on the run and how to reach it.
type Model struct {
	ID            string
	Provider      string
	ProviderModel string
	BaseURL       string
	// APIKeyEnv names the environment variable holding the key; the key
	// itself never crosses the host/plugin boundary in a request.
	APIKeyEnv string
	// EngineModelID is the engine-specific model id the host resolved.
	EngineModelID string
}

// Limits bound a run.
type Limits struct {
	MaxToolIterations int
	ToolTimeout       time.Duration
	TokenBudget       int64
}

// ToolDescriptor is what the engine tells its model about a tool.
type ToolDescriptor struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// RunRequest is everything an engine gets to do one run.
type RunRequest struct {
	RunID         string
	AppID         string
	ChatSessionID string
	Prompt        string
	History       []Message
	Model         Model
	Tools         []ToolDescriptor
	// Context is the run context (selected-agent contract, policy) as JSON.
	Context json.RawMessage
	// State is the engine's last saved state when the run is resumed after
	// an interruption; nil on a fresh run.
	State       []byte
	WorkspaceID string
	Limits      Limits
}

// EventKind names what an engine can emit. Tool, permission and lifecycle
// events are the host's to emit, so every engine's timeline looks the same.
type EventKind string

// The engine event kinds.
const (
	// KindAssistantDelta is a piece of assistant text.
	KindAssistantDelta EventKind = "assistant.delta"
	// KindStatus is a stage change (Stage, Message).
	KindStatus EventKind = "run.status"
	// KindReasoning is model reasoning; the host never shows it as
	// assistant text.
	KindReasoning EventKind = "reasoning"
	// KindUsage reports token counts consumed since the last usage event.
	KindUsage EventKind = "usage"
	// KindToolStarted reports a tool the engine runs itself (an agent
	// server's own tools, not the host's CallTool): the host emits
	// tool.started once per CallID.
	KindToolStarted EventKind = "tool.started"
	// KindToolFinished ends such a call: the host emits tool.completed
	// (OK) or tool.failed once per CallID, with a tool.started first if
	// none was reported.
	KindToolFinished EventKind = "tool.finished"
)

// Event is one thing the engine reports while running.
type Event struct {
	Kind EventKind
	// Text of a delta or of reasoning.
	Text string
	// Stage and Message of a status event.
	Stage, Message string
	// Token counts of a usage event.
	InputTokens, OutputTokens int64
	// CallID and Tool of a tool event; Input of a start; OK, Output,
	// ErrorCode, ErrorMessage and Diagnostics of a finish.
	CallID, Tool            string
	Input, Output           json.RawMessage
	OK                      bool
	ErrorCode, ErrorMessage string
	Diagnostics             json.RawMessage
}

// ToolStarted reports that the engine started one of its own tools.
func ToolStarted(callID, tool string, input json.RawMessage) Event {
	return Event{Kind: KindToolStarted, CallID: callID, Tool: tool, Input: input}
}

// ToolCompleted reports that one of the engine's own tools succeeded.
func ToolCompleted(callID, tool string, output json.RawMessage) Event {
	return Event{Kind: KindToolFinished, CallID: callID, Tool: tool, OK: true, Output: output}
}

// ToolFailed reports that one of the engine's own tools failed.
func ToolFailed(callID, tool, code, message string, diagnostics json.RawMessage) Event {
	return Event{Kind: KindToolFinished, CallID: callID, Tool: tool, ErrorCode: code, ErrorMessage: message, Diagnostics: diagnostics}
}

// Delta is an assistant.delta event.
func Delta(text string) Event { return Event{Kind: KindAssistantDelta, Text: text} }

// Status is a run.status event.
func Status(stage, message string) Event {
	return Event{Kind: KindStatus, Stage: stage, Message: message}
}

// Status values of a Result.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusPaused    = "paused"
)

// Result is how a run ended, as the engine sees it.
type Result struct {
	Status       string
	ErrorCode    string
	ErrorMessage string
	Diagnostics  json.RawMessage
	// OutputText is the final assistant output; the host uses it as the
	// assistant text when nothing was streamed.
	OutputText string
	// PauseReason says why a paused run stopped (e.g. "token_budget").
	PauseReason string
}

// Completed is a successful result.
func Completed(output string) Result { return Result{Status: StatusCompleted, OutputText: output} }

// Failed is a failed result with a stable code.
func Failed(code, message string) Result {
	return Result{Status: StatusFailed, ErrorCode: code, ErrorMessage: message}
}

// Cancelled confirms a cancellation.
func Cancelled() Result { return Result{Status: StatusCancelled} }

// ToolCall is a request to run one tool.
type ToolCall struct {
	// CallID is the engine's id for the call (unique within the run).
	CallID string
	Tool   string
	Input  json.RawMessage
}

// PermissionRequest asks the user to allow an action.
type PermissionRequest struct {
	PermissionID string
	// Action names the tool or action that needs permission.
	Action  string
	Title   string
	Details json.RawMessage
}

// PermissionDecision is the user's answer.
type PermissionDecision struct {
	Allow  bool
	Reason string
}

// Host is the per-run view of the host that an engine gets. Its calls keep
// the order of the run's timeline: an event emitted before CallTool appears
// before the tool's events.
type Host interface {
	// Emit reports an event. It fails once Run has returned.
	Emit(Event) error
	// CallTool runs a tool through the host (validation, policy, events).
	CallTool(ctx context.Context, call ToolCall) (plugin.ToolResult, error)
	// SaveState records the engine's state durably.
	SaveState(ctx context.Context, state []byte) error
	// RequestPermission blocks until the user decides (the run is paused
	// meanwhile) or ctx ends.
	RequestPermission(ctx context.Context, req PermissionRequest) (PermissionDecision, error)
	// Workspace is the run's working copy, or nil when the run has none.
	Workspace() workspace.Workspace
}

// Engine is an agent loop. One process serves many runs at once.
//
// Cancellation arrives through ctx. An engine that stops in time returns
// Cancelled() (or ctx's error), which confirms the cancel; any other result
// after a cancel means it could not be confirmed and the host fails the run.
type Engine interface {
	Info() plugin.Info
	Run(ctx context.Context, req RunRequest, host Host) (Result, error)
}

// Error codes the sdk itself puts in results.
const (
	// CodeEngineError: Run returned an error instead of a result.
	CodeEngineError = "ENGINE_ERROR"
)
