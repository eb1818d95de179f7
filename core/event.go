package core

import (
	"encoding/json"
	"time"
)

// EventType names an event of a run's timeline.
type EventType string

// The event types of the seed contract plus what it lacked.
const (
	EventRunAccepted        EventType = "run.accepted"
	EventRunStatus          EventType = "run.status"
	EventAssistantDelta     EventType = "assistant.delta"
	EventToolStarted        EventType = "tool.started"
	EventToolCompleted      EventType = "tool.completed"
	EventToolFailed         EventType = "tool.failed"
	EventPermissionRequest  EventType = "permission.requested"
	EventPermissionResolved EventType = "permission.resolved"
	EventRunPaused          EventType = "run.paused"
	EventRunResumed         EventType = "run.resumed"
	EventRevisionCreated    EventType = "revision.created"
	EventCheckpointCreated  EventType = "checkpoint.created"
	EventRunCompleted       EventType = "run.completed"
	EventRunFailed          EventType = "run.failed"
	EventRunCancelled       EventType = "run.cancelled"
)

// Terminal reports whether t ends a run's timeline. Exactly one terminal
// event is in every finished run's log, and it is the last.
func (t EventType) Terminal() bool {
	return t == EventRunCompleted || t == EventRunFailed || t == EventRunCancelled
}

// TerminalEventFor is the terminal event of a final status.
func TerminalEventFor(s RunStatus) (EventType, bool) {
	switch s {
	case RunCompleted:
		return EventRunCompleted, true
	case RunFailed:
		return EventRunFailed, true
	case RunCancelled:
		return EventRunCancelled, true
	}
	return "", false
}

// Envelope is one event as stored and as sent to clients. Seq is gap-free
// per run, starting at 1.
type Envelope struct {
	Event       EventType       `json:"event"`
	RunID       string          `json:"run_id"`
	AppID       string          `json:"app_id"`
	Seq         int64           `json:"seq"`
	TS          time.Time       `json:"ts"`
	Payload     json.RawMessage `json:"payload"`
	Diagnostics json.RawMessage `json:"diagnostics,omitempty"`
}

// EventInput is an event before the log gives it a seq and a time.
type EventInput struct {
	Type        EventType
	Payload     json.RawMessage
	Diagnostics json.RawMessage
}

// Run status stages reported in run.status events.
const (
	StageSandboxStarting = "sandbox_starting"
	StageSandboxReady    = "sandbox_ready"
	StageEngineStarting  = "engine_starting"
	StageApplying        = "applying"
	// StageWarning says something of the run's files was left out (a file
	// over the limits kept out of the sandbox, a symlink or an unstorable
	// name left out of the result); the payload's "left_out" lists them as
	// {path, reason}. The run goes on.
	StageWarning = "warning"
)

// GeneratedArtifacts are left out when a sandbox becomes a revision: build
// output, caches and installed dependencies that the app's sources
// regenerate. Patterns use sandbox.MatchExclude's rules.
var GeneratedArtifacts = []string{
	"node_modules", "dist", ".vite", ".turbo", ".cache", ".parcel-cache",
	".next", ".svelte-kit", "coverage", "*.tsbuildinfo", ".eslintcache", ".DS_Store",
	// The OpenCode engine's per-run scaffolding (custom tools, lock
	// files), rewritten at every run.
	".opencode",
}
