package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

func benchDialects(b *testing.B, fn func(b *testing.B, s *store.Store)) {
	b.Run("sqlite", func(b *testing.B) {
		s, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "a.db"), "")
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fn(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		s, err := store.Open(context.Background(), testenv.PostgresURL(b), "")
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fn(b, s)
	})
}

// benchApp makes tenant t1 and its app app1 holding files, and returns
// the app's first revision (its draft head).
func benchApp(b *testing.B, s *store.Store, files []sandbox.File) store.Revision {
	ctx := context.Background()
	if err := s.EnsureTenant(ctx, "t1", "T"); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateApp(ctx, store.App{ID: "app1", TenantID: "t1", Name: "big"}); err != nil {
		b.Fatal(err)
	}
	base, _, err := s.CreateRevision(ctx, store.NewRevision{ID: "rev_base", AppID: "app1", Source: "upload", Files: files, AdvanceDraft: true})
	if err != nil {
		b.Fatal(err)
	}
	return base
}

// app500 is a 500-file, 5 MB app of text lines; variant > 0 changes one line
// of files first, first+1 and first+2.
func app500(variant, first int) []sandbox.File {
	files := make([]sandbox.File, 500)
	for i := range files {
		data := make([]byte, 0, 10_000)
		for l := 0; len(data) < 10_000-40; l++ {
			line := fmt.Sprintf("export const v%d_%d = %d // padding text\n", i, l, l)
			if variant > 0 && i >= first && i < first+3 && l == 5 {
				line = fmt.Sprintf("export const v%d_%d = %d // changed by run %d\n", i, l, l, variant)
			}
			data = append(data, line...)
		}
		files[i] = sandbox.File{Path: fmt.Sprintf("src/dir%d/file%d.ts", i%20, i), Data: data}
	}
	return files
}

// BenchmarkApplyResult500Files: a run's result of a 500-file, 5 MB app in
// which 3 files changed becomes the new head (revision, draft move,
// checkpoint).
func BenchmarkApplyResult500Files(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		base := benchApp(b, s, app500(0, 0))
		a := New(s)
		results := make([][]sandbox.File, b.N)
		for i := range results {
			results[i] = app500(i+1, 0)
		}
		head := base.ID
		before, err := s.StoredBlobBytes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			out, err := a.ApplyFiles(ctx, &core.Run{ID: fmt.Sprintf("run%d", i), AppID: "app1", BaseRevisionID: head, Prompt: "p"}, results[i])
			if err != nil || out.RevisionID == "" {
				b.Fatalf("%v %s", err, out.Result)
			}
			head = out.RevisionID
		}
		b.StopTimer()
		after, err := s.StoredBlobBytes(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after-before)/float64(b.N), "stored-bytes/op")
	})
}

// BenchmarkMergeResult500Files: the same, but the draft head moved by three
// other files first, so each result is merged three-way.
func BenchmarkMergeResult500Files(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		base := benchApp(b, s, app500(0, 0))
		a := New(s)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			app, _ := s.GetApp(ctx, "app1")
			// Someone else changes files 100..102 on top of the head.
			other, _, err := s.CreateRevision(ctx, store.NewRevision{ID: fmt.Sprintf("rev_other%d", i), AppID: "app1", ParentID: app.DraftRevisionID,
				Source: "manual", Files: app500(1000+i, 100), AdvanceDraft: true, DraftFrom: app.DraftRevisionID})
			if err != nil {
				b.Fatal(err)
			}
			_ = other
			result := app500(i+1, 0)
			b.StartTimer()
			out, err := a.ApplyFiles(ctx, &core.Run{ID: fmt.Sprintf("run%d", i), AppID: "app1", BaseRevisionID: base.ID, Prompt: "p"}, result)
			if err != nil {
				b.Fatal(err)
			}
			if r := decodeResultB(out.Result); r != KindMerged {
				b.Fatalf("want a merge, got %s", out.Result)
			}
		}
	})
}

// BenchmarkApplyResultOneChanged501: a warm turn's result of a 501-file app
// in which one file changed, as the host applies it: a manifest of digests
// (the changed content stored as it streamed in), applied over the head.
// What costs here is handling the 500 files that did not change.
func BenchmarkApplyResultOneChanged501(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		base := benchApp(b, s, append(app500(0, 0), sandbox.File{Path: "src/counter.txt", Data: []byte("0\n")}))
		manifest, err := s.RevisionManifest(ctx, base.ID)
		if err != nil {
			b.Fatal(err)
		}
		a := New(s)
		head := base.ID
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			counter, err := s.PutBlob(ctx, fmt.Appendf(nil, "%d\n", i+1))
			if err != nil {
				b.Fatal(err)
			}
			res := orchestrator.RunResult{Files: make([]orchestrator.ResultFile, len(manifest))}
			for j, e := range manifest {
				res.Files[j] = orchestrator.ResultFile{Path: e.Path, Mode: e.Mode, Size: e.Size, SHA256: e.SHA256}
				if e.Path == "src/counter.txt" {
					res.Files[j].SHA256, res.Files[j].Size = counter, int64(len(fmt.Sprintf("%d\n", i+1)))
				}
			}
			b.StartTimer()
			out, err := a.ApplyResult(ctx, &core.Run{ID: fmt.Sprintf("run%d", i), AppID: "app1", BaseRevisionID: head, Prompt: "p"}, res)
			if err != nil || out.RevisionID == "" {
				b.Fatalf("%v %s", err, out.Result)
			}
			if r := decodeResultB(out.Result); r != KindApplied {
				b.Fatalf("want applied, got %s", out.Result)
			}
			head = out.RevisionID
		}
	})
}
