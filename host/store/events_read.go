package store

import (
	"context"
	"database/sql"

	"github.com/agenthost/agenthost/core"
)

// eventRow is a row of run_events as the reads below scan it.
type eventRow struct {
	RunID       string         `db:"run_id"`
	Seq         int64          `db:"seq"`
	Type        string         `db:"type"`
	Payload     string         `db:"payload"`
	Diagnostics sql.NullString `db:"diagnostics"`
	TS          int64          `db:"ts"`
}

// envelope is the row as an event of the app appID.
func (r eventRow) envelope(appID string) core.Envelope {
	e := core.Envelope{Event: core.EventType(r.Type), RunID: r.RunID, AppID: appID, Seq: r.Seq, TS: fromMS(r.TS), Payload: []byte(r.Payload)}
	if r.Diagnostics.Valid {
		e.Diagnostics = []byte(r.Diagnostics.String)
	}
	return e
}

// ListEvents returns up to limit events of a run with seq > afterSeq, in
// order. appID fills the envelopes (events are stored per run).
func (s *Store) ListEvents(ctx context.Context, runID, appID string, afterSeq int64, limit int) ([]core.Envelope, error) {
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	var rows []eventRow
	err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT run_id, seq, type, payload, diagnostics, ts FROM run_events
 WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`), runID, afterSeq, limit)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]core.Envelope, len(rows))
	for i, r := range rows {
		out[i] = r.envelope(appID)
	}
	return out, nil
}

// LastEvent returns a run's newest event, or nil when its log is empty.
func (s *Store) LastEvent(ctx context.Context, runID, appID string) (*core.Envelope, error) {
	var rows []eventRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT run_id, seq, type, payload, diagnostics, ts FROM run_events
 WHERE run_id = ? ORDER BY seq DESC LIMIT 1`), runID); err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	e := rows[0].envelope(appID)
	return &e, nil
}
