package core

import (
	"encoding/json"
	"time"
)

// Run is one coding-agent run: what was asked, where it runs and how it
// ended.
type Run struct {
	ID            string
	TenantID      string
	AppID         string
	UserID        string
	ChatSessionID string
	// BaseRevisionID is the revision the run started from;
	// ResultRevisionID the one its result became.
	BaseRevisionID   string
	ResultRevisionID string
	Prompt           string
	Status           RunStatus
	// Engine is the engine plugin instance running it; EngineRunRef the
	// engine's own id for the run (an OpenCode session, say).
	Engine       string
	EngineRunRef string
	// RequestedModelID is what the request asked for; ResolvedModelID the
	// model pinned on the run.
	RequestedModelID string
	ResolvedModelID  string
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
	// Context is the run context as a JSON object (timing_metrics_ms, the
	// selected-agent contract, ...).
	Context        json.RawMessage
	IdempotencyKey string
	// IdempotencyHash fingerprints the request that used the key, so a
	// replay with another body can be refused.
	IdempotencyHash string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	FinishedAt      *time.Time
	// Owner is the lease key of the host process that executes (or holds
	// paused) the run; "" for none. With several hosts on one database it
	// says which one a command for the run must reach.
	Owner string
}

// Pause reasons.
const (
	PauseForPermission = "permission"
)
