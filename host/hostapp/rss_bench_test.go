package hostapp_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/require"
)

// pausedRuns is how many runs BenchmarkHostRSS leaves paused: enough that
// their share stands out of the noise of a Go heap that is collected and
// returned to the system only from time to time (hundreds of KB).
const pausedRuns = 100

// rssSettle is how long the host is left alone before its RSS is read, so
// the garbage of what it just did is collected and the Go runtime's
// background scavenger has begun returning it: the reading is what an
// operator would see a moment later, not the peak of the work.
const rssSettle = 2 * time.Second

// BenchmarkHostRSS starts the real `agenthost serve` (SQLite, the mock
// engine, the local sandbox, the patch toolpack) and reads its resident
// memory (VmRSS) idle, once it has served one turn, and again with
// pausedRuns runs paused on a permission request (the mock engine's
// `ask`): rss-idle-MB and rss-per-paused-run-KB, the host process alone
// (plugins are processes of their own). Each op is a fresh host.
func BenchmarkHostRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("reads VmRSS from Linux's /proc")
	}
	var idle, perRun float64
	for i := 0; i < b.N; i++ {
		idleB, afterB := hostRSS(b)
		idle += float64(idleB)
		perRun += float64(afterB-idleB) / pausedRuns
	}
	b.ReportMetric(idle/float64(b.N)/(1<<20), "rss-idle-MB")
	b.ReportMetric(perRun/float64(b.N)/(1<<10), "rss-per-paused-run-KB")
}

// hostRSS runs one host through the benchmark and returns its RSS idle and
// with the runs paused, in bytes.
func hostRSS(b *testing.B) (idle, paused int64) {
	dataDir := b.TempDir()
	h := startHostProc(b, []string{"AGENTHOST_DATA_DIR=" + dataDir, "DATABASE_URL=" + filepath.Join(dataDir, "agenthost.db"),
		"AGENTHOST_PLUGIN_DIR=" + binDir, "AGENTHOST_PLUGIN_CONFIG_DIR=" + testenv.PluginConfigDir(b, "mock", "local", "patch"),
		"AGENTHOST_BOOTSTRAP_TOKEN=kill-token", "AGENTHOST_LOG_LEVEL=error"})
	defer h.kill()
	var app, run struct{ ID string }
	require.Equal(b, http.StatusCreated, h.do("POST", "/admin/apps", map[string]any{"name": "rss", "files": map[string]string{"index.html": "<h1>hi</h1>\n"}}, &app))
	runs := "/admin/apps/" + app.ID + "/coding-agent/runs"
	require.Equal(b, http.StatusCreated, h.do("POST", runs, map[string]any{"prompt": "say ok"}, &run))
	h.waitRun(app.ID, run.ID, func(r killRun) bool { return r.Status == "completed" })

	time.Sleep(rssSettle)
	idle = vmRSS(b, h.cmd.Process.Pid)
	ids := make([]string, pausedRuns)
	for i := range ids {
		require.Equal(b, http.StatusCreated, h.do("POST", runs, map[string]any{"prompt": fmt.Sprintf("ask deploy Deploy change %d?", i)}, &run))
		ids[i] = run.ID
	}
	for _, id := range ids {
		h.waitRun(app.ID, id, func(r killRun) bool { return r.Status == "paused" })
	}
	time.Sleep(rssSettle)
	return idle, vmRSS(b, h.cmd.Process.Pid)
}

// vmRSS reads a process's resident set size from /proc/<pid>/status.
func vmRSS(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(b, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
