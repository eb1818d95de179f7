package store

import (
	"context"
	"encoding/binary"
	"io"
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

// TestWALStartsOverUnderSteadyLoad: with a writer that never pauses and a
// reader that never stops, the log still starts over once it passes
// walRestartFrames (its header's checkpoint sequence moves on), instead of
// growing for as long as the load lasts. Without the checkpoint on the
// writer's connection, the background checkpoint never catches up with a
// writer this busy and the log grows past the size this test allows.
func TestWALStartsOverUnderSteadyLoad(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	seedApp(t, s)
	r := newRun("run_walrestart")
	_, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)
	first := walSequence(t, s.path)

	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			if _, err := s.GetRun(ctx, r.ID); err != nil {
				readerDone <- err
				return
			}
		}
	}()
	// Each event takes about four pages of the log.
	payload := []byte(`{"text":"` + strings.Repeat("x", 14000) + `"}`)
	// Enough for the log to reach walRestartFrames sixteen times over
	// (it starts over after two to three times, on a 2-core machine).
	const most = 16 * walRestartFrames / 4
	written := 0
	for ; written < most && walSequence(t, s.path) == first; written++ {
		_, err := s.Append(ctx, r, core.EventInput{Type: core.EventAssistantDelta, Payload: payload})
		require.NoError(t, err)
	}
	close(stop)
	require.NoError(t, <-readerDone)
	require.NotEqual(t, first, walSequence(t, s.path), "the log never started over in %d events of about four pages each", written)
	t.Logf("the log started over after %d events", written)
	assert.LessOrEqual(t, fileSize(t, s.path+"-wal"), int64(walSizeLimit), "the log's file was not cut back to its limit")
	var logged int
	require.NoError(t, s.r.GetContext(ctx, &logged, `SELECT COUNT(*) FROM run_events WHERE run_id = ?`, r.ID))
	assert.Equal(t, written+1, logged, "every event committed before and after the log started over is there")
}

// walSequence is the checkpoint sequence in the header of the database's
// WAL, which SQLite moves on each time the log starts over.
func walSequence(t *testing.T, dbPath string) uint32 {
	t.Helper()
	f, err := os.Open(dbPath + "-wal")
	require.NoError(t, err)
	defer f.Close()
	var header [32]byte
	_, err = io.ReadFull(f, header[:])
	require.NoError(t, err, "the WAL has no header yet")
	return binary.BigEndian.Uint32(header[12:16])
}
