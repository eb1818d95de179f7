package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// EventsChannel is the PostgreSQL notification channel on which a commit
// of run events says "<run id> <newest seq>", once per run per commit.
// It is a wake-up hint for other hosts' streams; the log stays the truth.
const EventsChannel = "agenthost_events"

// writeShared is write on PostgreSQL, the database several hosts share.
// Each statement inserts the events of the runs this host still owns (the
// runs' rows are share-locked, so a takeover waits for it to commit and
// then sees its events), skips those of runs another host took over, and
// notifies EventsChannel with each run's newest seq: fence, insert and
// wake-up in one round trip. Runs it skipped are added to lost.
func (w *eventWriter) writeShared(ctx context.Context, batch []*appendReq, envs, events []core.Envelope, tails []any, withTail bool, lost map[string]bool) error {
	insert := func(q sqlx.QueryerContext) error {
		per := w.s.rowsPerInsert(6)
		for start := 0; start < len(events); start += per {
			chunk := events[start:min(start+per, len(events))]
			if err := w.s.insertFenced(ctx, q, chunk, lost); err != nil {
				return err
			}
		}
		return nil
	}
	if !withTail {
		return insert(w.s.w)
	}
	return w.s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		for i, r := range batch {
			if r.tail == nil || lost[r.run.ID] {
				continue
			}
			out, err := r.tail(ctx, tx, envs[i])
			if err != nil {
				return err
			}
			tails[i] = out
		}
		return nil
	})
}

// insertFenced writes chunk in one statement (see writeShared) and adds to
// lost every run of chunk that got nothing written.
func (s *Store) insertFenced(ctx context.Context, q sqlx.QueryerContext, chunk []core.Envelope, lost map[string]bool) error {
	var b strings.Builder
	b.Grow(400 + len(chunk)*60)
	b.WriteString(`WITH v (run_id, seq, type, payload, diagnostics, ts) AS (VALUES `)
	for i := range chunk {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?::text, ?::bigint, ?::text, ?::text, ?::text, ?::bigint)")
	}
	args := eventArgs(chunk)
	b.WriteString(`)`)
	from := `v`
	if s.owner != "" {
		b.WriteString(`, owned AS (SELECT id FROM runs WHERE id IN (SELECT run_id FROM v) AND owner = ? FOR SHARE)`)
		args = append(args, s.owner)
		from = `v WHERE run_id IN (SELECT id FROM owned)`
	}
	b.WriteString(`, ins AS (INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts)
 SELECT * FROM ` + from + ` RETURNING run_id, seq),
 newest AS (SELECT run_id, MAX(seq) AS seq FROM ins GROUP BY run_id)
 SELECT run_id, pg_notify('` + EventsChannel + `', run_id || ' ' || seq) IS NULL FROM newest`)
	rows, err := q.QueryxContext(ctx, s.rebind(b.String()), args...)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	written := map[string]bool{}
	for rows.Next() {
		var id string
		var ignored bool
		if err := rows.Scan(&id, &ignored); err != nil {
			return translate(err)
		}
		written[id] = true
	}
	if err := rows.Err(); err != nil {
		return translate(err)
	}
	for _, e := range chunk {
		if !written[e.RunID] {
			lost[e.RunID] = true
		}
	}
	if len(lost) > 0 && s.owner == "" {
		return fmt.Errorf("append events: %d of %d events were not written", len(chunk)-len(written), len(chunk))
	}
	return nil
}
