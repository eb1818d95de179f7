package store

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevisionAdvancesDraftAtomically: a revision that moves the draft head
// does so only from the expected head, and a refused move stores nothing.
func TestRevisionAdvancesDraftAtomically(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		files := []sandbox.File{{Path: "a.txt", Data: []byte("a")}}
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "rev1", AppID: "app1", Source: "upload", Files: files, AdvanceDraft: true, DraftFrom: ""})
		require.NoError(t, err)
		app, err := s.GetApp(ctx, "app1")
		require.NoError(t, err)
		assert.Equal(t, "rev1", app.DraftRevisionID)

		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev2", AppID: "app1", ParentID: "rev1", Source: "run", Files: files, AdvanceDraft: true, DraftFrom: "rev0"})
		assert.Equal(t, core.CodeRevisionConflict, core.CodeOf(err))
		_, _, err = s.GetRevision(ctx, "rev2")
		assert.ErrorIs(t, err, ErrNotFound, "the refused revision was not stored")

		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev2", AppID: "app1", ParentID: "rev1", Source: "run", Files: files, AdvanceDraft: true, DraftFrom: "rev1"})
		require.NoError(t, err)
		app, _ = s.GetApp(ctx, "app1")
		assert.Equal(t, "rev2", app.DraftRevisionID)

		// Revisions page newest first.
		time.Sleep(2 * time.Millisecond)
		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev3", AppID: "app1", ParentID: "rev2", Source: "manual", Files: files})
		require.NoError(t, err)
		page, err := s.ListRevisions(ctx, "app1", "", 2)
		require.NoError(t, err)
		require.Len(t, page, 2)
		assert.Equal(t, "rev3", page[0].ID)
		rest, err := s.ListRevisions(ctx, "app1", page[1].ID, 10)
		require.NoError(t, err)
		require.Len(t, rest, 1)
		assert.Equal(t, "rev1", rest[0].ID)
	})
}

func TestCheckpoints(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		require.NoError(t, s.EnsureTenant(ctx, "t1", "T"))
		uid, err := s.EnsureUser(ctx, "t1", "u1", "u@x")
		require.NoError(t, err)
		require.NoError(t, s.CreateChatSession(ctx, ChatSession{ID: "chat1", TenantID: "t1", AppID: "app1", UserID: uid}))
		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev1", AppID: "app1", Source: "upload", Files: []sandbox.File{{Path: "a", Data: []byte("a")}}})
		require.NoError(t, err)

		c1 := Checkpoint{ID: "cp1", AppID: "app1", RevisionID: "rev1", RunID: "run1", ChatSessionID: "chat1", Kind: "run", Label: "first"}
		require.NoError(t, s.CreateCheckpoint(ctx, &c1))
		time.Sleep(2 * time.Millisecond)
		c2 := Checkpoint{ID: "cp2", AppID: "app1", RevisionID: "rev1", Kind: "restore"}
		require.NoError(t, s.CreateCheckpoint(ctx, &c2))

		got, err := s.GetCheckpoint(ctx, "cp1")
		require.NoError(t, err)
		assert.Equal(t, c1, got)
		_, err = s.GetCheckpoint(ctx, "nope")
		assert.ErrorIs(t, err, ErrNotFound)

		all, err := s.ListCheckpoints(ctx, "app1", "", "", 10)
		require.NoError(t, err)
		require.Len(t, all, 2)
		assert.Equal(t, "cp2", all[0].ID, "newest first")
		chat, err := s.ListCheckpoints(ctx, "app1", "chat1", "", 10)
		require.NoError(t, err)
		require.Len(t, chat, 1)
		older, err := s.ListCheckpoints(ctx, "app1", "", "cp2", 10)
		require.NoError(t, err)
		require.Len(t, older, 1)
		assert.Equal(t, "cp1", older[0].ID)

		require.NoError(t, s.MarkChatRestored(ctx, "chat1", "cp2"))
		cs, err := s.GetChatSession(ctx, "chat1")
		require.NoError(t, err)
		assert.Equal(t, "cp2", cs.RestoredCheckpointID.String)
		require.NoError(t, s.MarkChatRestored(ctx, "chat1", ""))
		cs, _ = s.GetChatSession(ctx, "chat1")
		assert.False(t, cs.RestoredCheckpointID.Valid)
		assert.ErrorIs(t, s.MarkChatRestored(ctx, "nope", "cp1"), ErrNotFound)
	})
}
