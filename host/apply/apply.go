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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	RevisionFiles(ctx context.Context, revisionID string) ([]sandbox.File, error)
	CreateRevision(ctx context.Context, nr store.NewRevision) (store.Revision, store.WriteStats, error)
	CreateCheckpoint(ctx context.Context, c *store.Checkpoint) error
}

// maxAttempts bounds retries when the draft head moves between reading it
// and moving it: each retry merges against the newer head.
const maxAttempts = 5

// Applier is the orchestrator's ResultSink.
type Applier struct{ st Store }

var _ orchestrator.ResultSink = (*Applier)(nil)

// New returns an Applier over st.
func New(st Store) *Applier { return &Applier{st: st} }

// Result is the run's result as recorded in its context and on run.completed.
type Result struct {
	Kind       string `json:"kind"`
	RevisionID string `json:"revision_id,omitempty"`
	// MergedInto is the draft head the result was merged with.
	MergedInto   string         `json:"merged_into,omitempty"`
	CheckpointID string         `json:"checkpoint_id,omitempty"`
	Changes      *Changes       `json:"changes,omitempty"`
	Conflicts    []FileConflict `json:"conflicts,omitempty"`
}

// ApplyResult stores the run's files as a revision (see the package doc).
func (a *Applier) ApplyResult(ctx context.Context, run *core.Run, files []sandbox.File) (orchestrator.ApplyOutcome, error) {
	// What changed is decided from the base's manifest (hashes), not its
	// content: reading a 5 MB base back from the database was most of the
	// cost of applying a small change. Content is read only to merge.
	var baseManifest []store.ManifestEntry
	if run.BaseRevisionID != "" {
		var err error
		if _, baseManifest, err = a.st.GetRevision(ctx, run.BaseRevisionID); err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("read base revision: %w", err)
		}
	}
	changes := diffManifest(baseManifest, files)
	var base []sandbox.File
	baseLoaded := run.BaseRevisionID == ""
	loadBase := func() error {
		if baseLoaded {
			return nil
		}
		var err error
		base, err = a.st.RevisionFiles(ctx, run.BaseRevisionID)
		baseLoaded = err == nil
		return err
	}
	if changes.Empty() {
		return outcome(Result{Kind: KindUnchanged}, nil, nil), nil
	}
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
				ID: newID("rev"), AppID: run.AppID, ParentID: run.BaseRevisionID, Source: "run", AuthorID: run.UserID,
				RunID: run.ID, Message: message, Files: files, AdvanceDraft: true, DraftFrom: head,
			})
			if core.CodeOf(err) == core.CodeRevisionConflict {
				continue // the head moved just now: merge with it
			}
			if err != nil {
				return orchestrator.ApplyOutcome{}, fmt.Errorf("store revision: %w", err)
			}
			return a.checkpointed(ctx, run, rev, Result{Kind: KindApplied, RevisionID: rev.ID, Changes: &changes})
		}

		// The head moved while the run worked.
		if err := loadBase(); err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("read base revision: %w", err)
		}
		theirs, err := a.st.RevisionFiles(ctx, head)
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("read draft head: %w", err)
		}
		merged, conflicts := mergeFiles(base, files, theirs)
		if runRevID == "" {
			// The run's own result is kept either way: as the merge's
			// second parent, or set aside when it conflicts.
			rev, _, err := a.st.CreateRevision(ctx, store.NewRevision{
				ID: newID("rev"), AppID: run.AppID, ParentID: run.BaseRevisionID, Source: "run", AuthorID: run.UserID,
				RunID: run.ID, Message: message, Files: files, Unapplied: len(conflicts) > 0,
			})
			if err != nil {
				return orchestrator.ApplyOutcome{}, fmt.Errorf("store revision: %w", err)
			}
			runRevID = rev.ID
			if len(conflicts) > 0 {
				res := Result{Kind: KindConflict, RevisionID: rev.ID, MergedInto: head, Changes: &changes, Conflicts: conflicts}
				diag, _ := json.Marshal(map[string]any{"conflicts": conflicts, "draft_revision_id": head})
				return outcome(res, []orchestrator.NewEvent{revisionEvent(rev, changes, false)}, diag), nil
			}
		}
		if len(conflicts) > 0 {
			// The head moved again and now collides: the run's revision
			// stays stored but is not applied.
			res := Result{Kind: KindConflict, RevisionID: runRevID, MergedInto: head, Changes: &changes, Conflicts: conflicts}
			diag, _ := json.Marshal(map[string]any{"conflicts": conflicts, "draft_revision_id": head})
			return outcome(res, nil, diag), nil
		}
		mergeRev, _, err := a.st.CreateRevision(ctx, store.NewRevision{
			ID: newID("rev"), AppID: run.AppID, ParentID: head, MergeParentID: runRevID, Source: "merge", AuthorID: run.UserID,
			RunID: run.ID, Message: "merge: " + message, Files: merged, AdvanceDraft: true, DraftFrom: head,
		})
		if core.CodeOf(err) == core.CodeRevisionConflict {
			continue
		}
		if err != nil {
			return orchestrator.ApplyOutcome{}, fmt.Errorf("store merge revision: %w", err)
		}
		mergedChanges := diffSets(theirs, merged)
		return a.checkpointed(ctx, run, mergeRev, Result{Kind: KindMerged, RevisionID: mergeRev.ID, MergedInto: head, Changes: &mergedChanges})
	}
	return orchestrator.ApplyOutcome{}, fmt.Errorf("the app's draft head kept moving; gave up after %d attempts", maxAttempts)
}

// checkpointed records a checkpoint at rev and builds the outcome with its
// events.
func (a *Applier) checkpointed(ctx context.Context, run *core.Run, rev store.Revision, res Result) (orchestrator.ApplyOutcome, error) {
	cp := store.Checkpoint{ID: newID("cp"), AppID: run.AppID, RevisionID: rev.ID, RunID: run.ID,
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
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	if line == "" {
		line = "run"
	}
	return line
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
