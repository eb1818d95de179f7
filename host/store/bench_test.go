package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/require"
)

func benchDialects(b *testing.B, fn func(b *testing.B, s *Store)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, openSQLite(b)) })
	b.Run("postgres", func(b *testing.B) { fn(b, openPostgres(b)) })
}

// BenchmarkEventAppend: b.N events spread over `runs` concurrent runs, each
// run appending sequentially (as the orchestrator does). Reports events/s.
func BenchmarkEventAppend(b *testing.B) {
	for _, runs := range []int{1, 50} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			benchDialects(b, func(b *testing.B, s *Store) {
				payload := []byte(`{"text":"token "}`)
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ResetTimer()
				var wg sync.WaitGroup
				for r := 0; r < runs; r++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						run := newRun(fmt.Sprintf("bench-%d", r))
						for left.Add(-1) >= 0 {
							if _, err := s.Append(context.Background(), run, core.EventInput{Type: core.EventAssistantDelta, Payload: payload}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		})
	}
}

// BenchmarkRevision3Changed stores a new revision of a 500-file, 5 MB app in
// which 3 files changed. Reports the bytes of content written.
func BenchmarkRevision3Changed(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		seedApp(b, s)
		ctx := context.Background()
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "base", AppID: "app1", Source: "upload", Files: app500(0)})
		require.NoError(b, err)
		var written int64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			files := app500(i + 1)
			_, st, err := s.CreateRevision(ctx, NewRevision{ID: fmt.Sprintf("r%d", i), AppID: "app1", ParentID: "base", Source: "run", Files: files})
			if err != nil {
				b.Fatal(err)
			}
			written += st.BlobBytes
		}
		b.ReportMetric(float64(written)/float64(b.N), "content-bytes/op")
	})
}

// BenchmarkRevisionChain500: a run result's revision of a 500-file app that
// changed one file, each made from the one before by manifest (its
// contents stored already, as a streamed result's are): what a turn that
// changed one file writes. It should cost about what the change does, not
// the app's size.
func BenchmarkRevisionChain500(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		seedApp(b, s)
		ctx := context.Background()
		_, _, err := s.CreateRevision(ctx, NewRevision{ID: "r0", AppID: "app1", Source: "upload", Files: app500(0)})
		require.NoError(b, err)
		m, err := s.RevisionManifest(ctx, "r0")
		require.NoError(b, err)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			content := []byte(fmt.Sprintf("turn %d\n", i))
			sha, err := s.PutBlob(ctx, content)
			if err != nil {
				b.Fatal(err)
			}
			m[i%len(m)].SHA256, m[i%len(m)].Size = sha, int64(len(content))
			if _, _, err := s.CreateRevision(ctx, NewRevision{ID: fmt.Sprintf("r%d", i+1), AppID: "app1", ParentID: fmt.Sprintf("r%d", i),
				Source: "run", Manifest: m}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
