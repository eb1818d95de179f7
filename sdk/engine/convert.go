package engine

import (
	"time"

	"github.com/agenthost/agenthost/sdk/internal/convert"
	"github.com/agenthost/agenthost/sdk/internal/pb/enginev1"
)

// roles maps Message.Role to Message.role_enum.
var roles = convert.NewEnum(map[enginev1.Role]string{
	enginev1.Role_ROLE_SYSTEM:    "system",
	enginev1.Role_ROLE_USER:      "user",
	enginev1.Role_ROLE_ASSISTANT: "assistant",
})

// runStatuses maps Result.Status to RunResult.status_enum.
var runStatuses = convert.NewEnum(map[enginev1.RunStatus]string{
	enginev1.RunStatus_RUN_STATUS_COMPLETED: StatusCompleted,
	enginev1.RunStatus_RUN_STATUS_FAILED:    StatusFailed,
	enginev1.RunStatus_RUN_STATUS_CANCELLED: StatusCancelled,
	enginev1.RunStatus_RUN_STATUS_PAUSED:    StatusPaused,
})

func requestToProto(r RunRequest) *enginev1.RunRequest {
	p := &enginev1.RunRequest{
		RunId: r.RunID, AppId: r.AppID, ChatSessionId: r.ChatSessionID, Prompt: r.Prompt,
		Model: &enginev1.ModelSpec{
			Id: r.Model.ID, Provider: r.Model.Provider, ProviderModel: r.Model.ProviderModel,
			BaseUrl: r.Model.BaseURL, ApiKeyEnv: r.Model.APIKeyEnv, EngineModelId: r.Model.EngineModelID,
		},
		ContextJson: r.Context, State: r.State, WorkspaceId: r.WorkspaceID,
		Limits: &enginev1.Limits{
			MaxToolIterations: int32(r.Limits.MaxToolIterations),
			ToolTimeoutMs:     r.Limits.ToolTimeout.Milliseconds(),
			TokenBudget:       r.Limits.TokenBudget,
		},
	}
	// A chat's history is up to hundreds of messages a run: one block of
	// messages and one of pointers, not an allocation each.
	if n := len(r.History); n > 0 {
		msgs := make([]enginev1.Message, n)
		p.History = make([]*enginev1.Message, n)
		for i, m := range r.History {
			msgs[i].Role, msgs[i].RoleEnum, msgs[i].Content = m.Role, roles.ToProto(m.Role), m.Content
			p.History[i] = &msgs[i]
		}
	}
	if n := len(r.Tools); n > 0 {
		tools := make([]enginev1.ToolDescriptor, n)
		p.Tools = make([]*enginev1.ToolDescriptor, n)
		for i, t := range r.Tools {
			tools[i].Name, tools[i].Description, tools[i].InputSchemaJson = t.Name, t.Description, t.InputSchema
			p.Tools[i] = &tools[i]
		}
	}
	return p
}

func requestFromProto(p *enginev1.RunRequest) RunRequest {
	m := p.GetModel()
	l := p.GetLimits()
	r := RunRequest{
		RunID: p.GetRunId(), AppID: p.GetAppId(), ChatSessionID: p.GetChatSessionId(), Prompt: p.GetPrompt(),
		Model: Model{
			ID: m.GetId(), Provider: m.GetProvider(), ProviderModel: m.GetProviderModel(),
			BaseURL: m.GetBaseUrl(), APIKeyEnv: m.GetApiKeyEnv(), EngineModelID: m.GetEngineModelId(),
		},
		Context: p.GetContextJson(), State: p.GetState(), WorkspaceID: p.GetWorkspaceId(),
		Limits: Limits{
			MaxToolIterations: int(l.GetMaxToolIterations()),
			ToolTimeout:       time.Duration(l.GetToolTimeoutMs()) * time.Millisecond,
			TokenBudget:       l.GetTokenBudget(),
		},
	}
	if h := p.GetHistory(); len(h) > 0 {
		r.History = make([]Message, len(h))
		for i, m := range h {
			r.History[i] = Message{Role: roles.FromProto(m.GetRoleEnum(), m.GetRole()), Content: m.GetContent()}
		}
	}
	if ts := p.GetTools(); len(ts) > 0 {
		r.Tools = make([]ToolDescriptor, len(ts))
		for i, t := range ts {
			r.Tools[i] = ToolDescriptor{Name: t.GetName(), Description: t.GetDescription(), InputSchema: t.GetInputSchemaJson()}
		}
	}
	return r
}

func eventToProto(e Event) *enginev1.Event {
	switch e.Kind {
	case KindAssistantDelta:
		return &enginev1.Event{Event: &enginev1.Event_AssistantDelta{AssistantDelta: &enginev1.AssistantDelta{Text: e.Text}}}
	case KindStatus:
		return &enginev1.Event{Event: &enginev1.Event_Status{Status: &enginev1.StatusUpdate{Stage: e.Stage, Message: e.Message}}}
	case KindReasoning:
		return &enginev1.Event{Event: &enginev1.Event_Reasoning{Reasoning: &enginev1.Reasoning{Text: e.Text}}}
	case KindUsage:
		return &enginev1.Event{Event: &enginev1.Event_Usage{Usage: &enginev1.Usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens}}}
	case KindToolStarted:
		return &enginev1.Event{Event: &enginev1.Event_ToolStarted{ToolStarted: &enginev1.ToolStarted{CallId: e.CallID, Tool: e.Tool, InputJson: e.Input}}}
	case KindToolFinished:
		return &enginev1.Event{Event: &enginev1.Event_ToolFinished{ToolFinished: &enginev1.ToolFinished{
			CallId: e.CallID, Tool: e.Tool, Ok: e.OK, OutputJson: e.Output,
			ErrorCode: e.ErrorCode, ErrorMessage: e.ErrorMessage, DiagnosticsJson: e.Diagnostics,
		}}}
	}
	return nil
}

func eventFromProto(p *enginev1.Event) (Event, bool) {
	switch e := p.GetEvent().(type) {
	case *enginev1.Event_AssistantDelta:
		return Event{Kind: KindAssistantDelta, Text: e.AssistantDelta.GetText()}, true
	case *enginev1.Event_Status:
		return Event{Kind: KindStatus, Stage: e.Status.GetStage(), Message: e.Status.GetMessage()}, true
	case *enginev1.Event_Reasoning:
		return Event{Kind: KindReasoning, Text: e.Reasoning.GetText()}, true
	case *enginev1.Event_Usage:
		return Event{Kind: KindUsage, InputTokens: e.Usage.GetInputTokens(), OutputTokens: e.Usage.GetOutputTokens()}, true
	case *enginev1.Event_ToolStarted:
		t := e.ToolStarted
		return Event{Kind: KindToolStarted, CallID: t.GetCallId(), Tool: t.GetTool(), Input: t.GetInputJson()}, true
	case *enginev1.Event_ToolFinished:
		t := e.ToolFinished
		return Event{Kind: KindToolFinished, CallID: t.GetCallId(), Tool: t.GetTool(), OK: t.GetOk(), Output: t.GetOutputJson(),
			ErrorCode: t.GetErrorCode(), ErrorMessage: t.GetErrorMessage(), Diagnostics: t.GetDiagnosticsJson()}, true
	}
	// An event kind from a newer protocol minor: skip it rather than fail.
	return Event{}, false
}

func resultToProto(r Result) *enginev1.RunResult {
	return &enginev1.RunResult{
		Status: r.Status, StatusEnum: runStatuses.ToProto(r.Status), ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage,
		DiagnosticsJson: r.Diagnostics, OutputText: r.OutputText, PauseReason: r.PauseReason,
	}
}

func resultFromProto(p *enginev1.RunResult) Result {
	return Result{
		Status:    runStatuses.FromProto(p.GetStatusEnum(), p.GetStatus()),
		ErrorCode: p.GetErrorCode(), ErrorMessage: p.GetErrorMessage(),
		Diagnostics: p.GetDiagnosticsJson(), OutputText: p.GetOutputText(), PauseReason: p.GetPauseReason(),
	}
}
