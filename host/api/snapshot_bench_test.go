package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

// BenchmarkTurnOneFileChanged: one chat turn that changes one file (a patch
// of src/counter.txt, then "say ok"), on a warm sandbox, for an app of one
// file and for an app of 500 more files of 10 kB (5 MB). The turn's cost
// should follow what changed, not the app's size: compare the two (SQLite,
// real plugins, as BenchmarkMockTurn).
func BenchmarkTurnOneFileChanged(b *testing.B) {
	for _, extra := range []int{0, 500} {
		b.Run(fmt.Sprintf("files=%d", extra+1), func(b *testing.B) {
			e := startEnvIn(b, "sqlite", testenv.PluginConfigDir(b, "mock", "local", "patch"))
			app := e.createAppWith(appFiles(extra))
			// The first turn provisions the chat's sandbox; the others
			// reuse it warm, each from the draft the last one made.
			first := e.mockTurn(app, "", counterPatch(0))
			require.Equal(b, "run.completed", first.terminal, first.payload)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				turn := e.mockTurn(app, first.chatID, counterPatch(i+1))
				lat = append(lat, time.Since(start))
				if turn.terminal != "run.completed" {
					b.Fatalf("turn %d: %s", i, turn.payload)
				}
			}
			b.StopTimer()
			// Every turn really changed the file (a failed patch would
			// leave it, and the turn would cost nothing).
			require.Equal(b, fmt.Sprintf("%d\n", b.N+1), e.fileAt(app, e.draft(app), "src/counter.txt"))
			reportPercentiles(b, lat, "")
		})
	}
}

// appFiles is src/counter.txt ("0") and n files of 10 kB in 20 folders.
func appFiles(n int) map[string]string {
	files := map[string]string{"src/counter.txt": "0\n"}
	for i := range n {
		var sb strings.Builder
		for j := range 10_000 {
			sb.WriteByte(byte('a' + (i+j)%26))
		}
		files[fmt.Sprintf("src/dir%d/file%d.ts", i%20, i)] = sb.String()
	}
	return files
}

// counterPatch is a mock script that patches src/counter.txt from i to
// i+1 and says ok.
func counterPatch(i int) string {
	input, _ := json.Marshal(map[string]string{"patch": fmt.Sprintf("--- a/src/counter.txt\n+++ b/src/counter.txt\n@@ -1 +1 @@\n-%d\n+%d\n", i, i+1)})
	return "tool coding_agent_apply_patch " + string(input) + "\nsay ok"
}

// createAppWith creates an app holding files (path → content).
func (e *env) createAppWith(files map[string]string) string {
	e.t.Helper()
	var app struct{ ID string }
	require.Equal(e.t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps", map[string]any{"name": "bench", "files": files}, &app))
	return app.ID
}
