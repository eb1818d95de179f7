package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// EventsChannel is the PostgreSQL notification channel on which a commit
// of run events is announced, once per run per commit (while another host
// is registered), with the events when they are small (eventNotes). Other
// hosts' streams take them, or read the log after the newest seq; the log
// stays the truth.
const EventsChannel = "agenthost_events"

// writeShared is write on PostgreSQL, the database several hosts share.
// Each statement inserts the events of the runs this host still owns (the
// runs' rows are share-locked, so a takeover waits for it to commit and
// then sees its events), skips those of runs another host took over, and
// notifies EventsChannel with each run's newest seq when another host can
// hear it (notifyIfHeard): fence, insert and wake-up in one round trip.
// Runs it skipped are added to lost.
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
		return insert(w.s.lanes())
	}
	if slots, ok := w.changeSlots(batch, events); ok {
		return w.writeChanges(ctx, batch, slots, envs, events, tails, lost)
	}
	return txOn(ctx, w.s.lanes(), func(tx *sqlx.Tx) error {
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

// insertFenced writes chunk in one statement (see writeShared and
// fencedInsert) and adds to lost every run of chunk that got nothing
// written. Each run written gets one notification carrying its events
// (see eventNotes) when another host can hear it (notifyIfHeard).
func (s *Store) insertFenced(ctx context.Context, q sqlx.QueryerContext, chunk []core.Envelope, lost map[string]bool) error {
	ctes, args := s.fencedInsert(chunk, false)
	query := s.rebind(`WITH ` + ctes + `
 SELECT n.run_id, ` + s.notifyIfHeard(`n.note`) + ` IS NULL FROM n WHERE n.run_id IN (SELECT run_id FROM ins)`)
	rows, err := q.QueryxContext(ctx, query, args...)
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

// fencedInsert is the fenced insert of chunk as WITH clauses (without
// WITH) and their ? arguments: v, the events; n, each run's notification
// (eventNotes) with its newest seq; live, this host's row, share-locked;
// peers, whether another host is registered (notifyIfHeard); ins, the
// insert of the events whose runs this host still owns, returning their
// run_id. With notifyInline, ins itself sends each run's notification as
// it writes the run's newest event (writeChanges' statement selects what
// it changed instead).
//
// The rows go in as one array per column (unnest): the statement's text
// and plan do not grow with the batch, which a VALUES list made PostgreSQL
// parse and plan anew for every commit. The fence is the host's own row in
// hosts, share-locked for the statement: a takeover deletes that row in
// the transaction that moves the runs, so it waits for this commit, and a
// commit after it finds the row (or the run) gone and writes nothing.
func (s *Store) fencedInsert(chunk []core.Envelope, notifyInline bool) (string, []any) {
	cols := eventColumns(chunk)
	notes := eventNotes(s.owner, chunk)
	noteRuns, noteSeqs, noteTexts := make([]string, len(notes)), make([]int64, len(notes)), make([]string, len(notes))
	for i, n := range notes {
		noteRuns[i], noteSeqs[i], noteTexts[i] = n.run, n.seq, n.note
	}
	args := []any{pq.Array(cols.runs), pq.Array(cols.seqs), pq.Array(cols.types), pq.Array(cols.payloads), pq.Array(cols.diags), pq.Array(cols.ts),
		pq.Array(noteRuns), pq.Array(noteSeqs), pq.Array(noteTexts)}
	ctes := `v AS (SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::bigint[])
 AS v (run_id, seq, type, payload, diagnostics, ts)),
 n AS (SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[]) AS n (run_id, seq, note))`
	where := ``
	if s.owner != "" {
		// Each event's run is looked up by its key: a LATERAL subquery
		// with LIMIT stays a per-row index probe. Written as IN (SELECT
		// … id = ANY(…)) or a join, PostgreSQL may plan a scan of
		// runs, and keeps that plan for the prepared statement while the
		// table grows (seen: 21 ms per commit at 800 runs, and every
		// turn slower as a host's history grew).
		ctes += `, live AS (SELECT 1 FROM hosts WHERE lease_key = ? FOR KEY SHARE),
 peers AS (SELECT EXISTS (SELECT 1 FROM hosts WHERE lease_key <> ?) AS heard)`
		where = ` JOIN LATERAL (SELECT r.owner FROM runs r WHERE r.id = v.run_id LIMIT 1) o ON o.owner = ? WHERE EXISTS (SELECT 1 FROM live)`
		args = append(args, s.owner, s.owner, s.owner)
	}
	returning := `run_id`
	if notifyInline {
		returning += `, (SELECT ` + s.notifyIfHeard(`n.note`) + ` FROM n WHERE n.run_id = run_events.run_id AND n.seq = run_events.seq) IS NULL AS quiet`
	}
	ctes += `, ins AS (INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts) SELECT v.run_id, v.seq, v.type, v.payload, v.diagnostics, v.ts FROM v` + where + ` RETURNING ` + returning + `)`
	return ctes, args
}

// notifyIfHeard is the SQL expression that sends note on EventsChannel
// when another host can hear it: with a lease key, only while the hosts
// table holds another host (the peers clause of fencedInsert, read in the
// statement's own snapshot); without one, always.
//
// Why not always: PostgreSQL serialises every transaction that notifies on
// one database-wide lock, held until its commit is flushed to disk, so the
// event writer's lanes queued on it one commit at a time even when no
// other host listened. A host that joins makes the others notify from the
// statements that start after its row is committed, and waits out those
// that started before it (WaitOutOlderTransactions) before it serves
// anything: no commit it could miss is left.
func (s *Store) notifyIfHeard(note string) string {
	notify := `pg_notify('` + EventsChannel + `', ` + note + `)`
	if s.owner == "" {
		return notify
	}
	return `CASE WHEN (SELECT heard FROM peers) THEN ` + notify + ` END`
}

// eventCols are a batch of events as one slice per column.
type eventCols struct {
	runs, types, payloads []string
	diags                 []sql.NullString
	seqs, ts              []int64
}

func eventColumns(chunk []core.Envelope) eventCols {
	c := eventCols{runs: make([]string, len(chunk)), types: make([]string, len(chunk)), payloads: make([]string, len(chunk)),
		diags: make([]sql.NullString, len(chunk)), seqs: make([]int64, len(chunk)), ts: make([]int64, len(chunk))}
	for i, e := range chunk {
		c.runs[i], c.seqs[i], c.types[i], c.payloads[i], c.ts[i] = e.RunID, e.Seq, string(e.Event), string(e.Payload), e.TS.UnixMilli()
		if len(e.Diagnostics) > 0 {
			c.diags[i] = sql.NullString{String: string(e.Diagnostics), Valid: true}
		}
	}
	return c
}

// maxNote bounds a notification's payload. PostgreSQL takes up to 8000
// bytes, but notifications are hints and stay small: they share one queue
// with every listener, and a run's commit of a few deltas (the common case
// when a client waits for each) fits in this. Anything bigger goes as a
// bare hint, and other hosts read it from the log.
const maxNote = 1024

// runNote is the notification of one run's events in a commit, and the
// newest seq it announces.
type runNote struct {
	run, note string
	seq       int64
}

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
		notes[i] = runNote{run: run, note: note, seq: evs[len(evs)-1].Seq}
	}
	return notes
}

// parseEventNote reads a note of EventsChannel: who sent it, the run, its
// newest seq and the events it carries (nil for a bare hint). A note whose
// sender is self is not read further (ok false): this host published its
// own events when they committed.
func parseEventNote(payload, self string) (sender, runID string, seq int64, events []core.Envelope, ok bool) {
	sender, rest, found := strings.Cut(payload, "\n")
	if !found || (self != "" && sender == self) {
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
