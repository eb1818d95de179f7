package hostapp_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// smallFilesystem mounts a tmpfs of size bytes for the test (root only;
// CI runs as root and sets AGENTHOST_REQUIRE_ROOT, so there it must work).
func smallFilesystem(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("AGENTHOST_REQUIRE_ROOT") != "" {
			t.Fatalf("mount a small tmpfs: %v: %s", err, out)
		}
		t.Skipf("cannot mount a small tmpfs here (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillUp writes path until the filesystem has no space left.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling the disk: %v", err)
			break
		}
	}
	// The last bytes, one at a time: not even a page is left.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	_ = f.Sync()
}

// TestSQLiteFullDiskRunsFinishOnceFreed: the SQLite database lives on a
// small filesystem that fills up while runs stream. The host says the
// database takes no writes (/readyz 503 "disk full", new runs refused with
// STORE_UNAVAILABLE) and keeps serving reads; once space is freed the runs
// finish, complete and gap-free, and the database passes PRAGMA
// integrity_check.
func TestSQLiteFullDiskRunsFinishOnceFreed(t *testing.T) {
	t.Parallel()
	small := smallFilesystem(t, "16m")
	dbPath := filepath.Join(small, "agenthost.db")
	h := startHostProc(t, []string{"AGENTHOST_DATA_DIR=" + t.TempDir(), "DATABASE_URL=" + dbPath, "AGENTHOST_PLUGIN_DIR=" + binDir,
		"AGENTHOST_PLUGIN_CONFIG_DIR=" + testenv.PluginConfigDir(t, "mock", "local"), "AGENTHOST_BOOTSTRAP_TOKEN=kill-token",
		"AGENTHOST_STORE_OUTAGE_WINDOW_MS=600000"})
	appID := createApp(t, h, "full")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	load := startOutageLoad(ctx, t, h, appID, 300)
	filler := filepath.Join(small, "filler")
	fillUp(t, filler)

	var ready struct {
		Database string `json:"database"`
		Writes   struct {
			Cause string `json:"cause"`
		} `json:"database_writes"`
	}
	require.Eventually(t, func() bool {
		return h.do("GET", "/readyz", nil, &ready) == http.StatusServiceUnavailable
	}, time.Minute, 50*time.Millisecond, "readyz says the database takes no writes")
	assert.Contains(t, ready.Writes.Cause, "disk full")
	// Reads go on.
	runPath := "/admin/apps/" + appID + "/coding-agent/runs/"
	var run killRun
	require.Equal(t, http.StatusOK, h.do("GET", runPath+load.ids[0], nil, &run))
	assert.Equal(t, "running", run.Status)
	var refused struct {
		Detail struct{ Code string } `json:"detail"`
	}
	code, header := h.post(runPath, `{"engine":"mock","prompt":"say hi"}`, &refused)
	require.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "STORE_UNAVAILABLE", refused.Detail.Code)
	assert.NotEmpty(t, header.Get("Retry-After"))

	require.NoError(t, os.Remove(filler))
	for i, events := range load.ended(t, h) {
		id, term := load.ids[i], events[len(events)-1]
		require.Equal(t, "run.completed", term.Type, "run %s: %s", id, term.Payload)
		require.Equal(t, 300*5+2, countType(events, "assistant.delta"), "run %s: every delta, once", id)
	}
	require.Eventually(t, func() bool { return h.do("GET", "/readyz", nil, nil) == http.StatusOK }, 30*time.Second, 50*time.Millisecond)

	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var verdict string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&verdict))
	assert.Equal(t, "ok", verdict)
}
