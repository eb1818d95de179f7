package apply

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// bigResultFile is the largest file of BenchmarkApplyLargeResultMemory's
// result: 200 MB, with 50 MB of small files beside it (250 MB in all).
const bigResultFile = 200 << 20

// smallResultFiles and smallResultBytes are the result's other files.
const (
	smallResultFiles = 50
	smallResultBytes = 1 << 20
)

// BenchmarkApplyLargeResultMemory applies a 250 MB result the way the
// orchestrator does (each file streamed into the store as the sandbox
// client receives it, chunk by chunk, then applied by manifest) and reports
// the process's peak RSS during that apply (VmHWM, reset just before it)
// against the largest file: the bar is under 2x. It also reports the peak Go
// heap, the RSS before, and the RSS once the apply has returned (as it is,
// and after a forced GC that returns freed memory to the OS). The limits are
// raised for it. Big data: run it on its own,
//
//	TEST_DATABASE_URL=postgres://… go test -run '^$' -bench ApplyLargeResultMemory -benchtime 1x ./host/apply/
func BenchmarkApplyLargeResultMemory(b *testing.B) {
	if !resetHWM() {
		b.Skip("needs Linux's /proc/self/clear_refs to measure the apply's own peak RSS")
	}
	benchDialects(b, func(b *testing.B, s *store.Store) {
		ctx := context.Background()
		f := newAppNamed(b, s, []sandbox.File{{Path: "src/f00.bin", Data: bytes.Repeat([]byte{0}, smallResultBytes)}})
		a := NewWithLimits(s, core.FileLimits{MaxFileBytes: 256 << 20, MaxWorkspaceBytes: 1 << 30})
		for i := 0; i < b.N; i++ {
			runtime.GC()
			debug.FreeOSMemory()
			before := procStatus("VmRSS")
			resetHWM()
			peak := watchHeap()
			var res orchestrator.RunResult
			put := func(p string, size int, fill byte) {
				sha, n, err := a.PutBlobFrom(ctx, &arriving{left: size, fill: fill})
				if err != nil || n != int64(size) {
					b.Fatal(err, n)
				}
				res.Files = append(res.Files, orchestrator.ResultFile{Path: p, Size: n, SHA256: sha})
			}
			put("assets/big.bin", bigResultFile, byte(i+1))
			for j := range smallResultFiles {
				put(fmt.Sprintf("src/f%02d.bin", j), smallResultBytes, byte(j))
			}
			out, err := a.ApplyResult(ctx, &core.Run{ID: fmt.Sprintf("run%d", i), AppID: "app1", BaseRevisionID: f.head(b), Prompt: "p"}, res)
			if err != nil || out.RevisionID == "" {
				b.Fatalf("%v %s", err, out.Result)
			}
			heap := peak()
			hwm := procStatus("VmHWM")
			after := procStatus("VmRSS")
			runtime.GC()
			debug.FreeOSMemory()
			afterGC := procStatus("VmRSS")
			b.ReportMetric(float64(hwm)/float64(bigResultFile), "peak-rss/largest-file")
			b.ReportMetric(float64(heap)/float64(bigResultFile), "peak-heap/largest-file")
			b.ReportMetric(float64(before)/(1<<20), "rss-before-MB")
			b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MB")
			b.ReportMetric(float64(after)/(1<<20), "rss-after-MB")
			b.ReportMetric(float64(afterGC)/(1<<20), "rss-after-gc-MB")
		}
	})
}

// arriving is a file's content as the sandbox client hands it to the host
// (sandbox.SnapshotFile.Content): one gRPC message of plugin.ChunkBytes at
// a time, each a fresh buffer as gRPC allocates one per message.
type arriving struct {
	left int
	fill byte
	buf  []byte
}

func (r *arriving) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.left == 0 {
			return 0, io.EOF
		}
		r.buf = bytes.Repeat([]byte{r.fill}, min(plugin.ChunkBytes, r.left))
		r.left -= len(r.buf)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
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

// procStatus reads a size field of /proc/self/status ("VmRSS", "VmHWM")
// in bytes (0 if unknown).
func procStatus(field string) uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// resetHWM sets the process's peak RSS (VmHWM) back to its current RSS, so
// that what follows is measured on its own; writing 5 to clear_refs does
// that (Linux 4.0+). It reports whether it could.
func resetHWM() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
