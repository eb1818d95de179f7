package workspace

import (
	"context"
	"time"
)

// Placeholders a ServiceSpec's Argv and Env may hold; the sandbox replaces
// them when it starts the service.
const (
	// PlaceholderPort becomes a free port on the sandbox's loopback.
	PlaceholderPort = "{port}"
	// PlaceholderState becomes a private folder outside the working copy
	// (so it never reaches a snapshot), removed with the sandbox.
	PlaceholderState = "{state}"
)

// DefaultServiceStopGrace is how long a stopping service gets between
// SIGTERM and SIGKILL when the caller names no grace.
const DefaultServiceStopGrace = 5 * time.Second

// ServiceSpec describes a long-running process of a sandbox: a server that an
// engine drives (opencode serve, say), started once and reused by later runs
// of the same sandbox. Unlike Exec it has no wall-clock cap; it lives until
// StopService or until the sandbox stops.
type ServiceSpec struct {
	// Name identifies the service in its sandbox: 1-40 of [a-z0-9-].
	Name string
	// Argv[0] is looked up on the sandbox's PATH (or is a path). Argv and
	// Env may hold PlaceholderPort and PlaceholderState.
	Argv []string
	Env  []string
	// Dir is the working folder relative to the root; empty means the root.
	Dir string
	// ReadOnlyPaths are absolute paths of the machine the service must read
	// or run (the folder of its binary, say); isolating backends bind them
	// read-only, others ignore them.
	ReadOnlyPaths []string
	// Connect lists the host:port addresses the service connects to (its
	// model server, a callback endpoint of the plugin that started it).
	// A backend whose services have a network of their own (bwrap's
	// loopback policy) makes exactly these reachable from inside, under
	// the same host name and port, and nothing else; backends that share
	// the machine's network ignore it. A host is a loopback IP or a name
	// (resolved outside the sandbox, when connected to).
	Connect []string
}

// ServiceInfo describes a service.
type ServiceInfo struct {
	Name    string
	Running bool
	// Started is true when this StartService call started the service,
	// false when it answered one already running.
	Started bool
	// Port is the port PlaceholderPort became; Address is where plugin
	// processes reach it (host:port) when the sandbox provides loopback.
	Port      int
	Address   string
	StartedAt time.Time
	// ExitCode and Signal say how a service that is no longer running ended.
	ExitCode int
	Signal   string
	// OutputTail is the last few KiB of its stdout and stderr, for
	// diagnostics when it fails.
	OutputTail []byte
	// RSSBytes is the resident memory of the service's processes (it and
	// what it started) while it runs; 0 when the backend cannot tell.
	RSSBytes int64
}

// Services is implemented by workspaces whose sandbox can run long-lived
// processes (plugin.FeatureServices). Unknown names answer plugin.CodeNotFound.
type Services interface {
	// StartService starts the service, or answers the running one of that
	// name (Started false) without looking at spec again.
	StartService(ctx context.Context, spec ServiceSpec) (ServiceInfo, error)
	// ServiceStatus reports a service, running or ended.
	ServiceStatus(ctx context.Context, name string) (ServiceInfo, error)
	// StopService sends SIGTERM to every process of the service, then
	// SIGKILL after grace (0: DefaultServiceStopGrace). Stopping an ended
	// or unknown service is not an error.
	StopService(ctx context.Context, name string, grace time.Duration) error
}
