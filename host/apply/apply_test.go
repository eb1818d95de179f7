package apply

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func eachDialect(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"), "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		fn(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		s, err := store.Open(context.Background(), testenv.PostgresURL(t), "")
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		fn(t, s)
	})
}

// lines makes a 30-line file whose line i reads "line i", with overrides.
func lines(over map[int]string) []byte {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		if s, ok := over[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		b.WriteString("line " + string(rune('0'+i/10)) + string(rune('0'+i%10)) + "\n")
	}
	return []byte(b.String())
}

type fixture struct {
	s    *store.Store
	base string
}

// newApp stores an app whose draft head holds files.
func newApp(t *testing.T, s *store.Store, files []sandbox.File) fixture {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.EnsureTenant(ctx, "t1", "T"))
	require.NoError(t, s.CreateApp(ctx, store.App{ID: "app1", TenantID: "t1", Name: "demo"}))
	rev, _, err := s.CreateRevision(ctx, store.NewRevision{ID: "rev_base", AppID: "app1", Source: "upload", Files: files, AdvanceDraft: true})
	require.NoError(t, err)
	return fixture{s: s, base: rev.ID}
}

func (f fixture) run(id string) *core.Run {
	return &core.Run{ID: id, AppID: "app1", BaseRevisionID: f.base, Prompt: "make it better\nplease", ChatSessionID: "chat1"}
}

func (f fixture) head(t testing.TB) string {
	a, err := f.s.GetApp(context.Background(), "app1")
	require.NoError(t, err)
	return a.DraftRevisionID
}

func (f fixture) files(t *testing.T, rev string) map[string]string {
	fs, err := f.s.RevisionFiles(context.Background(), rev)
	require.NoError(t, err)
	out := map[string]string{}
	for _, x := range fs {
		out[x.Path] = string(x.Data)
	}
	return out
}

func decodeResult(t *testing.T, o []byte) Result {
	var r Result
	require.NoError(t, json.Unmarshal(o, &r))
	return r
}

func TestApplyOnUnmovedHead(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: lines(nil)}, {Path: "b.ts", Data: []byte("b\n")}})
		a := New(s)

		// Nothing changed: no revision.
		out, err := a.ApplyFiles(ctx, f.run("run0"), []sandbox.File{{Path: "a.ts", Data: lines(nil)}, {Path: "b.ts", Data: []byte("b\n")}})
		require.NoError(t, err)
		assert.Equal(t, KindUnchanged, decodeResult(t, out.Result).Kind)
		assert.Empty(t, out.RevisionID)
		assert.Empty(t, out.Events)
		assert.Equal(t, f.base, f.head(t))

		out, err = a.ApplyFiles(ctx, f.run("run1"), []sandbox.File{{Path: "a.ts", Data: lines(map[int]string{3: "three"})}, {Path: "c.ts", Data: []byte("c\n")}})
		require.NoError(t, err)
		res := decodeResult(t, out.Result)
		assert.Equal(t, KindApplied, res.Kind)
		assert.Equal(t, out.RevisionID, f.head(t), "the result is the new head")
		assert.Equal(t, Changes{Added: []string{"c.ts"}, Modified: []string{"a.ts"}, Deleted: []string{"b.ts"}}, *res.Changes)
		rev, _, err := s.GetRevision(ctx, out.RevisionID)
		require.NoError(t, err)
		assert.Equal(t, f.base, rev.ParentID)
		assert.Equal(t, "run", rev.Source)
		assert.Equal(t, "run1", rev.RunID)
		assert.Equal(t, "make it better", rev.Message)
		require.Len(t, out.Events, 2)
		assert.Equal(t, core.EventRevisionCreated, out.Events[0].Type)
		assert.Equal(t, core.EventCheckpointCreated, out.Events[1].Type)
		cp, err := s.GetCheckpoint(ctx, res.CheckpointID)
		require.NoError(t, err)
		assert.Equal(t, out.RevisionID, cp.RevisionID)
		assert.Equal(t, "chat1", cp.ChatSessionID)
	})
}

func TestMergeWhenHeadMoved(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: lines(nil)}, {Path: "b.ts", Data: []byte("b\n")}})
		// Someone edits line 25 of a.ts and adds d.ts while the run works.
		manual, _, err := s.CreateRevision(ctx, store.NewRevision{ID: "rev_manual", AppID: "app1", ParentID: f.base, Source: "manual",
			Files:        []sandbox.File{{Path: "a.ts", Data: lines(map[int]string{25: "twenty-five"})}, {Path: "b.ts", Data: []byte("b\n")}, {Path: "d.ts", Data: []byte("d\n")}},
			AdvanceDraft: true, DraftFrom: f.base})
		require.NoError(t, err)

		// The run edited line 3 and b.ts: no overlap.
		out, err := New(s).ApplyFiles(ctx, f.run("run1"), []sandbox.File{{Path: "a.ts", Data: lines(map[int]string{3: "three"})}, {Path: "b.ts", Data: []byte("B\n")}})
		require.NoError(t, err)
		res := decodeResult(t, out.Result)
		require.Equal(t, KindMerged, res.Kind, "%s", out.Result)
		assert.Equal(t, manual.ID, res.MergedInto)
		head := f.head(t)
		assert.Equal(t, out.RevisionID, head)
		got := f.files(t, head)
		assert.Equal(t, string(lines(map[int]string{3: "three", 25: "twenty-five"})), got["a.ts"], "both edits kept")
		assert.Equal(t, "B\n", got["b.ts"])
		assert.Equal(t, "d\n", got["d.ts"], "the manual addition stays")
		merge, _, err := s.GetRevision(ctx, head)
		require.NoError(t, err)
		assert.Equal(t, "merge", merge.Source)
		assert.Equal(t, manual.ID, merge.ParentID)
		runRev, _, err := s.GetRevision(ctx, merge.MergeParentID)
		require.NoError(t, err)
		assert.Equal(t, f.base, runRev.ParentID, "the run's own result is the merge's second parent")
		assert.Equal(t, "run1", runRev.RunID)
	})
}

func TestConflictKeepsHead(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: lines(nil)}, {Path: "gone.ts", Data: []byte("x\n")}})
		_, _, err := s.CreateRevision(ctx, store.NewRevision{ID: "rev_manual", AppID: "app1", ParentID: f.base, Source: "manual",
			Files:        []sandbox.File{{Path: "a.ts", Data: lines(map[int]string{10: "ten by hand"})}, {Path: "gone.ts", Data: []byte("edited\n")}},
			AdvanceDraft: true, DraftFrom: f.base})
		require.NoError(t, err)

		out, err := New(s).ApplyFiles(ctx, f.run("run1"), []sandbox.File{{Path: "a.ts", Data: lines(map[int]string{10: "ten by the agent"})}})
		require.NoError(t, err)
		res := decodeResult(t, out.Result)
		require.Equal(t, KindConflict, res.Kind)
		assert.Equal(t, "rev_manual", f.head(t), "the head is left alone")
		require.Len(t, res.Conflicts, 2)
		assert.Equal(t, "a.ts", res.Conflicts[0].Path)
		assert.Equal(t, []LineRange{{10, 10}}, res.Conflicts[0].Lines)
		assert.Equal(t, "gone.ts", res.Conflicts[1].Path)
		assert.Contains(t, res.Conflicts[1].Reason, "deleted")
		rev, _, err := s.GetRevision(ctx, res.RevisionID)
		require.NoError(t, err)
		assert.False(t, rev.Applied, "the run's result is kept aside")
		assert.Equal(t, string(lines(map[int]string{10: "ten by the agent"})), f.files(t, rev.ID)["a.ts"])
		assert.Contains(t, string(out.Diagnostics), `"path":"a.ts"`)
		require.Len(t, out.Events, 1)
		assert.Contains(t, string(out.Events[0].Payload), `"applied":false`)
		cps, err := s.ListCheckpoints(ctx, "app1", "", "", 10)
		require.NoError(t, err)
		assert.Empty(t, cps, "nothing was applied, so nothing to restore")
	})
}

func TestRestoreKeepsNewerRevisions(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		require.NoError(t, s.EnsureTenant(ctx, "t1", "T"))
		uid, err := s.EnsureUser(ctx, "t1", "u1", "u@x")
		require.NoError(t, err)
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: []byte("v0\n")}})
		require.NoError(t, s.CreateChatSession(ctx, store.ChatSession{ID: "chat1", TenantID: "t1", AppID: "app1", UserID: uid}))
		a := New(s)
		var cps []string
		base := f.base
		for _, v := range []string{"v1\n", "v2\n", "v3\n"} {
			run := f.run("run_" + strings.TrimSpace(v))
			run.BaseRevisionID = base
			out, err := a.ApplyFiles(ctx, run, []sandbox.File{{Path: "a.ts", Data: []byte(v)}})
			require.NoError(t, err)
			res := decodeResult(t, out.Result)
			require.Equal(t, KindApplied, res.Kind)
			cps = append(cps, res.CheckpointID)
			base = out.RevisionID
		}
		from, err := s.GetCheckpoint(ctx, cps[0])
		require.NoError(t, err)
		r, err := Restore(ctx, s, "app1", from, uid, "")
		require.NoError(t, err)
		assert.Equal(t, r.Revision.ID, f.head(t))
		assert.Equal(t, base, r.Revision.ParentID, "the restore sits on top of the newest revision")
		assert.Equal(t, "v1\n", f.files(t, r.Revision.ID)["a.ts"])
		revs, err := s.ListRevisions(ctx, "app1", "", 10)
		require.NoError(t, err)
		assert.Len(t, revs, 5, "base, three runs and the restore: nothing was destroyed")
		assert.Equal(t, "restore", r.Checkpoint.Kind)
		cs, err := s.GetChatSession(ctx, "chat1")
		require.NoError(t, err)
		assert.Equal(t, cps[0], cs.RestoredCheckpointID.String, "the chat is told")

		_, err = Restore(ctx, s, "other_app", from, uid, "")
		assert.Equal(t, core.CodeNotFound, core.CodeOf(err))
	})
}

func decodeResultB(o []byte) string {
	var r Result
	_ = json.Unmarshal(o, &r)
	return r.Kind
}
