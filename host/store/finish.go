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
	type finished struct {
		run     *core.Run
		refused error
	}
	res, err := s.appendWait(ctx, &appendReq{run: r, ev: terminal, tail: func(ctx context.Context, tx *sqlx.Tx, env core.Envelope) (any, error) {
		if turn != nil && r.ChatSessionID != "" {
			now := env.TS.UnixMilli()
			if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at)
 VALUES (?, ?, ?, ?, ?, ?)`), turn.MessageID, r.ChatSessionID, r.ID, "assistant", turn.Content, now); err != nil {
				return nil, translate(err)
			}
			if _, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE chat_sessions SET updated_at = ? WHERE id = ?`), now, r.ChatSessionID); err != nil {
				return nil, translate(err)
			}
		}
		updated, err := s.transitionRun(ctx, tx, r, from)
		var refused *core.Error
		if errors.As(err, &refused) && refused.Code == core.CodeInvalidRunTransition {
			return finished{refused: err}, nil
		}
		if err != nil {
			return nil, err
		}
		return finished{run: updated}, nil
	}})
	if err != nil {
		return core.Envelope{}, nil, err
	}
	f, _ := res.tail.(finished)
	return res.env, f.run, f.refused
}
