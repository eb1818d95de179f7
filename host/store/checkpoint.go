package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// checkpointEvery is how often the SQLite checkpointer copies the WAL's
// committed pages into the database file.
const checkpointEvery = 250 * time.Millisecond

// checkpointer copies SQLite's write-ahead log into the database file on a
// connection of its own, so that the writer never does it. SQLite's
// automatic checkpoint runs inside the commit that fills the WAL to 1,000
// pages: that commit then waits for the copy and an fsync of the database
// file, and every event queued behind it waits too (seen: deltas of 50
// paced runs delivered up to 8 ms late, a few times a second). A PASSIVE
// checkpoint takes no writer lock, so commits go on beside it.
//
// The writer starts the WAL over (writes from its beginning again) only
// when its transaction begins with every frame already copied. Under a
// steady load that never happens by itself: the writer commits several
// times while a checkpoint runs, so by the time one ends there are new
// frames (seen: 400 MB of WAL after 9 s of 20 chat sessions, growing on
// for as long as the load lasted). Once the log holds walRestartFrames,
// the checkpointer therefore copies the rest on the writer's own
// connection, between two of its transactions: nothing is appended while
// it runs, and the writer's next transaction starts the log over. That
// copy holds the writer up, but only for the frames written since the
// background checkpoint a moment before and its two fsyncs: 3–10 ms on a
// 2-core test machine, two or three times a second under 20 busy chat
// sessions, and never while the log stays under walRestartFrames.
type checkpointer struct {
	db     *sqlx.DB
	writer *sqlx.DB
	stop   chan struct{}
	done   chan struct{}
}

// walRestartFrames is the size of the WAL, in frames (pages), past which
// the checkpointer finishes a checkpoint on the writer's connection so that
// the log starts over: 16 MiB of 4 KiB pages. Larger, and the log's index
// grows and every read searches more of it; smaller, and the writer waits
// for the copy more often.
const walRestartFrames = 4096

// walSizeLimit is the size, in bytes, the WAL file is cut back to when the
// log starts over (SQLite's journal_size_limit), should one large
// transaction have grown it past that.
const walSizeLimit = 4 * walRestartFrames * 4096

// startCheckpointer turns off the writer's automatic checkpoint and starts
// copying the WAL every checkpointEvery (SQLite only; nil otherwise).
// Should the writer's connection be replaced (after an error), the new
// one checkpoints automatically again: slower commits now and then, never
// an unbounded WAL.
func (s *Store) startCheckpointer(ctx context.Context) (*checkpointer, error) {
	if s.dialect != SQLite {
		return nil, nil
	}
	db, err := openCached(SQLite, s.connStr)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, pragma := range []string{`PRAGMA wal_autocheckpoint = 0`, fmt.Sprintf(`PRAGMA journal_size_limit = %d`, walSizeLimit)} {
		if _, err := s.w.ExecContext(ctx, pragma); err != nil {
			db.Close()
			return nil, err
		}
	}
	c := &checkpointer{db: db, writer: s.w, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			// A failure (a full disk, a reader holding the file) is
			// tried again at the next tick; the WAL keeps every commit
			// meanwhile.
			logFrames, err := checkpoint(context.Background(), c.db, "PASSIVE")
			if err == nil && logFrames >= walRestartFrames {
				// Not done (a reader stayed on the log past
				// restartWait): the next tick tries again.
				_ = c.restart()
			}
		}
	}
}

// restartWait is how long the checkpoint on the writer's connection waits
// for readers still on the log's frames before it gives up until the next
// tick. The writer waits that long too, at worst.
const restartWait = 20 * time.Millisecond

// restart runs a RESTART checkpoint on the writer's connection: it copies
// the frames written since the background checkpoint, then waits (at most
// restartWait) until no reader is on the log's frames, so that the
// writer's next transaction starts the log over. The connection waits
// sqliteBusyTimeout for locks again afterwards.
func (c *checkpointer) restart() error {
	ctx := context.Background()
	conn, err := c.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, restartWait.Milliseconds())); err != nil {
		return err
	}
	_, err = checkpoint(ctx, conn, "RESTART")
	if _, rerr := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, sqliteBusyTimeout.Milliseconds())); rerr != nil {
		// A writer that gave up on locks after restartWait would fail
		// commits a reader merely delayed: the connection must go.
		return errors.Join(err, rerr, conn.Raw(func(any) error { return driver.ErrBadConn }))
	}
	return err
}

// checkpoint runs a checkpoint of mode (PASSIVE or RESTART) on q's
// connection and returns the number of frames in the WAL.
func checkpoint(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, mode string) (logFrames int, err error) {
	var busy, copied int
	err = q.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &logFrames, &copied)
	return logFrames, err
}

// close stops the checkpointer. What the WAL still holds stays there,
// read from it until the next store's checkpointer copies it.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	close(c.stop)
	<-c.done
	return c.db.Close()
}
