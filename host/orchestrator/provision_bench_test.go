package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// app500Files is a 500-file, 5 MB app.
func app500Files() []sandbox.File {
	files := make([]sandbox.File, 500)
	for i := range files {
		data := make([]byte, 10_000)
		for j := range data {
			data[j] = byte('a' + (i+j)%26)
		}
		files[i] = sandbox.File{Path: fmt.Sprintf("src/dir%d/file%d.ts", i%20, i), Data: data}
	}
	return files
}

// benchProvision runs `say ok` on the 500-file app b.N times and reports the
// median sandbox_start (provisioning) of the runs; warm runs share one chat.
func benchProvision(b *testing.B, warm bool) {
	h := newHost(b, defaultConfigs(b), orchestrator.Options{SandboxReuse: true, SandboxTTL: time.Hour})
	files := app500Files()
	starts := make([]float64, 0, b.N)
	run := func(chat string) *core.Run {
		r, err := h.orch.Start(context.Background(), orchestrator.StartRequest{
			AppID: "app_bench", ChatSessionID: chat, BaseRevisionID: "r1", Prompt: "say ok", Engine: "mock", Sandbox: "local", Files: files,
		})
		if err != nil {
			b.Fatal(err)
		}
		return h.wait(b, r.ID)
	}
	if warm {
		run("warm") // the first run of the chat provisions it
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		chat := "warm"
		if !warm {
			chat = fmt.Sprintf("cold%d", i)
		}
		final := run(chat)
		if final.Status != core.RunCompleted {
			b.Fatalf("%s %s", final.ErrorCode, final.ErrorMessage)
		}
		var ctx struct {
			Timings map[string]float64 `json:"timing_metrics_ms"`
		}
		_ = json.Unmarshal(final.Context, &ctx)
		starts = append(starts, ctx.Timings["sandbox_start"])
	}
	b.StopTimer()
	sort.Float64s(starts)
	b.ReportMetric(starts[len(starts)/2], "sandbox_start-ms")
}

// BenchmarkProvisionCold: each run creates its sandbox from the 5 MB app.
func BenchmarkProvisionCold(b *testing.B) { benchProvision(b, false) }

// BenchmarkProvisionWarm: each run reuses its chat's sandbox, already
// holding the run's base files (nothing to refresh).
func BenchmarkProvisionWarm(b *testing.B) { benchProvision(b, true) }
