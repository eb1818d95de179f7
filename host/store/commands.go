package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Commands about a run (cancel, resume, a permission answer) that reach a
// host not owning it are written to run_commands for the owner, which
// answers in the same row. Notifications on CommandsChannel and
// AnswersChannel wake the two sides; the table is the truth, so a missed
// notification only costs a poll.
const (
	// CommandsChannel carries the lease key of a host with a new command.
	CommandsChannel = "agenthost_commands"
	// AnswersChannel carries the id of a command that was just answered.
	AnswersChannel = "agenthost_answers"
)

// RunCommand is a command for a run's owner, and its answer once given.
type RunCommand struct {
	ID    int64
	RunID string
	Owner string
	Kind  string
	Body  []byte
	// Claimed: the owner took the command up (ClaimCommand); from then on
	// only its answer ends it.
	Claimed  bool
	Answered bool
	// Status and Answer are the HTTP status and body the owner answered
	// with.
	Status int
	Answer []byte
}

type commandRow struct {
	ID         int64         `db:"id"`
	RunID      string        `db:"run_id"`
	Owner      string        `db:"owner"`
	Kind       string        `db:"kind"`
	Body       string        `db:"body"`
	ClaimedAt  sql.NullInt64 `db:"claimed_at"`
	AnsweredAt sql.NullInt64 `db:"answered_at"`
	Status     int           `db:"status_code"`
	Answer     string        `db:"answer"`
}

func (r commandRow) command() RunCommand {
	return RunCommand{ID: r.ID, RunID: r.RunID, Owner: r.Owner, Kind: r.Kind, Body: []byte(r.Body),
		Claimed: r.ClaimedAt.Valid, Answered: r.AnsweredAt.Valid, Status: r.Status, Answer: []byte(r.Answer)}
}

const commandColumns = `id, run_id, owner, kind, body, claimed_at, answered_at, status_code, answer`

// SendCommand records a command for owner about a run and wakes owner
// (PostgreSQL); it returns the command's id.
func (s *Store) SendCommand(ctx context.Context, runID, owner, kind string, body []byte) (int64, error) {
	var id int64
	q := `INSERT INTO run_commands (run_id, owner, kind, body, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id`
	args := []any{runID, owner, kind, string(body), time.Now().UnixMilli()}
	if s.dialect == Postgres {
		q = `WITH c AS (` + q + `) SELECT id FROM c, LATERAL (SELECT pg_notify('` + CommandsChannel + `', ?)) n`
		args = append(args, owner)
	}
	err := s.w.GetContext(ctx, &id, s.rebind(q), args...)
	return id, translate(err)
}

// OpenCommands returns owner's commands nobody took up yet, oldest first.
func (s *Store) OpenCommands(ctx context.Context, owner string) ([]RunCommand, error) {
	var rows []commandRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT `+commandColumns+` FROM run_commands WHERE owner = ? AND claimed_at IS NULL AND answered_at IS NULL ORDER BY id`), owner); err != nil {
		return nil, translate(err)
	}
	out := make([]RunCommand, len(rows))
	for i, r := range rows {
		out[i] = r.command()
	}
	return out, nil
}

// ClaimCommand takes a command up for carrying out; ok is false when it
// was claimed already or abandoned by its sender. Exactly one of
// ClaimCommand and AbandonCommand succeeds for a command.
func (s *Store) ClaimCommand(ctx context.Context, id int64) (ok bool, err error) {
	return s.oneRow(ctx, `UPDATE run_commands SET claimed_at = ? WHERE id = ? AND claimed_at IS NULL AND answered_at IS NULL`, time.Now().UnixMilli(), id)
}

// AbandonCommand withdraws a command its owner has not taken up (the owner
// seems gone); ok is false when the owner claimed it first, and will
// answer it.
func (s *Store) AbandonCommand(ctx context.Context, id int64) (ok bool, err error) {
	return s.oneRow(ctx, `UPDATE run_commands SET answered_at = ?, answer = 'abandoned by its sender' WHERE id = ? AND claimed_at IS NULL AND answered_at IS NULL`, time.Now().UnixMilli(), id)
}

func (s *Store) oneRow(ctx context.Context, q string, args ...any) (bool, error) {
	res, err := s.w.ExecContext(ctx, s.rebind(q), args...)
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// AnswerCommand records the owner's answer to a command, once (a second
// answer changes nothing), and wakes the sender (PostgreSQL).
func (s *Store) AnswerCommand(ctx context.Context, id int64, status int, answer []byte) error {
	q := `UPDATE run_commands SET answered_at = ?, status_code = ?, answer = ? WHERE id = ? AND answered_at IS NULL`
	args := []any{time.Now().UnixMilli(), status, string(answer), id}
	if s.dialect == Postgres {
		q = `WITH a AS (` + q + ` RETURNING id) SELECT pg_notify('` + AnswersChannel + `', id::text) IS NULL FROM a`
	}
	_, err := s.w.ExecContext(ctx, s.rebind(q), args...)
	return translate(err)
}

// Command reads a command and its answer.
func (s *Store) Command(ctx context.Context, id int64) (RunCommand, error) {
	var row commandRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT `+commandColumns+` FROM run_commands WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return RunCommand{}, notFound("command", "")
	}
	if err != nil {
		return RunCommand{}, translate(err)
	}
	return row.command(), nil
}

// DeleteAnsweredCommands removes commands answered before cutoff (they
// are kept a while for the sender to read).
func (s *Store) DeleteAnsweredCommands(ctx context.Context, cutoff time.Time) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`DELETE FROM run_commands WHERE answered_at < ?`), cutoff.UnixMilli())
	return translate(err)
}
