package core

import "time"

// Run is one coding-agent run: what was asked, where it runs and how it
// ended.
type Run struct {
	ID            string
	TenantID      string
	AppID         string
	UserID        string
	ChatSessionID string
	Prompt        string
	Status        RunStatus
	// Engine is the engine plugin instance running it.
	Engine string
	// SandboxBackend is the sandbox plugin instance holding its files.
	SandboxBackend   string
	SandboxID        string
	SandboxStatus    string
	SandboxStartedAt *time.Time
	// PauseReason says why a paused run waits ("permission", "token_budget").
	PauseReason  string
	ErrorCode    string
	ErrorMessage string
	OutputText   string
	InputTokens  int64
	OutputTokens int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
	FinishedAt   *time.Time
}

// Pause reasons.
const (
	PauseForPermission = "permission"
)
