package store

import (
	"context"
	"errors"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// FinishRun ends a run in one transaction: its terminal event (logged
// after every event queued for the run before it, with the next seq), the
// assistant's chat turn when turn is not nil (in the run's chat session),
// and its final row written as TransitionRun writes it, only from one of
// the from states. A client that sees the terminal event therefore finds
// the run finished and its turn recorded, and a host that dies before the
// commit leaves none of the three. A refused transition (the stored run
// was in another state) does not undo the event: the error says so, and
// the event is returned as logged.
func (s *Store) FinishRun(ctx context.Context, r *core.Run, from []core.RunStatus, terminal core.EventInput, turn *core.ChatTurn) (core.Envelope, *core.Run, error) {
	res, err := s.appendWait(ctx, s.finishReq(r, from, terminal, turn))
	if err != nil {
		return core.Envelope{}, nil, err
	}
	f, _ := res.tail.(finished)
	return res.env, f.run, f.refused
}

// finished is what a run's end (finishReq) came to: the run as written,
// or why its change was refused.
type finished struct {
	run     *core.Run
	refused error
}

// finishReq is FinishRun's request to the event log's writer.
func (s *Store) finishReq(r *core.Run, from []core.RunStatus, terminal core.EventInput, turn *core.ChatTurn) *appendReq {
	outcome := func(_ context.Context, _ sqlx.QueryerContext, updated *core.Run, refused error) (any, error) {
		if refused != nil {
			return finished{refused: refused}, nil
		}
		return finished{run: updated}, nil
	}
	if r.ChatSessionID == "" {
		turn = nil
	}
	req := &appendReq{run: r, ev: terminal, change: &runChange{from: from, answer: turn, outcome: outcome}}
	req.tail = func(ctx context.Context, q sqlx.ExtContext, env core.Envelope) (any, error) {
		var with string
		var withArgs []any
		if turn != nil {
			now := env.TS.UnixMilli()
			withArgs = []any{turn.MessageID, r.ChatSessionID, r.ID, "assistant", turn.Content, now, now, r.ChatSessionID}
			if s.dialect == Postgres {
				// One statement with the run's change: every round trip
				// inside the log's transaction holds up the whole batch.
				with = `WITH message AS (` + insertAssistantMessage + `), session AS (` + touchChatSession + `) `
			} else {
				if _, err := q.ExecContext(ctx, q.Rebind(insertAssistantMessage), withArgs[:6]...); err != nil {
					return nil, translate(err)
				}
				if _, err := q.ExecContext(ctx, q.Rebind(touchChatSession), withArgs[6:]...); err != nil {
					return nil, translate(err)
				}
				with, withArgs = "", nil
			}
		}
		updated, err := s.transitionRunWith(ctx, q, r, from, with, withArgs)
		if err != nil && !refusal(err) {
			return nil, err
		}
		return outcome(ctx, q, updated, err)
	}
	req.reread = func(ctx context.Context) (any, error) {
		stored, err := s.GetRun(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		if stored.Status != r.Status {
			return finished{refused: core.Errf(core.CodeInvalidRunTransition, "", "run %s is %s", r.ID, stored.Status)}, nil
		}
		return finished{run: stored}, nil
	}
	return req
}

// TransitionInOrder is TransitionRun written in the run's order on the event
// log: after every event queued for the run before it, in the same
// transaction as those still pending, so a status change and the events
// around it cost one commit rather than two.
func (s *Store) TransitionInOrder(ctx context.Context, r *core.Run, from []core.RunStatus) (*core.Run, error) {
	req := s.transitionReq(r, from)
	res, err := s.appendWait(ctx, req)
	if err != nil {
		return nil, err
	}
	return transitionOutcome(res)
}

// EnqueueTransition is TransitionInOrder without waiting for the commit:
// the status change joins the run's queued events (and the ones queued
// after it) in the log's next transaction, and done is called with its
// outcome from the log's writer once that transaction ended; done must not
// block. A caller that goes on at once must treat a refusal or failure
// reported later as the end of the run.
func (s *Store) EnqueueTransition(ctx context.Context, r *core.Run, from []core.RunStatus, done func(*core.Run, error)) error {
	req := s.transitionReq(r, from)
	req.done = func(res appendResult) {
		if res.err != nil {
			done(nil, res.err)
			return
		}
		done(transitionOutcome(res))
	}
	return s.enqueue(ctx, req)
}

// The chat's writes that go with a run's end: its answer, and the
// session's last activity.
const (
	insertAssistantMessage = `INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	touchChatSession       = `UPDATE chat_sessions SET updated_at = ?, message_count = message_count + 1 WHERE id = ?`
)

// transitionReq is a status change as a write in the run's order.
func (s *Store) transitionReq(r *core.Run, from []core.RunStatus) *appendReq {
	req := &appendReq{run: r}
	outcome := func(ctx context.Context, q sqlx.QueryerContext, updated *core.Run, refused error) (any, error) {
		if refused != nil && req.retried {
			// A batch of status changes alone has no event whose seq
			// would show that an earlier try committed: a refusal now
			// may be that try's own change, found in place.
			if stored, gerr := s.getRun(ctx, q, r.ID); gerr == nil && stored.Status == r.Status {
				return stored, nil
			}
		}
		if refused != nil {
			return refused, nil // the transaction goes on: other runs' events are in it
		}
		return updated, nil
	}
	req.change = &runChange{from: from, outcome: outcome}
	req.tail = func(ctx context.Context, q sqlx.ExtContext, _ core.Envelope) (any, error) {
		updated, err := s.transitionRunWith(ctx, q, r, from, "", nil)
		if err != nil && !refusal(err) {
			return nil, err
		}
		return outcome(ctx, q, updated, err)
	}
	req.reread = func(ctx context.Context) (any, error) {
		stored, err := s.GetRun(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		if stored.Status != r.Status {
			return core.Errf(core.CodeInvalidRunTransition, "", "run %s is %s", r.ID, stored.Status), nil
		}
		return stored, nil
	}
	return req
}

// transitionOutcome is the run a committed transitionReq wrote, or why it
// wrote nothing.
func transitionOutcome(res appendResult) (*core.Run, error) {
	switch out := res.tail.(type) {
	case *core.Run:
		return out, nil
	case error:
		return nil, out
	}
	return nil, errors.New("transition in order: no outcome")
}

// refusal tells a change the store refused (a run in another state, or no
// such run) from a failed statement: a refusal leaves the transaction
// usable, so the other writes sharing it go on.
func refusal(err error) bool {
	var refused *core.Error
	return errors.As(err, &refused) || errors.Is(err, ErrNotFound)
}
