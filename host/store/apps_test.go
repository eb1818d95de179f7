package store

import (
	"context"
	"errors"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreateAppWithRevisionIsAtomic: an app, its blobs and its first
// revision are written together; a failure at any step leaves no app (an
// app without a draft would fail every run) and no blob behind.
func TestCreateAppWithRevisionIsAtomic(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedApp(t, s)
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "rev_taken", AppID: "app1", Source: "upload",
			Files: []sandbox.File{{Path: "a.txt", Data: []byte("a")}}})
		require.NoError(t, err)
		before, err := s.StoredBlobBytes(ctx)
		require.NoError(t, err)

		fresh := []sandbox.File{{Path: "new.txt", Data: []byte("content no revision holds")}}
		for _, tc := range []struct {
			name string
			rev  NewRevision
			code string
			is   error
		}{
			// The revision insert fails after the app row and the blobs.
			{name: "revision id taken", rev: NewRevision{ID: "rev_taken", Source: "upload", Files: fresh}, is: ErrConflict},
			// The draft update fails last, after everything else.
			{name: "draft moved", rev: NewRevision{ID: "rev_b", Source: "upload", Files: fresh, DraftFrom: "rev_other"}, code: core.CodeRevisionConflict},
			{name: "path twice", rev: NewRevision{ID: "rev_c", Source: "upload", Files: append(fresh, fresh...)}, code: core.CodeInvalidRequest},
		} {
			t.Run(tc.name, func(t *testing.T) {
				app := App{ID: "app_" + tc.rev.ID, TenantID: "t1", Name: "atomic"}
				_, _, err := s.CreateAppWithRevision(ctx, app, tc.rev)
				require.Error(t, err)
				if tc.is != nil {
					assert.ErrorIs(t, err, tc.is)
				}
				if tc.code != "" {
					assert.Equal(t, tc.code, core.CodeOf(err))
				}
				_, err = s.GetApp(ctx, app.ID)
				assert.True(t, errors.Is(err, ErrNotFound), "the app must not exist: %v", err)
				after, err := s.StoredBlobBytes(ctx)
				require.NoError(t, err)
				assert.Equal(t, before, after, "no blob is left behind")
			})
		}

		got, rev, err := s.CreateAppWithRevision(ctx, App{ID: "app_ok", TenantID: "t1", Name: "ok"},
			NewRevision{ID: "rev_ok", Source: "upload", Files: fresh})
		require.NoError(t, err)
		assert.Equal(t, "rev_ok", got.DraftRevisionID)
		assert.Equal(t, "app_ok", rev.AppID)
		assert.Equal(t, "ok", got.Name)
		files, err := s.RevisionFiles(ctx, got.DraftRevisionID)
		require.NoError(t, err)
		require.Len(t, files, 1)
		assert.Equal(t, "new.txt", files[0].Path)
	})
}
