package apply

import (
	"context"
	"fmt"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
)

// RestoreStore is what restoring needs of storage beyond Store.
type RestoreStore interface {
	Store
	MarkChatRestored(ctx context.Context, chatSessionID, checkpointID string) error
}

// Restored is what a restore made.
type Restored struct {
	Revision   store.Revision
	Checkpoint store.Checkpoint
	// From is the checkpoint restored.
	From store.Checkpoint
}

// Restore makes the checkpoint's files the app's new draft head as a new
// revision whose parent is the current head: nothing newer is destroyed, and
// the restore is itself a checkpoint (so it can be undone by restoring the
// one before). The chat session (the checkpoint's own unless one is given)
// is marked so that its next run is told what was restored.
func Restore(ctx context.Context, st RestoreStore, appID string, from store.Checkpoint, userID, chatSessionID string) (Restored, error) {
	if from.AppID != appID {
		return Restored{}, core.Errf(core.CodeNotFound, "", "checkpoint %s not found", from.ID)
	}
	// By manifest: the contents are stored already, nothing is read.
	_, manifest, err := st.GetRevision(ctx, from.RevisionID)
	if err != nil {
		return Restored{}, fmt.Errorf("read checkpoint revision: %w", err)
	}
	if chatSessionID == "" {
		chatSessionID = from.ChatSessionID
	}
	for range maxAttempts {
		app, err := st.GetApp(ctx, appID)
		if err != nil {
			return Restored{}, err
		}
		rev, _, err := st.CreateRevision(ctx, store.NewRevision{
			ID: core.NewID("rev"), AppID: appID, ParentID: app.DraftRevisionID, Source: "restore", AuthorID: userID,
			Message:  fmt.Sprintf("restore checkpoint %s (revision %s)", from.ID, from.RevisionID),
			Manifest: manifest, AdvanceDraft: true, DraftFrom: app.DraftRevisionID,
		})
		if core.CodeOf(err) == core.CodeRevisionConflict {
			continue
		}
		if err != nil {
			return Restored{}, fmt.Errorf("store restored revision: %w", err)
		}
		cp := store.Checkpoint{ID: core.NewID("cp"), AppID: appID, RevisionID: rev.ID, ChatSessionID: chatSessionID,
			Kind: "restore", Label: "restored " + from.ID}
		if err := st.CreateCheckpoint(ctx, &cp); err != nil {
			return Restored{}, fmt.Errorf("record checkpoint: %w", err)
		}
		if chatSessionID != "" {
			if err := st.MarkChatRestored(ctx, chatSessionID, from.ID); err != nil {
				return Restored{}, fmt.Errorf("mark chat session: %w", err)
			}
		}
		return Restored{Revision: rev, Checkpoint: cp, From: from}, nil
	}
	return Restored{}, fmt.Errorf("the app's draft head kept moving; gave up after %d attempts", maxAttempts)
}
