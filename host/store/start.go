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
	req.tail = func(ctx context.Context, q sqlx.ExtContext, _ core.Envelope, _ *foldedInsert) (any, error) {
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

// startRunIn writes a run's start (see StartRun) with q: the chat session
// or its new turn count, the user's turn, the run and run.accepted.
func (s *Store) startRunIn(ctx context.Context, q sqlx.ExtContext, r *core.Run, turn *core.ChatTurn, env core.Envelope) error {
	nowMS := env.TS.UnixMilli()
	if turn != nil {
		if turn.NewSession {
			if _, err := q.ExecContext(ctx, q.Rebind(`INSERT INTO chat_sessions (id, tenant_id, app_id, user_id, title, created_at, updated_at, message_count)
 VALUES (?, ?, ?, ?, ?, ?, ?, 1)`), r.ChatSessionID, r.TenantID, r.AppID, r.UserID, turn.Title, nowMS, nowMS); err != nil {
				return translate(err)
			}
		} else if _, err := q.ExecContext(ctx, q.Rebind(`UPDATE chat_sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?`), nowMS, r.ChatSessionID); err != nil {
			return translate(err)
		}
		if _, err := q.ExecContext(ctx, q.Rebind(`INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at)
 VALUES (?, ?, ?, ?, ?, ?)`), turn.MessageID, r.ChatSessionID, r.ID, "user", turn.Content, nowMS); err != nil {
			return translate(err)
		}
	}
	if _, err := sqlx.NamedExecContext(ctx, q, insertRun, toRunRow(r)); err != nil {
		return translate(err)
	}
	var diag any
	if len(env.Diagnostics) > 0 {
		diag = string(env.Diagnostics)
	}
	_, err := q.ExecContext(ctx, q.Rebind(`INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts) VALUES (?, ?, ?, ?, ?, ?)`),
		env.RunID, env.Seq, string(env.Event), string(env.Payload), diag, nowMS)
	return translate(err)
}

// startRunAtOnce is StartRun's transaction on PostgreSQL as one statement
// (its writes as data-modifying WITH clauses): atomic all the same, in one
// round trip instead of six. Foreign keys are checked at the end of the
// statement, so the turn may name the session the same statement creates.
func (s *Store) startRunAtOnce(ctx context.Context, r *core.Run, turn *core.ChatTurn, env core.Envelope) error {
	var with []string
	var args []any
	if turn != nil {
		nowMS := env.TS.UnixMilli()
		if turn.NewSession {
			with = append(with, `INSERT INTO chat_sessions (id, tenant_id, app_id, user_id, title, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, ?, ?, ?, 1)`)
			args = append(args, r.ChatSessionID, r.TenantID, r.AppID, r.UserID, turn.Title, nowMS, nowMS)
		} else {
			with = append(with, `UPDATE chat_sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?`)
			args = append(args, nowMS, r.ChatSessionID)
		}
		with = append(with, `INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
		args = append(args, turn.MessageID, r.ChatSessionID, r.ID, "user", turn.Content, nowMS)
	}
	runInsert, runArgs, err := sqlx.Named(insertRun, toRunRow(r))
	if err != nil {
		return err
	}
	with = append(with, runInsert)
	args = append(args, runArgs...)
	var diag any
	if len(env.Diagnostics) > 0 {
		diag = string(env.Diagnostics)
	}
	var q strings.Builder
	for i, w := range with {
		if i == 0 {
			q.WriteString("WITH ")
		} else {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "w%d AS (%s)", i, w)
	}
	q.WriteString(` INSERT INTO run_events (run_id, seq, type, payload, diagnostics, ts) VALUES (?, ?, ?, ?, ?, ?)`)
	args = append(args, env.RunID, env.Seq, string(env.Event), string(env.Payload), diag, env.TS.UnixMilli())
	_, err = s.w.ExecContext(ctx, s.rebind(q.String()), args...)
	return translate(err)
}
