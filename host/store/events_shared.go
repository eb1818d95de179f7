package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// EventsChannel is the PostgreSQL notification channel on which a commit
// of run events is announced, once per run per commit, with the events
// when they are small (eventNotes). Other hosts' streams take them, or
// read the log after the newest seq; the log stays the truth.
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
// lost every run of chunk that got nothing written. Each run written gets
// one notification carrying its events (see eventNote).
func (s *Store) insertFenced(ctx context.Context, q sqlx.QueryerContext, chunk []core.Envelope, lost map[string]bool) error {
	var b strings.Builder
	b.Grow(500 + len(chunk)*60)
	b.WriteString(`WITH v (run_id, seq, type, payload, diagnostics, ts) AS (VALUES `)
	for i := range chunk {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?::text, ?::bigint, ?::text, ?::text, ?::text, ?::bigint)")
	}
	args := eventArgs(chunk)
	notes := eventNotes(s.owner, chunk)
	b.WriteString(`), n (run_id, note) AS (VALUES `)
	for i, n := range notes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?::text, ?::text)")
		args = append(args, n.run, n.note)
	}
	b.WriteString(`)`)
	from := `v`
	if s.owner != "" {
		b.WriteString(`, owned AS (SELECT id FROM runs WHERE id IN (SELECT run_id FROM v) AND owner = ? FOR SHARE)`)
		args = append(args, s.owner)
		from = `v WHERE run_id IN (SELECT id FROM owned)`
	}
	b.WriteString(`, ins AS (INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts)
 SELECT * FROM ` + from + ` RETURNING run_id)
 SELECT n.run_id, pg_notify('` + EventsChannel + `', n.note) IS NULL FROM n WHERE n.run_id IN (SELECT run_id FROM ins)`)
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

// maxNote bounds a notification's payload (PostgreSQL refuses 8000 bytes
// and more).
const maxNote = 7900

// runNote is the notification of one run's events in a commit.
type runNote struct{ run, note string }

// eventNotes are the notifications of chunk's events, one per run, in
// order of first appearance. A note reads
//
//	<sender's lease key>\n<run id> <newest seq>[\n<the events as a JSON array>]
//
// with the events when they fit (maxNote): a host streaming the run then
// needs no read of the log for them. Without them it is a hint to read the
// log after the seq it has.
func eventNotes(sender string, chunk []core.Envelope) []runNote {
	var order []string
	byRun := map[string][]core.Envelope{}
	for _, e := range chunk {
		if _, ok := byRun[e.RunID]; !ok {
			order = append(order, e.RunID)
		}
		byRun[e.RunID] = append(byRun[e.RunID], e)
	}
	notes := make([]runNote, len(order))
	for i, run := range order {
		evs := byRun[run]
		head := sender + "\n" + run + " " + strconv.FormatInt(evs[len(evs)-1].Seq, 10)
		note := head
		if body, err := json.Marshal(evs); err == nil && len(head)+1+len(body) <= maxNote {
			note = head + "\n" + string(body)
		}
		notes[i] = runNote{run: run, note: note}
	}
	return notes
}

// parseEventNote reads a note of EventsChannel: who sent it, the run, its
// newest seq and the events it carries (nil for a bare hint).
func parseEventNote(payload string) (sender, runID string, seq int64, events []core.Envelope, ok bool) {
	sender, rest, found := strings.Cut(payload, "\n")
	if !found {
		return "", "", 0, nil, false
	}
	line, body, _ := strings.Cut(rest, "\n")
	runID, seqText, found := strings.Cut(line, " ")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !found || err != nil {
		return "", "", 0, nil, false
	}
	if body != "" && json.Unmarshal([]byte(body), &events) != nil {
		events = nil // read the log instead
	}
	return sender, runID, seq, events, true
}
