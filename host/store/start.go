package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// StartRun records a new run atomically with what must exist exactly when
// it does: its chat session when turn.NewSession, the user's turn (turn may
// be nil) and its first event, accepted, at seq 1 (on PostgreSQL one
// statement, on SQLite a savepoint in the event log's group commit). It
// returns that event as logged; listeners see it like any appended event.
// A duplicate id or idempotency key is ErrConflict and writes nothing.
func (s *Store) StartRun(ctx context.Context, r *core.Run, turn *core.ChatTurn, accepted core.EventInput) (core.Envelope, error) {
	if !json.Valid(r.Context) && len(r.Context) > 0 {
		return core.Envelope{}, core.Errf(core.CodeInvalidRequest, "context", "run context is not JSON")
	}
	s.claimNew(r)
	now := time.Now().UTC().Truncate(time.Millisecond)
	payload := accepted.Payload
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	env := core.Envelope{Event: accepted.Type, RunID: r.ID, AppID: r.AppID, Seq: 1, TS: now, Payload: payload, Diagnostics: accepted.Diagnostics}
	start := s.startRunInBatch
	if s.dialect == Postgres {
		start = s.startRunAtOnce
	}
	if err := start(ctx, r, turn, env); err != nil {
		return core.Envelope{}, err
	}
	s.lane(env.RunID).logged(env)
	return env, nil
}

// startOutcome is what a run's start in a batch (startReq) came to: refused
// is why its writes were left out while the rest of the batch committed.
type startOutcome struct{ refused error }

// startRunInBatch is StartRun on SQLite. There is one writer connection,
// and a run started in a transaction of its own waited for the event log's
// group commit to let go of it, then committed alone: with 20 chats taking
// turns that was most of the host's commits and their pages written. The
// start goes to the log's writer instead (startReq) and commits with
// whatever other runs' events are pending.
func (s *Store) startRunInBatch(ctx context.Context, r *core.Run, turn *core.ChatTurn, env core.Envelope) error {
	res, err := s.appendWait(ctx, s.startReq(r, turn, env))
	if err != nil {
		return err
	}
	out, _ := res.tail.(startOutcome)
	return out.refused
}

// startReq is a run's start as a request to the event log's writer: its
// writes (startRunIn) run in the writer's transaction inside a savepoint,
// so that a refusal (a duplicate id or idempotency key, an app deleted
// meanwhile) rolls back this run's writes alone and the batch's other
// writes still commit. A failure of the database itself (transientCause)
// fails the batch, which the writer tries again.
func (s *Store) startReq(r *core.Run, turn *core.ChatTurn, env core.Envelope) *appendReq {
	req := &appendReq{run: r}
	req.tail = func(ctx context.Context, q sqlx.ExtContext, _ core.Envelope) (any, error) {
		if _, err := q.ExecContext(ctx, `SAVEPOINT start_run`); err != nil {
			return nil, err
		}
		err := s.startRunIn(ctx, q, r, turn, env)
		if err == nil {
			_, err = q.ExecContext(ctx, `RELEASE start_run`)
			return startOutcome{}, err
		}
		if _, transient := transientCause(err); transient {
			return nil, err
		}
		if _, rerr := q.ExecContext(ctx, `ROLLBACK TO start_run`); rerr != nil {
			return nil, rerr
		}
		if _, rerr := q.ExecContext(ctx, `RELEASE start_run`); rerr != nil {
			return nil, rerr
		}
		if req.retried && errors.Is(err, ErrConflict) {
			// An earlier try of this batch may have committed with its
			// answer lost: then the run's id is taken by the run itself.
			if mine, lerr := s.logs(ctx, q, env); lerr != nil || mine {
				return startOutcome{}, lerr
			}
		}
		return startOutcome{refused: err}, nil
	}
	return req
}

// startWrite is one statement of a run's start and its ? arguments.
type startWrite struct {
	query string
	args  []any
}

// startWrites are the statements of a run's start, in order: the chat
// session (new, or one turn longer), the user's turn, the run, and last
// run.accepted. Both dialects write these: SQLite one after another
// (startRunIn), PostgreSQL as one statement (startRunAtOnce).
func startWrites(r *core.Run, turn *core.ChatTurn, env core.Envelope) []startWrite {
	nowMS := env.TS.UnixMilli()
	var ws []startWrite
	if turn != nil {
		if turn.NewSession {
			ws = append(ws, startWrite{`INSERT INTO chat_sessions (id, tenant_id, app_id, user_id, title, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, ?, ?, ?, 1)`,
				[]any{r.ChatSessionID, r.TenantID, r.AppID, r.UserID, turn.Title, nowMS, nowMS}})
		} else {
			ws = append(ws, startWrite{`UPDATE chat_sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?`,
				[]any{nowMS, r.ChatSessionID}})
		}
		ws = append(ws, startWrite{`INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{turn.MessageID, r.ChatSessionID, r.ID, "user", turn.Content, nowMS}})
	}
	ws = append(ws, startWrite{insertRunQuery, insertRunArgs(toRunRow(r))})
	var diag any
	if len(env.Diagnostics) > 0 {
		diag = string(env.Diagnostics)
	}
	return append(ws, startWrite{`INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts) VALUES (?, ?, ?, ?, ?, ?)`,
		[]any{env.RunID, env.Seq, string(env.Event), string(env.Payload), diag, nowMS}})
}

// startRunIn writes a run's start (startWrites) with q, one statement after
// another.
func (s *Store) startRunIn(ctx context.Context, q sqlx.ExtContext, r *core.Run, turn *core.ChatTurn, env core.Envelope) error {
	for _, w := range startWrites(r, turn, env) {
		if _, err := q.ExecContext(ctx, q.Rebind(w.query), w.args...); err != nil {
			return translate(err)
		}
	}
	return nil
}

// startRunAtOnce is StartRun's transaction on PostgreSQL as one statement
// (its writes as data-modifying WITH clauses, run.accepted's insert the
// statement itself): atomic all the same, in one round trip instead of
// six. Foreign keys are checked at the end of the statement, so the turn
// may name the session the same statement creates.
func (s *Store) startRunAtOnce(ctx context.Context, r *core.Run, turn *core.ChatTurn, env core.Envelope) error {
	ws := startWrites(r, turn, env)
	var q strings.Builder
	var args []any
	for i, w := range ws[:len(ws)-1] {
		if i == 0 {
			q.WriteString("WITH ")
		} else {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "w%d AS (%s)", i, w.query)
		args = append(args, w.args...)
	}
	last := ws[len(ws)-1]
	q.WriteString(" " + last.query)
	args = append(args, last.args...)
	_, err := s.w.ExecContext(ctx, s.rebind(q.String()), args...)
	return translate(err)
}
