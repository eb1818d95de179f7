// Package orchestrator carries coding-agent runs through their life: it
// provisions the sandbox, drives the engine plugin, routes tool calls to
// toolpacks with the run's sandbox lent as their workspace, emits every event
// in order with exactly one terminal event last, pauses for permissions,
// cancels fail-closed, and fails runs whose plugins crash with a clear code.
// Runs execute here, never in an HTTP request.
package orchestrator

import (
	"context"
	"encoding/json"
	"io"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/toolpack"
)

// RunStore keeps runs. UpdateRun applies fn to the stored run atomically.
type RunStore interface {
	CreateRun(ctx context.Context, r *core.Run) error
	GetRun(ctx context.Context, id string) (*core.Run, error)
	UpdateRun(ctx context.Context, id string, fn func(*core.Run) error) (*core.Run, error)
	// TransitionRun writes r whole, in one step, only while the stored run
	// is in one of the from states, and returns what was stored; a run in
	// another state gets CodeInvalidRunTransition.
	TransitionRun(ctx context.Context, r *core.Run, from []core.RunStatus) (*core.Run, error)
	// SaveEngineState records an engine's state and, when work is not nil,
	// the run's working files as of that state (nil: unchanged), by
	// manifest: their contents are stored already (ResultSink.PutBlobFrom).
	SaveEngineState(ctx context.Context, runID string, state []byte, work []core.FileRef) error
	LoadEngineState(ctx context.Context, runID string) ([]byte, error)
}

// RunStarter is a RunStore that records a new run, its chat turn and its
// run.accepted event in one transaction (the store's StartRun). A store
// without it gets two writes, and no chat turns.
type RunStarter interface {
	StartRun(ctx context.Context, r *core.Run, turn *core.ChatTurn, accepted NewEvent) (core.Envelope, error)
}

// NewEvent is an event before the log gives it a seq and a time.
type NewEvent = core.EventInput

// EventSink is the durable per-run event log. Append assigns gap-free seqs
// in call order and is safe for concurrent use.
type EventSink interface {
	Append(ctx context.Context, run *core.Run, ev NewEvent) (core.Envelope, error)
}

// ResultSink turns a completed run's files into the app's next revision. The
// orchestrator streams the sandbox's files through PutBlobFrom one at a
// time, as they arrive, and hands ApplyResult only their manifest, so
// neither a result nor any one file of it is ever held whole.
type ResultSink interface {
	// PutBlobFrom stores the content read from r to its end (once per
	// digest) and returns its sha256 and size. An error from r stores
	// nothing and comes back wrapped.
	PutBlobFrom(ctx context.Context, r io.Reader) (string, int64, error)
	// ApplyResult turns the result into a revision. A result that breaks
	// the file limits fails with core.CodeResultTooLarge (and Diagnostics
	// naming the files) and changes nothing.
	ApplyResult(ctx context.Context, run *core.Run, res RunResult) (ApplyOutcome, error)
}

// BlobIndex is optionally implemented by a ResultSink that can say which
// contents it holds. The orchestrator then holds a new sandbox's files as
// known from its creation (those whose content is stored), so that even the
// sandbox's first snapshot sends only what the run changed; without it that
// snapshot sends every file.
type BlobIndex interface {
	StoredBlobs(ctx context.Context, shas []string) (map[string]bool, error)
}

// RunResult is a completed run's working copy, by manifest.
type RunResult struct {
	// Files are the snapshot's files in path order. A file over the
	// per-file limit has TooLarge set and no SHA256: its content was
	// never read into the host.
	Files []ResultFile
	// LeftOut are paths the sandbox could not include (symlinks, names
	// that are not UTF-8 …); they are reported, not applied.
	LeftOut []LeftOut
	// KeptOut are paths of the base revision that were kept out of the
	// sandbox (over the limits): the run did not delete them, so a result
	// without them carries them over from the base.
	KeptOut []string
}

// ResultFile is one file of a RunResult.
type ResultFile struct {
	Path     string
	Mode     uint32
	Size     int64
	SHA256   string
	TooLarge bool
}

// LeftOut is a path left out of a run's sandbox or result, and why.
type LeftOut struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ApplyOutcome is what became of a completed run's files.
type ApplyOutcome struct {
	// Events are emitted before run.completed (revision.created,
	// checkpoint.created).
	Events []NewEvent
	// RevisionID is the revision the result became ("" when nothing
	// changed); it is the run's result_revision_id.
	RevisionID string
	// Result describes the outcome as a JSON object (its "kind": applied,
	// merged, unchanged or conflict); it goes into the run's context and on
	// run.completed.
	Result json.RawMessage
	// Diagnostics, when set, go on run.completed (a conflict's files).
	Diagnostics json.RawMessage
}

// Plugins is what the orchestrator needs of the plugin manager.
type Plugins interface {
	Engine(name string) (*engine.Client, pluginmgr.Handle, error)
	Sandbox(name string) (*sandbox.Client, pluginmgr.Handle, error)
	Tool(name string) (*toolpack.Client, pluginmgr.ToolRoute, pluginmgr.Handle, error)
	Tools() []pluginmgr.ToolRoute
	OnCrash(fn func(pluginmgr.CrashEvent))
}
