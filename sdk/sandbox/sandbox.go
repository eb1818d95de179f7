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
	// MaxFileBytes is the host's limit on one file (0: the backend's own).
	// A backend refuses bigger files and stops a command writing one a
	// byte past it (RLIMIT_FSIZE), so the file shows as over the limit in
	// the snapshot instead of silently truncated at it.
	MaxFileBytes int64
}

// SnapshotEntry is one path of a snapshot: a file with its content, or,
// when LeftOut is set, a path the backend does not include and why.
type SnapshotEntry struct {
	File
	// Size is the file's size in bytes. It equals len(Data) unless TooLarge.
	Size int64
	// TooLarge says the file was over the limit the host asked for
	// (Client.SnapshotEach): its content was not kept, Data is nil.
	TooLarge bool
	// LeftOut, when not empty, is why Path is not in the snapshot (a
	// symlink, a special file, a name that is not valid UTF-8 — Path is
	// then Go-quoted). Such an entry has no content.
	LeftOut string
	// Unchanged says the file is as it was at the generation the snapshot
	// was asked since (ChangeTracker): Data is nil, and SHA256 is the
	// lowercase hex sha256 of its content then. Size and Mode are set.
	Unchanged bool
	SHA256    string
	// Removed says Path was a file of the generation a ChangeLister was
	// asked since and is no longer one (deleted, left out or excluded
	// now). Only the path is set.
	Removed bool
}

// Info describes a sandbox.
type Info struct {
	ID        string
	Status    string
	CreatedAt time.Time
	ScopeKey  string
	// SnapshotGeneration is set by Create when the backend tracks changes
	// (ChangeTracker): the generation of the files the sandbox was created
	// with, so that even its first snapshot sends only what changed.
	SnapshotGeneration string
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
	// Snapshot passes every file of the working copy except those matched
	// by exclude (see MatchExclude) to emit, one at a time in path order, so
	// that neither side holds the whole working copy. What it cannot include
	// (symlinks, special files, names that are not valid UTF-8) it passes
	// as LeftOut entries rather than failing. An error from emit ends the
	// snapshot with that error.
	Snapshot(ctx context.Context, id string, exclude []string, emit func(SnapshotEntry) error) error
}

// ChangeTracker is implemented by backends that know which files of a
// sandbox changed since an earlier snapshot of it, so that the content of
// the others need not travel to the host nor be hashed again.
type ChangeTracker interface {
	// SnapshotSince is Snapshot, except that a file unchanged since
	// generation since may be passed as an Unchanged entry, without its
	// content. since names a file set the host holds: what an earlier
	// complete SnapshotSince of the same sandbox returned, or Create's
	// Info.SnapshotGeneration. An empty or unknown since (the plugin
	// restarted, say) passes every file's content. It returns the
	// generation of the file set it passed ("" if it keeps none); a path of
	// that set missing from a later snapshot since it was deleted.
	//
	// A file counts as unchanged only when nothing can have written it
	// since: a backend judging by stat keys must treat a file modified
	// within the timestamp tick of its record as changed (git's "racily
	// clean" entries).
	SnapshotSince(ctx context.Context, id string, exclude []string, since string, emit func(SnapshotEntry) error) (generation string, err error)
}

// ChangeLister is implemented by change-tracking backends that can pass
// only what changed since a generation, so that a snapshot of a big
// sandbox whose run changed one file costs one file, not a header per file.
type ChangeLister interface {
	// SnapshotChanges is SnapshotSince, except that when since names a
	// file set the backend still knows (changesOnly is then true) it
	// passes no Unchanged entries: it passes the files changed or added
	// since, every LeftOut entry, and a Removed entry for each file of
	// that set that is no longer one. The caller's files of that set, less
	// those passed or removed, are the rest. When it does not know since,
	// it passes a whole snapshot as SnapshotSince does (changesOnly
	// false), with no Removed entries. generation may be "" either way:
	// the backend keeps no record of this file set.
	SnapshotChanges(ctx context.Context, id string, exclude []string, since string, emit func(SnapshotEntry) error) (generation string, changesOnly bool, err error)
}

// Settler is implemented by change-tracking backends that can vouch for a
// snapshot's sandbox being settled, so that the host need not snapshot again
// a sandbox it made no call into since (a chat turn that only talked).
type Settler interface {
	// Settled reports whether, when the snapshot of sandbox id that
	// returned generation began, no command was running in it and no
	// process the backend started for it could still run, so that from
	// then on only calls into the sandbox (its Workspace service, direct or
	// through the host) can change its files. It is asked right after that
	// snapshot, so it must be cheap. It must answer false when in doubt, for
	// an unknown generation, and for one that is no longer the latest.
	Settled(id, generation string) bool
}

// PortExposer is implemented by backends that can expose a port.
type PortExposer interface {
	ExposePort(ctx context.Context, id string, port int) (Endpoint, error)
}

// CommandFileSize is the RLIMIT_FSIZE a backend gives commands when the host
// limits one file to hostMax bytes (CreateSpec.MaxFileBytes; 0: no host
// limit) and the backend's own config says configured (0: its default). It
// is one byte past the host's limit: a command that writes a bigger file is
// stopped there, and the file is then visibly over the limit, so the host
// refuses the result rather than storing a file silently cut at the limit.
func CommandFileSize(hostMax, configured int64) int64 {
	if hostMax <= 0 {
		return configured
	}
	if configured > 0 && configured <= hostMax {
		return configured
	}
	return hostMax + 1
}
