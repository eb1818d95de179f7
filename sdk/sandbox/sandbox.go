// Package sandbox is the contract of sandbox backends: they hold a run's
// working copy and run its commands. A backend implements Provider; the sdk
// serves it over gRPC (sdk.ServeSandbox) and the host talks to it through
// Client. Nothing here assumes the host can see the sandbox's disk: files go
// in and out through Create and Snapshot, and an exposed port is an address.
package sandbox

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Status values of a sandbox.
const (
	StatusRunning = "running"
	StatusStopped = "stopped"
)

// File is one file of a file set.
type File struct {
	Path string
	Mode uint32
	Data []byte
}

// CreateSpec describes a new sandbox.
type CreateSpec struct {
	// ID is chosen by the host (so it can record the sandbox first).
	ID string
	// ScopeKey is the reuse key (e.g. chat-<session id>); informational.
	ScopeKey string
	Labels   map[string]string
	// Files is the initial working copy.
	Files []File
}

// Info describes a sandbox.
type Info struct {
	ID        string
	Status    string
	CreatedAt time.Time
	ScopeKey  string
}

// Endpoint is where an exposed port can be reached.
type Endpoint struct {
	// Address is host:port.
	Address string
	URL     string
}

// Provider is a sandbox backend. One process serves many sandboxes at once,
// keyed by id. Unknown ids answer plugin.CodeNotFound.
type Provider interface {
	Info() plugin.Info
	Create(ctx context.Context, spec CreateSpec) (Info, error)
	Get(ctx context.Context, id string) (Info, error)
	// Stop ends every process of the sandbox and removes its working copy.
	// Stopping an unknown or stopped sandbox is not an error.
	Stop(ctx context.Context, id string) error
	// Workspace returns the file and exec API of a running sandbox.
	Workspace(ctx context.Context, id string) (workspace.Workspace, error)
	// Snapshot returns every file of the working copy except those matched
	// by exclude (see MatchExclude), in path order.
	Snapshot(ctx context.Context, id string, exclude []string) ([]File, error)
}

// PortExposer is implemented by backends that can expose a port.
type PortExposer interface {
	ExposePort(ctx context.Context, id string, port int) (Endpoint, error)
}
