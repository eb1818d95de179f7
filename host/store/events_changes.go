package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// runChange is a run's status change in the run's order (TransitionInOrder,
// FinishRun) as data rather than as a statement of its own, so that on
// PostgreSQL the event writer can write a whole batch (its events, every
// run's change, and the answers of the chats whose runs end) as one
// statement: writeChanges.
type runChange struct {
	// from are the states the change is allowed from.
	from []core.RunStatus
	// answer is the assistant's chat turn of a run that ends in a chat.
	// It is written, and its session touched, when the run's events are,
	// whether or not the change itself was allowed (as in the tail's
	// transaction).
	answer *core.ChatTurn
	// outcome is the request's result from what was written: the run as
	// the change wrote it, or, when it wrote nothing, why (a refusal, see
	// refusal). q reads the database.
	outcome func(ctx context.Context, q sqlx.QueryerContext, updated *core.Run, refused error) (any, error)
}

// runSlot is one run's changes in a batch that writeChanges writes, by
// their index in the batch: one, or two (second ≥ 0), which is a fast
// run's start and end landing in one batch.
type runSlot struct{ first, second int }

// changes is how many changes the slot holds.
func (sl runSlot) changes() int {
	if sl.second >= 0 {
		return 2
	}
	return 1
}

// changeSlots tells whether the batch can be written as one statement
// (writeChanges), and its runs' changes in order: every request with a
// tail is a runChange, no run changes more than twice and no chat gets
// two answers (a statement writes a row once; see changesStatement for
// how a run's two changes are written), and the events fit one insert.
// A chat turn's batches are like this: status changes and ends of several
// runs, with the events before them. Anything else goes in a transaction.
func (w *eventWriter) changeSlots(batch []*appendReq, events []core.Envelope) ([]runSlot, bool) {
	if len(events) > w.s.rowsPerInsert(6) {
		return nil, false
	}
	var slots []runSlot
	at, chats := map[string]int{}, map[string]bool{}
	for i, r := range batch {
		if r.tail == nil {
			continue
		}
		if r.change == nil {
			return nil, false
		}
		if r.change.answer != nil {
			if chats[r.run.ChatSessionID] {
				return nil, false
			}
			chats[r.run.ChatSessionID] = true
		}
		j, seen := at[r.run.ID]
		switch {
		case !seen:
			at[r.run.ID] = len(slots)
			slots = append(slots, runSlot{first: i, second: -1})
		case slots[j].second < 0:
			slots[j].second = i
		default:
			return nil, false
		}
	}
	// Runs with one change first, then those with two: the statement's
	// text depends only on how many there are of each (see
	// changesStatement), so a busy host has few texts to prepare.
	slices.SortStableFunc(slots, func(a, b runSlot) int { return cmp.Compare(a.changes(), b.changes()) })
	return slots, true
}

// writeChanges writes a batch that changeSlots accepts in one statement
// with no transaction around it: the events' fenced insert (fencedInsert),
// each run's changes as writeShared's transaction would make them (fenced
// by the run's owner; for a run with events in the batch, only if they
// were written), and the answers of the runs that end. One round trip
// instead of BEGIN, the insert, one statement per change and COMMIT,
// during which the runs' rows stay locked and the lane waits: that was
// half of a busy PostgreSQL host's batches. Runs whose events the fence
// left out are added to lost, and their changes say nothing (nothing of
// them was written); every other change gets its outcome.
func (w *eventWriter) writeChanges(ctx context.Context, batch []*appendReq, slots []runSlot, envs, events []core.Envelope, tails []any, lost map[string]bool) error {
	s := w.s
	logged := map[string]bool{}
	for _, e := range events {
		logged[e.RunID] = true
	}
	query, args := s.changesStatement(batch, slots, envs, events, logged)
	db := s.lanes()
	changed, written, err := scanChanges(ctx, db, query, args)
	if err != nil {
		return err
	}
	for run := range logged {
		if !written[run] {
			lost[run] = true
		}
	}
	if len(lost) > 0 && s.owner == "" {
		return fmt.Errorf("append events: the events of %d of %d runs were not written", len(lost), len(logged))
	}
	outcome := func(i int, wrote bool, owner string) error {
		r := batch[i]
		var updated *core.Run
		var refused error
		if wrote {
			// As transitionRunWith: the row is what the statement wrote,
			// and only the owner can differ from it.
			row := toRunRow(r.run)
			row.Owner = owner
			updated = row.toRun()
		} else if refused = s.whyUnchanged(ctx, db, r.run); !refusal(refused) {
			return refused
		}
		out, err := r.change.outcome(ctx, db, updated, refused)
		tails[i] = out
		return err
	}
	for _, sl := range slots {
		r := batch[sl.first]
		if lost[r.run.ID] {
			continue
		}
		got, ok := changed[r.run.ID]
		if err := outcome(sl.first, ok && got.branch == 1, got.owner); err != nil {
			return err
		}
		if sl.second < 0 {
			continue
		}
		// The second change wrote when its own branch did, or when the
		// first did and the second follows from it (chained).
		second := ok && (got.branch == 2 || chained(batch[sl.first], batch[sl.second]))
		if err := outcome(sl.second, second, got.owner); err != nil {
			return err
		}
	}
	w.folded.Add(1)
	return nil
}

// chained tells whether a run's second change in a batch is allowed from
// the state its first change writes.
func chained(first, second *appendReq) bool {
	return slices.Contains(second.change.from, first.run.Status)
}

// runChanged is what a changesStatement did to a run: which of its
// branches wrote (see changesStatement), and the run's owner.
type runChanged struct {
	branch int
	owner  string
}

// scanChanges runs a changesStatement: the runs it changed, and the runs
// whose events it wrote.
func scanChanges(ctx context.Context, q sqlx.QueryerContext, query string, args []any) (changed map[string]runChanged, written map[string]bool, err error) {
	rows, err := q.QueryxContext(ctx, query, args...)
	if err != nil {
		return nil, nil, translate(err)
	}
	defer rows.Close()
	changed, written = map[string]runChanged{}, map[string]bool{}
	for rows.Next() {
		var branch int
		var id, owner string
		if err := rows.Scan(&branch, &id, &owner); err != nil {
			return nil, nil, translate(err)
		}
		if branch == 0 {
			written[id] = true
		} else {
			changed[id] = runChanged{branch: branch, owner: owner}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, translate(err)
	}
	return changed, written, nil
}

// changesStatement is writeChanges' statement and its arguments. Each
// change is a WITH clause of its own that finds its run by key, as
// TransitionRun's UPDATE does (an UPDATE … FROM a join with unnest'ed
// arrays was planned, while the tables were new and small, as a hash join
// over a scan of every run, and PostgreSQL kept that plan as the tables
// grew: 10 ms a commit). A clause's text does not depend on what it holds
// (its allowed states are one array, whether its run has events in the
// batch and whether it has an answer are arguments), so the statement is
// one text per shape of batch (see the padding below), and each
// connection prepares it once.
//
// A run that changes twice (first, then second) cannot be two UPDATEs of
// its row that both write: one statement writes a row once. It gets two
// clauses that exclude each other, on the state the statement reads:
// branch 1, from first's states, writes second's row when second is
// allowed from first's new state (chained) and first's otherwise; branch
// 2, from second's states that are not first's, writes second's row
// (first refused). That is what the two changes did one after the other.
//
// It returns (branch, run, owner) for each run changed and (0, run, "")
// for each run whose events were written.
func (s *Store) changesStatement(batch []*appendReq, slots []runSlot, envs, events []core.Envelope, logged map[string]bool) (string, []any) {
	var with strings.Builder
	var args []any
	if len(events) > 0 {
		ctes, insArgs := s.fencedInsert(events, true)
		with.WriteString(ctes)
		args = insArgs
	}
	var result []string
	// update writes r from the states from; a run's second change (second)
	// only from states that are not notFrom.
	update := func(name string, r *core.Run, from []core.RunStatus, second bool, notFrom []core.RunStatus) {
		if with.Len() > 0 {
			with.WriteString(",\n ")
		}
		row := toRunRow(r)
		with.WriteString(name + ` AS (UPDATE runs SET ` + runChangeSet + ` WHERE id = ? AND status = ANY (?::text[])`)
		args = append(append(args, row.changeArgs()...), row.ID, statusArray(from))
		if second {
			with.WriteString(` AND NOT status = ANY (?::text[])`)
			args = append(args, statusArray(notFrom))
		}
		if s.fenced() {
			with.WriteString(` AND owner = ?`)
			args = append(args, s.owner)
		}
		if len(events) > 0 {
			// A run with events in the batch changes only if they were
			// written (the fence let them in).
			with.WriteString(` AND (NOT ?::bool OR EXISTS (SELECT 1 FROM ins WHERE ins.run_id = runs.id))`)
			args = append(args, logged[r.ID])
		}
		with.WriteString(` RETURNING id, owner)`)
	}
	answers := 0
	// answer writes turn as run's chat answer, made at; with turn nil the
	// clauses are there and write nothing.
	answer := func(r *core.Run, turn *core.ChatTurn, at int64) {
		if len(events) == 0 {
			return // a run's end has its terminal event: no answer here
		}
		// The answer's clauses are there for every change, and write
		// only when it has one: the text stays the same.
		has := turn != nil
		if turn == nil {
			turn = &core.ChatTurn{}
		}
		n := strconv.Itoa(answers)
		answers++
		with.WriteString(`,
 message` + n + ` AS (INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at)
 SELECT ?::text, ?::text, ?::text, 'assistant', ?::text, ?::bigint WHERE ?::bool AND EXISTS (SELECT 1 FROM ins WHERE ins.run_id = ?::text)
 RETURNING chat_session_id),
 session` + n + ` AS (UPDATE chat_sessions SET updated_at = ?, message_count = message_count + 1
 WHERE id = (SELECT chat_session_id FROM message` + n + `))`)
		args = append(args, turn.MessageID, r.ChatSessionID, r.ID, turn.Content, at, has, r.ID, at)
	}
	answerOf := func(i int) { answer(batch[i].run, batch[i].change.answer, envs[i].TS.UnixMilli()) }
	// Padding: clauses for a run that is not there, which write nothing.
	// The counts of runs changing once and twice are rounded up to a power
	// of two, so a busy host has few statement texts to prepare and plan
	// on each connection (PostgreSQL plans a prepared statement afresh for
	// its first five runs), and they stay within each connection's cache
	// of statements: 20 busy chats made 53 texts in 4,000 turns, 28 with
	// padding.
	none := &core.Run{}
	singles := 0
	for _, sl := range slots {
		if sl.second < 0 {
			singles++
		}
	}
	k := 0
	next := func() string { n := strconv.Itoa(k); k++; return n }
	single := func(r *core.Run, from []core.RunStatus) {
		n := next()
		update("change"+n, r, from, false, nil)
		result = append(result, `SELECT 1, id, owner FROM change`+n)
	}
	pair := func(first, second *core.Run, fromFirst, fromSecond []core.RunStatus) {
		n := next()
		update("change"+n, first, fromFirst, false, nil)
		update("change"+n+"b", second, fromSecond, true, fromFirst)
		result = append(result, `SELECT 1, id, owner FROM change`+n, `SELECT 2, id, owner FROM change`+n+`b`)
	}
	for _, sl := range slots[:singles] {
		single(batch[sl.first].run, batch[sl.first].change.from)
		answerOf(sl.first)
	}
	for range roundUp(singles) - singles {
		single(none, nil)
		answer(none, nil, 0)
	}
	for _, sl := range slots[singles:] {
		first, second := batch[sl.first], batch[sl.second]
		written := first.run
		if chained(first, second) {
			written = second.run
		}
		pair(written, second.run, first.change.from, second.change.from)
		answerOf(sl.first)
		answerOf(sl.second)
	}
	for range roundUp(len(slots)-singles) - (len(slots) - singles) {
		pair(none, none, nil, nil)
		answer(none, nil, 0)
		answer(none, nil, 0)
	}
	if len(events) > 0 {
		result = append(result, `SELECT 0, run_id, '' FROM ins GROUP BY run_id`)
	}
	return s.rebind(`WITH ` + with.String() + `
 ` + strings.Join(result, " UNION ALL ")), args
}

// roundUp is n rounded up to a power of two (0 stays 0).
func roundUp(n int) int {
	if n == 0 {
		return 0
	}
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// statusArray is states as a PostgreSQL text[] argument.
func statusArray(states []core.RunStatus) any {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return pq.Array(out)
}
