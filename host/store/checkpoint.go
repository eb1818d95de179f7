package store

import (
	"context"
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
// checkpoint takes no writer lock, so commits go on beside it; once it has
// copied everything and no reader still needs the old frames, the writer
// starts the WAL over at its next commit, which keeps the file small.
type checkpointer struct {
	db   *sqlx.DB
	stop chan struct{}
	done chan struct{}
}

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
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		db.Close()
		return nil, err
	}
	c := &checkpointer{db: db, stop: make(chan struct{}), done: make(chan struct{})}
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
			_, _ = c.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
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
