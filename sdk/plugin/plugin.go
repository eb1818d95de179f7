// Package plugin holds what every agenthost plugin kind shares: identity,
// the versioned handshake, optional capabilities, tool descriptions and the
// error type that crosses the wire with a stable code.
package plugin

import (
	"context"
	"encoding/json"
)

// Kind names a plugin kind. It is also the go-plugin dispense name.
type Kind string

// The plugin kinds the host knows.
const (
	KindEngine   Kind = "engine"
	KindSandbox  Kind = "sandbox"
	KindToolpack Kind = "toolpack"
)

// APIVersion is the major version of every kind's protocol package
// (agenthost.<kind>.v1). It is also the go-plugin protocol version, so a
// binary built against another major fails the handshake.
const APIVersion = 1

// Info identifies a plugin binary; the host checks it after connecting.
type Info struct {
	Name         string
	Kind         Kind
	Version      string
	APIVersion   int
	Description  string
	Capabilities map[string]string
}

// Health is a plugin's own view of whether it can serve.
type Health struct {
	Healthy bool
	// Reason says why not, in words an operator can act on.
	Reason string
}

// Configurer is implemented by plugins that take the `config { ... }` block of
// their HCL file. It is called once per connection before any other call.
type Configurer interface {
	Configure(ctx context.Context, config json.RawMessage) error
}

// HealthChecker is implemented by plugins that can be unhealthy while running
// (a missing external binary, say). Plugins without it are healthy while up.
type HealthChecker interface {
	Health(ctx context.Context) Health
}

// Permission is the default decision the host applies to a tool call.
type Permission string

// The tool permissions.
const (
	PermissionAllow Permission = "allow"
	PermissionAsk   Permission = "ask"
	PermissionDeny  Permission = "deny"
)

// ToolSpec describes one tool: what a model sees and how the host guards it.
type ToolSpec struct {
	Name              string
	Description       string
	InputSchema       json.RawMessage
	OutputSchema      json.RawMessage
	DefaultPermission Permission
}

// ToolError is a tool's domain failure (the tool ran and said no). Transport
// failures are plain Go errors instead.
type ToolError struct {
	Code        string
	Message     string
	Field       string
	Diagnostics json.RawMessage
}

// ToolResult is the outcome of one tool call: Output when OK, Error otherwise.
type ToolResult struct {
	OK     bool
	Output json.RawMessage
	Error  *ToolError
}

// ToolOK builds a successful result from any JSON-marshalable value.
func ToolOK(v any) ToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return ToolFail("TOOL_OUTPUT_INVALID", "tool output is not JSON: "+err.Error(), "")
	}
	return ToolResult{OK: true, Output: b}
}

// ToolFail builds a failed result.
func ToolFail(code, message, field string) ToolResult {
	return ToolResult{Error: &ToolError{Code: code, Message: message, Field: field}}
}
