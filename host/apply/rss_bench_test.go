package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// bigResultFile is the largest file of BenchmarkApplyLargeResultMemory's
// result: 200 MB, with 50 MB of small files beside it (250 MB in all).
const bigResultFile = 200 << 20

// BenchmarkApplyLargeResultMemory applies a 250 MB result the way the
// orchestrator does (each file streamed into the store, one at a time, then
// applied by manifest) and reports the peak Go heap in use and the process's
// peak RSS (VmHWM) against the largest file: the bar is under 2x. The
// limits are raised for it. Big data: run it on its own,
//
//	go test -run '^$' -bench ApplyLargeResultMemory -benchtime 1x ./host/apply/
func BenchmarkApplyLargeResultMemory(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		small := make([]sandbox.File, 50)
		for i := range small {
			small[i] = sandbox.File{Path: fmt.Sprintf("src/f%02d.bin", i), Data: bytes.Repeat([]byte{byte(i)}, 1<<20)}
		}
		f := newAppNamed(b, s, small[:3])
		a := NewWithLimits(s, core.FileLimits{MaxFileBytes: 256 << 20, MaxWorkspaceBytes: 1 << 30})
		for i := 0; i < b.N; i++ {
			runtime.GC()
			debug.FreeOSMemory()
			peak := watchHeap()
			var res orchestrator.RunResult
			put := func(p string, data []byte) {
				sha, err := a.PutBlob(ctx, data)
				if err != nil {
					b.Fatal(err)
				}
				res.Files = append(res.Files, orchestrator.ResultFile{Path: p, Size: int64(len(data)), SHA256: sha})
			}
			// As SnapshotEach hands them over: one buffer at a time,
			// dropped once stored.
			big := bytes.Repeat([]byte{byte(i + 1)}, bigResultFile)
			put("assets/big.bin", big)
			big = nil
			for _, sf := range small {
				put(sf.Path, sf.Data)
			}
			out, err := a.ApplyResult(ctx, &core.Run{ID: fmt.Sprintf("run%d", i), AppID: "app1", BaseRevisionID: f.head(b), Prompt: "p"}, res)
			if err != nil || out.RevisionID == "" {
				b.Fatalf("%v %s", err, out.Result)
			}
			heap := peak()
			b.ReportMetric(float64(heap)/float64(bigResultFile), "peak-heap/largest-file")
			b.ReportMetric(float64(vmHWM())/float64(bigResultFile), "peak-rss/largest-file")
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(vmHWM())/(1<<20), "peak-rss-MB")
		}
	})
}

// newAppNamed is newApp for a testing.TB.
func newAppNamed(tb testing.TB, s *store.Store, files []sandbox.File) fixture {
	ctx := context.Background()
	if err := s.EnsureTenant(ctx, "t1", "T"); err != nil {
		tb.Fatal(err)
	}
	if err := s.CreateApp(ctx, store.App{ID: "app1", TenantID: "t1", Name: "demo"}); err != nil {
		tb.Fatal(err)
	}
	rev, _, err := s.CreateRevision(ctx, store.NewRevision{ID: "rev_base", AppID: "app1", Source: "upload", Files: files, AdvanceDraft: true})
	if err != nil {
		tb.Fatal(err)
	}
	return fixture{s: s, base: rev.ID}
}

// watchHeap samples the Go heap in use every few milliseconds until the
// returned function is called, which gives the peak seen.
func watchHeap() func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// vmHWM is the process's peak resident set size in bytes (0 if unknown).
func vmHWM() uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
