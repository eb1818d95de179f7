// Package apply turns a completed run's sandbox files into the app's next
// revision without ever overwriting someone else's change: when the app's
// draft head is still the revision the run started from, the result becomes
// the new head; when the head moved meanwhile, the two are merged three-way
// (file by file, then line by line); when they collide, the result is kept as
// an unapplied revision and the head is left alone. Every applied result is a
// checkpoint the user can restore.
package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Result kinds (the "kind" of a run's result).
const (
	KindApplied   = "applied"
	KindMerged    = "merged"
	KindUnchanged = "unchanged"
	KindConflict  = "conflict"
)

// Store is what applying needs of storage.
type Store interface {
	GetApp(ctx context.Context, id string) (store.App, error)
	GetRevision(ctx context.Context, id string) (store.Revision, []store.ManifestEntry, error)
	// RevisionManifest is GetRevision's manifest alone (cached: a
	// revision's files never change).
	RevisionManifest(ctx context.Context, id string) ([]store.ManifestEntry, error)
	CreateRevision(ctx context.Context, nr store.NewRevision) (store.Revision, store.WriteStats, error)
	CreateCheckpoint(ctx context.Context, c *store.Checkpoint) error
	PutBlob(ctx context.Context, data []byte) (string, error)
	PutBlobFrom(ctx context.Context, r io.Reader) (string, int64, error)
	Blobs(ctx context.Context, shas []string) (map[string][]byte, error)
	StoredBlobs(ctx context.Context, shas []string) (map[string]bool, error)
}

// maxAttempts bounds retries when the draft head moves between reading it
// and moving it: each retry merges against the newer head. A refused move
// means another one landed, so retrying cannot spin without progress; the
// bound is only for a head that other hosts keep moving without pause. On
// one host, results of the same app are applied one at a time (appLocks),
// and do not refuse each other.
const maxAttempts = 50

// Applier is the orchestrator's ResultSink.
type Applier struct {
	st     Store
	limits core.FileLimits
	// apps serialises the results of each app this host applies: applied
	// at once, all but one would find the head moved, merge, and try again
	// (twenty runs of one app finishing together failed some with the head
	// "kept moving").
	apps appLocks
}

var (
	_ orchestrator.ResultSink = (*Applier)(nil)
	_ orchestrator.BlobIndex  = (*Applier)(nil)
)

// New returns an Applier over st with the default file limits.
func New(st Store) *Applier { return NewWithLimits(st, core.FileLimits{}) }

// NewWithLimits returns an Applier over st that refuses results breaking
// limits (zero fields: the defaults).
func NewWithLimits(st Store, limits core.FileLimits) *Applier {
	return &Applier{st: st, limits: limits.WithDefaults()}
}

// Result is the run's result as recorded in its context and on run.completed.
type Result struct {
	Kind       string `json:"kind"`
	RevisionID string `json:"revision_id,omitempty"`
	// MergedInto is the draft head the result was merged with.
	MergedInto   string         `json:"merged_into,omitempty"`
	CheckpointID string         `json:"checkpoint_id,omitempty"`
	Changes      *Changes       `json:"changes,omitempty"`
	Conflicts    []FileConflict `json:"conflicts,omitempty"`
	// LeftOut are paths of the sandbox the result could not hold
	// (symlinks, names that are not UTF-8): not applied, reported.
	LeftOut []orchestrator.LeftOut `json:"left_out,omitempty"`
}

// PutBlobFrom stores one file's content as it streams in
// (orchestrator.ResultSink).
func (a *Applier) PutBlobFrom(ctx context.Context, r io.Reader) (string, int64, error) {
	return a.st.PutBlobFrom(ctx, r)
}

// StoredBlobs says which of the digests have their content stored
// (orchestrator.BlobIndex).
func (a *Applier) StoredBlobs(ctx context.Context, shas []string) (map[string]bool, error) {
	return a.st.StoredBlobs(ctx, shas)
}

// ApplyFiles applies a result given as whole files: their contents are
// stored first, then it is applied as ApplyResult does.
func (a *Applier) ApplyFiles(ctx context.Context, run *core.Run, files []sandbox.File) (orchestrator.ApplyOutcome, error) {
	var res orchestrator.RunResult
	for _, f := range files {
		sha, err := a.st.PutBlob(ctx, f.Data)
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("store %s: %w", f.Path, err)
		}
		res.Files = append(res.Files, orchestrator.ResultFile{Path: f.Path, Mode: f.Mode, Size: int64(len(f.Data)), SHA256: sha})
	}
	return a.ApplyResult(ctx, run, res)
}

// ApplyResult stores the run's files as a revision (see the package doc).
// It works on manifests (path, digest, size): what changed is decided by
// hash, and contents are read only where a three-way merge needs them, so a
// large result is never held in memory whole. A result that breaks the file
// limits is refused with core.CodeResultTooLarge before anything is stored.
func (a *Applier) ApplyResult(ctx context.Context, run *core.Run, res orchestrator.RunResult) (orchestrator.ApplyOutcome, error) {
	var base []store.ManifestEntry
	if run.BaseRevisionID != "" {
		var err error
		if base, err = a.st.RevisionManifest(ctx, run.BaseRevisionID); err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("read base revision: %w", err)
		}
	}
	ours := resultManifest(res, base)
	if out, err := a.checkLimits(ours, base, res); err != nil {
		return out, err
	}
	changes := diffManifest(base, ours)
	if changes.Empty() {
		return outcome(Result{Kind: KindUnchanged, LeftOut: res.LeftOut}, nil, nil), nil
	}
	unlock, err := a.apps.lock(ctx, run.AppID)
	if err != nil {
		return orchestrator.ApplyOutcome{}, err
	}
	defer unlock()
	message := summary(run.Prompt)
	runRevID := ""
	for range maxAttempts {
		app, err := a.st.GetApp(ctx, run.AppID)
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("read app: %w", err)
		}
		head := app.DraftRevisionID
		if head == run.BaseRevisionID && runRevID == "" {
			rev, _, err := a.st.CreateRevision(ctx, store.NewRevision{
				ID: core.NewID("rev"), AppID: run.AppID, ParentID: run.BaseRevisionID, Source: "run", AuthorID: run.UserID,
				RunID: run.ID, Message: message, Manifest: ours, AdvanceDraft: true, DraftFrom: head,
			})
			if core.CodeOf(err) == core.CodeRevisionConflict {
				continue // the head moved just now: merge with it
			}
			if err != nil {
				return orchestrator.ApplyOutcome{}, fmt.Errorf("store revision: %w", err)
			}
			return a.checkpointed(ctx, run, rev, Result{Kind: KindApplied, RevisionID: rev.ID, Changes: &changes, LeftOut: res.LeftOut})
		}

		// The head moved while the run worked.
		theirs, err := a.st.RevisionManifest(ctx, head)
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("read draft head: %w", err)
		}
		merged, conflicts, err := a.mergeManifests(ctx, base, ours, theirs)
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("merge with the draft head: %w", err)
		}
		if runRevID == "" {
			// The run's own result is kept either way: as the merge's
			// second parent, or set aside when it conflicts.
			rev, _, err := a.st.CreateRevision(ctx, store.NewRevision{
				ID: core.NewID("rev"), AppID: run.AppID, ParentID: run.BaseRevisionID, Source: "run", AuthorID: run.UserID,
				RunID: run.ID, Message: message, Manifest: ours, Unapplied: len(conflicts) > 0,
			})
			if err != nil {
				return orchestrator.ApplyOutcome{}, fmt.Errorf("store revision: %w", err)
			}
			runRevID = rev.ID
			if len(conflicts) > 0 {
				res := Result{Kind: KindConflict, RevisionID: rev.ID, MergedInto: head, Changes: &changes, Conflicts: conflicts, LeftOut: res.LeftOut}
				diag, _ := json.Marshal(map[string]any{"conflicts": conflicts, "draft_revision_id": head})
				return outcome(res, []orchestrator.NewEvent{revisionEvent(rev, changes, false)}, diag), nil
			}
		}
		if len(conflicts) > 0 {
			// The head moved again and now collides: the run's revision
			// stays stored but is not applied.
			res := Result{Kind: KindConflict, RevisionID: runRevID, MergedInto: head, Changes: &changes, Conflicts: conflicts, LeftOut: res.LeftOut}
			diag, _ := json.Marshal(map[string]any{"conflicts": conflicts, "draft_revision_id": head})
			return outcome(res, nil, diag), nil
		}
		mergeRev, _, err := a.st.CreateRevision(ctx, store.NewRevision{
			ID: core.NewID("rev"), AppID: run.AppID, ParentID: head, MergeParentID: runRevID, Source: "merge", AuthorID: run.UserID,
			RunID: run.ID, Message: "merge: " + message, Manifest: merged, AdvanceDraft: true, DraftFrom: head,
		})
		if core.CodeOf(err) == core.CodeRevisionConflict {
			continue
		}
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("store merge revision: %w", err)
		}
		mergedChanges := diffManifest(theirs, merged)
		return a.checkpointed(ctx, run, mergeRev, Result{Kind: KindMerged, RevisionID: mergeRev.ID, MergedInto: head, Changes: &mergedChanges, LeftOut: res.LeftOut})
	}
	return orchestrator.ApplyOutcome{}, fmt.Errorf("the app's draft head kept moving; gave up after %d attempts", maxAttempts)
}

// resultManifest is the run's result as a manifest: its files, plus the
// base files that were kept out of its sandbox and that it did not replace.
// Oversized files (never read) have no digest.
func resultManifest(res orchestrator.RunResult, base []store.ManifestEntry) []store.ManifestEntry {
	out := make([]store.ManifestEntry, 0, len(res.Files)+len(res.KeptOut))
	for _, f := range res.Files {
		out = append(out, store.ManifestEntry{Path: f.Path, SHA256: f.SHA256, Size: f.Size, Mode: f.Mode})
	}
	if len(res.KeptOut) > 0 {
		have := make(map[string]bool, len(res.Files))
		for _, f := range res.Files {
			have[f.Path] = true
		}
		kept := make(map[string]bool, len(res.KeptOut))
		for _, p := range res.KeptOut {
			kept[p] = true
		}
		for _, b := range base {
			if kept[b.Path] && !have[b.Path] {
				out = append(out, b)
			}
		}
	}
	// A snapshot comes in path order: sorted only when it is not.
	inOrder := func(a, b store.ManifestEntry) int { return strings.Compare(a.Path, b.Path) }
	if !slices.IsSortedFunc(out, inOrder) {
		slices.SortFunc(out, inOrder)
	}
	return out
}

// checkLimits refuses a result that breaks the file limits (see
// core.FileLimits.Check), naming the files in the error and diagnostics.
func (a *Applier) checkLimits(ours, base []store.ManifestEntry, res orchestrator.RunResult) (orchestrator.ApplyOutcome, error) {
	v := a.limits.Check(sized(ours), sized(base))
	named := map[string]bool{}
	for _, x := range v {
		named[x.Path] = true
	}
	for _, f := range res.Files {
		// Never read, so never storable, whatever the limits say now.
		if f.TooLarge && !named[f.Path] {
			v = append(v, core.LimitViolation{Path: f.Path, Size: f.Size, Limit: a.limits.MaxFileBytes,
				Message: fmt.Sprintf("file %s has at least %d bytes; the limit is %d", f.Path, f.Size, a.limits.MaxFileBytes)})
		}
	}
	if len(v) == 0 {
		return orchestrator.ApplyOutcome{}, nil
	}
	msgs := make([]string, len(v))
	for i, x := range v {
		msgs[i] = x.Message
	}
	diag, _ := json.Marshal(map[string]any{"too_large": v, "left_out": res.LeftOut})
	return orchestrator.ApplyOutcome{Diagnostics: diag}, core.Errf(core.CodeResultTooLarge, "",
		"the run's result breaks the file limits and was not applied (the app's draft is unchanged): %s", strings.Join(msgs, "; "))
}

func sized(m []store.ManifestEntry) []core.SizedFile {
	out := make([]core.SizedFile, len(m))
	for i, e := range m {
		out[i] = core.SizedFile{Path: e.Path, Size: e.Size, SHA256: e.SHA256}
	}
	return out
}

// checkpointed records a checkpoint at rev and builds the outcome with its
// events.
func (a *Applier) checkpointed(ctx context.Context, run *core.Run, rev store.Revision, res Result) (orchestrator.ApplyOutcome, error) {
	cp := store.Checkpoint{ID: core.NewID("cp"), AppID: run.AppID, RevisionID: rev.ID, RunID: run.ID,
		ChatSessionID: run.ChatSessionID, Kind: "run", Label: rev.Message}
	if err := a.st.CreateCheckpoint(ctx, &cp); err != nil {
		return orchestrator.ApplyOutcome{}, fmt.Errorf("record checkpoint: %w", err)
	}
	res.CheckpointID = cp.ID
	return outcome(res, []orchestrator.NewEvent{
		revisionEvent(rev, *res.Changes, true),
		checkpointEvent(cp),
	}, nil), nil
}

func outcome(res Result, events []orchestrator.NewEvent, diag json.RawMessage) orchestrator.ApplyOutcome {
	b, _ := json.Marshal(res)
	return orchestrator.ApplyOutcome{Events: events, RevisionID: res.RevisionID, Result: b, Diagnostics: diag}
}

// revisionEvent is revision.created for rev.
func revisionEvent(rev store.Revision, changes Changes, applied bool) orchestrator.NewEvent {
	return event(core.EventRevisionCreated, map[string]any{
		"revision_id": rev.ID, "parent_id": rev.ParentID, "merge_parent_id": rev.MergeParentID, "source": rev.Source,
		"applied": applied, "file_count": rev.FileCount, "total_size": rev.TotalSize, "changes": changes,
	})
}

// checkpointEvent is checkpoint.created for cp.
func checkpointEvent(cp store.Checkpoint) orchestrator.NewEvent {
	return event(core.EventCheckpointCreated, map[string]any{
		"checkpoint_id": cp.ID, "revision_id": cp.RevisionID, "kind": cp.Kind, "label": cp.Label,
	})
}

func event(typ core.EventType, payload any) orchestrator.NewEvent {
	b, _ := json.Marshal(payload)
	return orchestrator.NewEvent{Type: typ, Payload: b}
}

// summary makes a revision message from a prompt: its first line, bounded.
func summary(prompt string) string {
	if line := core.Title(prompt, core.MaxTitleRunes); line != "" {
		return line
	}
	return "run"
}
