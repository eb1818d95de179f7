package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckpointerCopiesTheWAL: on SQLite the writer no longer checkpoints
// in its commits, and the checkpointer copies what they wrote into the
// database file on its own. The log written here (about 1 MB) is under the
// 1,000 pages at which SQLite's own checkpoint would run, so without the
// checkpointer the database file would not grow until the store closed.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	var auto int
	require.NoError(t, s.w.GetContext(ctx, &auto, `PRAGMA wal_autocheckpoint`))
	assert.Equal(t, 0, auto, "the writer's commits do not checkpoint")

	seedApp(t, s)
	r := newRun("run_ckpt")
	_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)
	before := fileSize(t, s.path)
	payload := []byte(`{"text":"` + strings.Repeat("x", 2000) + `"}`)
	for i := 0; i < 500; i++ {
		_, err := s.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: payload})
		require.NoError(t, err)
	}
	assert.Eventually(t, func() bool { return fileSize(t, s.path) > before+500_000 }, 30*time.Second, 20*time.Millisecond,
		"the database file never took the log's pages (it stayed at %d bytes)", before)
	evs, err := s.ListEvents(ctx, r.ID, r.AppID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 501)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}
