package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/jmoiron/sqlx"
)

// runRow is a runs row.
type runRow struct {
	ID               string         `db:"id"`
	TenantID         string         `db:"tenant_id"`
	AppID            string         `db:"app_id"`
	UserID           string         `db:"user_id"`
	ChatSessionID    string         `db:"chat_session_id"`
	BaseRevisionID   string         `db:"base_revision_id"`
	ResultRevisionID string         `db:"result_revision_id"`
	Prompt           string         `db:"prompt"`
	Status           string         `db:"status"`
	Engine           string         `db:"execution_engine"`
	EngineRunRef     string         `db:"engine_run_ref"`
	RequestedModelID string         `db:"requested_model_id"`
	ResolvedModelID  string         `db:"resolved_model_id"`
	SandboxBackend   string         `db:"sandbox_backend"`
	SandboxID        string         `db:"sandbox_id"`
	SandboxStatus    string         `db:"sandbox_status"`
	SandboxStartedAt sql.NullInt64  `db:"sandbox_started_at"`
	PauseReason      string         `db:"pause_reason"`
	ErrorCode        string         `db:"error_code"`
	ErrorMessage     string         `db:"error_message"`
	OutputText       string         `db:"output_text"`
	InputTokens      int64          `db:"input_tokens"`
	OutputTokens     int64          `db:"output_tokens"`
	Context          string         `db:"context"`
	IdempotencyKey   sql.NullString `db:"idempotency_key"`
	IdempotencyHash  string         `db:"idempotency_hash"`
	CreatedAt        int64          `db:"created_at"`
	UpdatedAt        int64          `db:"updated_at"`
	FinishedAt       sql.NullInt64  `db:"finished_at"`
	Owner            string         `db:"owner"`
}

const runColumns = `id, tenant_id, app_id, user_id, chat_session_id, base_revision_id, result_revision_id,
 prompt, status, execution_engine, engine_run_ref, requested_model_id, resolved_model_id,
 sandbox_backend, sandbox_id, sandbox_status, sandbox_started_at, pause_reason, error_code,
 error_message, output_text, input_tokens, output_tokens, context, idempotency_key,
 idempotency_hash, created_at, updated_at, finished_at, owner`

func ms(t time.Time) int64 { return t.UnixMilli() }

func nullMS(t *time.Time) sql.NullInt64 {
	if t == nil || t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

func toRunRow(r *core.Run) runRow {
	ctxJSON := string(r.Context)
	if ctxJSON == "" {
		ctxJSON = "{}"
	}
	row := runRow{
		ID: r.ID, TenantID: r.TenantID, AppID: r.AppID, UserID: r.UserID, ChatSessionID: r.ChatSessionID,
		BaseRevisionID: r.BaseRevisionID, ResultRevisionID: r.ResultRevisionID, Prompt: r.Prompt,
		Status: string(r.Status), Engine: r.Engine, EngineRunRef: r.EngineRunRef,
		RequestedModelID: r.RequestedModelID, ResolvedModelID: r.ResolvedModelID,
		SandboxBackend: r.SandboxBackend, SandboxID: r.SandboxID, SandboxStatus: r.SandboxStatus,
		SandboxStartedAt: nullMS(r.SandboxStartedAt), PauseReason: r.PauseReason,
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, OutputText: r.OutputText,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Context: ctxJSON, IdempotencyHash: r.IdempotencyHash,
		CreatedAt: ms(r.CreatedAt), UpdatedAt: ms(r.UpdatedAt), FinishedAt: nullMS(r.FinishedAt), Owner: r.Owner,
	}
	if r.IdempotencyKey != "" {
		row.IdempotencyKey = sql.NullString{String: r.IdempotencyKey, Valid: true}
	}
	return row
}

func (row runRow) toRun() *core.Run {
	return &core.Run{
		ID: row.ID, TenantID: row.TenantID, AppID: row.AppID, UserID: row.UserID, ChatSessionID: row.ChatSessionID,
		BaseRevisionID: row.BaseRevisionID, ResultRevisionID: row.ResultRevisionID, Prompt: row.Prompt,
		Status: core.RunStatus(row.Status), Engine: row.Engine, EngineRunRef: row.EngineRunRef,
		RequestedModelID: row.RequestedModelID, ResolvedModelID: row.ResolvedModelID,
		SandboxBackend: row.SandboxBackend, SandboxID: row.SandboxID, SandboxStatus: row.SandboxStatus,
		SandboxStartedAt: fromNullMS(row.SandboxStartedAt), PauseReason: row.PauseReason,
		ErrorCode: row.ErrorCode, ErrorMessage: row.ErrorMessage, OutputText: row.OutputText,
		InputTokens: row.InputTokens, OutputTokens: row.OutputTokens, Context: json.RawMessage(row.Context),
		IdempotencyKey: row.IdempotencyKey.String, IdempotencyHash: row.IdempotencyHash,
		CreatedAt: fromMS(row.CreatedAt), UpdatedAt: fromMS(row.UpdatedAt), FinishedAt: fromNullMS(row.FinishedAt),
		Owner: row.Owner,
	}
}

// CreateRun records a new run. A duplicate id or idempotency key is
// ErrConflict.
func (s *Store) CreateRun(ctx context.Context, r *core.Run) error {
	if !json.Valid(r.Context) && len(r.Context) > 0 {
		return core.Errf(core.CodeInvalidRequest, "context", "run context is not JSON")
	}
	s.claimNew(r)
	_, err := s.w.ExecContext(ctx, s.rebind(insertRunQuery), insertRunArgs(toRunRow(r))...)
	return translate(err)
}

const insertRun = `INSERT INTO runs (` + runColumns + `) VALUES (
 :id, :tenant_id, :app_id, :user_id, :chat_session_id, :base_revision_id, :result_revision_id,
 :prompt, :status, :execution_engine, :engine_run_ref, :requested_model_id, :resolved_model_id,
 :sandbox_backend, :sandbox_id, :sandbox_status, :sandbox_started_at, :pause_reason, :error_code,
 :error_message, :output_text, :input_tokens, :output_tokens, :context, :idempotency_key,
 :idempotency_hash, :created_at, :updated_at, :finished_at, :owner)`

// GetRun reads a run.
func (s *Store) GetRun(ctx context.Context, id string) (*core.Run, error) {
	return s.getRun(ctx, s.r, id)
}

// getRun reads a run through q: the readers (GetRun), or a transaction
// that may have written it.
func (s *Store) getRun(ctx context.Context, q sqlx.QueryerContext, id string) (*core.Run, error) {
	var row runRow
	err := sqlx.GetContext(ctx, q, &row, s.rebind(`SELECT `+runColumns+` FROM runs WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("run", id)
	}
	if err != nil {
		return nil, translate(err)
	}
	return row.toRun(), nil
}

// UpdateRun applies fn to the run inside a transaction that locks its row.
func (s *Store) UpdateRun(ctx context.Context, id string, fn func(*core.Run) error) (*core.Run, error) {
	var out *core.Run
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		q := `SELECT ` + runColumns + ` FROM runs WHERE id = ?`
		if s.dialect == Postgres {
			// SQLite has one writer, so its transaction already excludes
			// others; PostgreSQL needs the row lock.
			q += ` FOR UPDATE`
		}
		var row runRow
		if err := tx.GetContext(ctx, &row, tx.Rebind(q), id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("run", id)
			}
			return translate(err)
		}
		r := row.toRun()
		if err := fn(r); err != nil {
			return err
		}
		r.ID = id
		_, err := tx.NamedExecContext(ctx, `UPDATE runs SET tenant_id = :tenant_id, app_id = :app_id,
 user_id = :user_id, chat_session_id = :chat_session_id, base_revision_id = :base_revision_id,
 result_revision_id = :result_revision_id, prompt = :prompt, status = :status,
 execution_engine = :execution_engine, engine_run_ref = :engine_run_ref,
 requested_model_id = :requested_model_id, resolved_model_id = :resolved_model_id,
 sandbox_backend = :sandbox_backend, sandbox_id = :sandbox_id, sandbox_status = :sandbox_status,
 sandbox_started_at = :sandbox_started_at, pause_reason = :pause_reason, error_code = :error_code,
 error_message = :error_message, output_text = :output_text, input_tokens = :input_tokens,
 output_tokens = :output_tokens, context = :context, idempotency_key = :idempotency_key,
 updated_at = :updated_at, finished_at = :finished_at WHERE id = :id`, toRunRow(r))
		if err != nil {
			return translate(err)
		}
		out = r
		return nil
	})
	return out, err
}

// TransitionRun writes r (its status and every field that changes during
// a run's life) in one conditional statement: only while the stored run is
// in one of the from states, and it returns the stored result. A run in
// another state is left alone and answered with CodeInvalidRunTransition
// naming both states; a missing one with ErrNotFound. It is the hot path's
// status change: no read-then-write transaction, no row held locked
// between round trips. The caller owns the run's row (the orchestrator,
// for a run it executes), so writing its fields whole loses nothing.
//
// While the database is unavailable it is retried (see Retry); a try that
// is refused after one whose answer was lost finds whether that one wrote.
func (s *Store) TransitionRun(ctx context.Context, r *core.Run, from []core.RunStatus) (*core.Run, error) {
	var out *core.Run
	tries := 0
	err := s.retry(ctx, "record run "+r.ID+"'s status", func(ctx context.Context) error {
		tries++
		updated, err := s.transitionRun(ctx, s.w, r, from)
		if err != nil && tries > 1 && refusal(err) {
			if stored, gerr := s.GetRun(ctx, r.ID); gerr == nil && stored.Status == r.Status {
				updated, err = stored, nil
			}
		}
		out = updated
		return err
	})
	return out, err
}

// transitionRun is TransitionRun on q (the store's writer or a
// transaction).
func (s *Store) transitionRun(ctx context.Context, q sqlx.QueryerContext, r *core.Run, from []core.RunStatus) (*core.Run, error) {
	return s.transitionRunWith(ctx, q, r, from, "", nil)
}

// transitionRunWith is transitionRun whose UPDATE runs after with, a
// PostgreSQL WITH clause of data-modifying statements (with its ?
// arguments withArgs) that then run in the same statement whether or not
// the run's status allowed the change: writes that go with the change, one
// round trip instead of one each.
func (s *Store) transitionRunWith(ctx context.Context, q sqlx.QueryerContext, r *core.Run, from []core.RunStatus, with string, withArgs []any) (*core.Run, error) {
	if len(from) == 0 {
		return nil, fmt.Errorf("transition run %s: no allowed from-states", r.ID)
	}
	row := toRunRow(r)
	// On a shared database the change is fenced by the run's lease: only
	// its owner writes it (see fenced).
	fence, owner := "", ""
	if s.fenced() {
		fence, owner = " AND owner = ?", s.owner
	}
	args := append(append(append([]any(nil), withArgs...), row.changeArgs()...), row.ID, from)
	if owner != "" {
		args = append(args, owner)
	}
	stmt, args, err := sqlx.In(with+`UPDATE runs SET `+runChangeSet+`
 WHERE id = ? AND status IN (?)`+fence+` RETURNING owner`, args...)
	if err != nil {
		return nil, err
	}
	// The row is what was just written, and the columns the statement
	// does not set never change after the run is created: only the owner
	// (a takeover) comes back. Returning the whole row cost the SQLite
	// writer as much to scan as the UPDATE took to run.
	err = q.QueryRowxContext(ctx, s.rebind(stmt), args...).Scan(&row.Owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.whyUnchanged(ctx, q, r)
	}
	if err != nil {
		return nil, translate(err)
	}
	return row.toRun(), nil
}

// runChangeSet is what a run's status change writes, as SET assignments
// with ? arguments (changeArgs): the columns a run's execution changes.
// The others never change after the run is created.
const runChangeSet = `result_revision_id = ?, status = ?, engine_run_ref = ?,
 resolved_model_id = ?, sandbox_id = ?, sandbox_status = ?, sandbox_started_at = ?, pause_reason = ?,
 error_code = ?, error_message = ?, output_text = ?, input_tokens = ?, output_tokens = ?, context = ?,
 updated_at = ?, finished_at = ?`

// changeArgs are runChangeSet's arguments for row, in order.
func (row runRow) changeArgs() []any {
	return []any{row.ResultRevisionID, row.Status, row.EngineRunRef,
		row.ResolvedModelID, row.SandboxID, row.SandboxStatus, row.SandboxStartedAt, row.PauseReason,
		row.ErrorCode, row.ErrorMessage, row.OutputText, row.InputTokens, row.OutputTokens, row.Context,
		row.UpdatedAt, row.FinishedAt}
}

// whyUnchanged says why a status change of r wrote nothing: the run is
// another host's now, the change is not allowed from the stored state, or
// the stored state is not one the change expected (all refusals, see
// refusal); or the error reading the run. Not a hot path.
func (s *Store) whyUnchanged(ctx context.Context, q sqlx.QueryerContext, r *core.Run) error {
	var cur runRow
	if err := sqlx.GetContext(ctx, q, &cur, s.rebind(`SELECT `+runColumns+` FROM runs WHERE id = ?`), r.ID); err != nil {
		return translate(err)
	}
	if s.fenced() && cur.Owner != s.owner {
		return leaseLost(r.ID, cur.Owner)
	}
	if err := core.CheckTransition(core.RunStatus(cur.Status), r.Status); err != nil {
		return err
	}
	return &core.Error{Code: core.CodeInvalidRunTransition, Message: fmt.Sprintf("run %s is %s, which this change did not expect", r.ID, cur.Status)}
}

// GetRunByIdempotencyKey finds the run a tenant created with a key, or
// returns ErrNotFound.
func (s *Store) GetRunByIdempotencyKey(ctx context.Context, tenantID, key string) (*core.Run, error) {
	var row runRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT `+runColumns+` FROM runs WHERE tenant_id = ? AND idempotency_key = ?`), tenantID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("run with idempotency key", key)
	}
	if err != nil {
		return nil, translate(err)
	}
	return row.toRun(), nil
}

// sameStatuses tells whether a and b name the same states.
func sameStatuses(a, b []core.RunStatus) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// ListRunsByStatus returns the runs in the given states (recovery after a
// restart), oldest first.
func (s *Store) ListRunsByStatus(ctx context.Context, statuses ...core.RunStatus) ([]*core.Run, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	// The active runs (what a restart recovers) are read through their
	// partial index; any other set of states scans the runs.
	q, args := `SELECT `+runColumns+` FROM runs WHERE `+activeRunsWhere+` ORDER BY created_at, id`, []any(nil)
	if !sameStatuses(statuses, activeStatuses) {
		var err error
		q, args, err = sqlx.In(`SELECT `+runColumns+` FROM runs WHERE status IN (?) ORDER BY created_at, id`, statuses)
		if err != nil {
			return nil, err
		}
	}
	var rows []runRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return nil, translate(err)
	}
	out := make([]*core.Run, len(rows))
	for i, row := range rows {
		out[i] = row.toRun()
	}
	return out, nil
}

// SaveEngineState replaces a run's saved engine state. When work is not
// nil it also records that manifest as the run's working copy at this state
// (nil keeps the last one). Its contents must be stored already (PutBlob,
// PutBlobFrom): the working copy is streamed in, never held whole.
func (s *Store) SaveEngineState(ctx context.Context, runID string, state []byte, work []core.FileRef) error {
	return s.retry(ctx, "save run "+runID+"'s engine state", func(ctx context.Context) error {
		return s.saveEngineState(ctx, runID, state, work)
	})
}

// saveEngineState is one try of SaveEngineState (an upsert: trying again
// writes the same).
func (s *Store) saveEngineState(ctx context.Context, runID string, state []byte, work []core.FileRef) error {
	now := time.Now().UnixMilli()
	if work == nil {
		return s.saveStateFenced(ctx, s.w, runID, `INSERT INTO engine_states (run_id, state, updated_at) VALUES (?, ?, ?)
 ON CONFLICT (run_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
			runID, state, now)
	}
	manifest := make([]workEntry, len(work))
	shas := make([]string, len(work))
	for i, f := range work {
		manifest[i] = workEntry{Path: f.Path, Mode: f.Mode, SHA: f.SHA256}
		shas[i] = f.SHA256
	}
	mj, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		if err := s.checkBlobs(ctx, tx, shas); err != nil {
			return fmt.Errorf("save run %s's working copy: %w", runID, err)
		}
		return s.saveStateFenced(ctx, tx, runID, `INSERT INTO engine_states (run_id, state, work_manifest, updated_at) VALUES (?, ?, ?, ?)
 ON CONFLICT (run_id) DO UPDATE SET state = excluded.state, work_manifest = excluded.work_manifest, updated_at = excluded.updated_at`,
			runID, state, string(mj), now)
	})
}

// saveStateFenced runs an engine_states upsert (`INSERT … VALUES (…) ON
// CONFLICT …`) and, on a shared database, only while this host owns the
// run: its VALUES become a SELECT guarded by the run's share-locked row.
func (s *Store) saveStateFenced(ctx context.Context, q sqlx.ExecerContext, runID, upsert string, args ...any) error {
	if !s.fenced() {
		_, err := q.ExecContext(ctx, s.rebind(upsert), args...)
		return translate(err)
	}
	open, close := strings.Index(upsert, "VALUES ("), strings.Index(upsert, ")\n ON CONFLICT")
	guarded := upsert[:open] + "SELECT " + upsert[open+len("VALUES ("):close] +
		" WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND owner = ? FOR SHARE)" + upsert[close+1:]
	res, err := q.ExecContext(ctx, s.rebind(guarded), append(args, runID, s.owner)...)
	if err != nil {
		return translate(err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return leaseLost(runID, "")
	}
	return nil
}

// workEntry is one file of a saved working copy.
type workEntry struct {
	Path string `json:"p"`
	Mode uint32 `json:"m"`
	SHA  string `json:"s"`
}

// LoadEngineState returns a run's saved engine state, or nil.
// A run about to start waits out an unavailable database (Retry).
func (s *Store) LoadEngineState(ctx context.Context, runID string) ([]byte, error) {
	var state []byte
	err := s.retry(ctx, "load run "+runID+"'s engine state", func(ctx context.Context) error {
		err := s.r.GetContext(ctx, &state, s.rebind(`SELECT state FROM engine_states WHERE run_id = ?`), runID)
		if errors.Is(err, sql.ErrNoRows) {
			state, err = nil, nil
		}
		return translate(err)
	})
	return state, err
}

// LoadWorkFiles returns the working copy saved with a run's engine state;
// ok is false when none was saved.
func (s *Store) LoadWorkFiles(ctx context.Context, runID string) ([]sandbox.File, bool, error) {
	var mj sql.NullString
	err := s.r.GetContext(ctx, &mj, s.rebind(`SELECT work_manifest FROM engine_states WHERE run_id = ?`), runID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !mj.Valid {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, translate(err)
	}
	var manifest []workEntry
	if err := json.Unmarshal([]byte(mj.String), &manifest); err != nil {
		return nil, false, fmt.Errorf("run %s: saved working copy is unreadable: %w", runID, err)
	}
	shas := make([]string, 0, len(manifest))
	for _, e := range manifest {
		shas = append(shas, e.SHA)
	}
	data, err := s.blobs(ctx, shas)
	if err != nil {
		return nil, false, err
	}
	files := make([]sandbox.File, len(manifest))
	for i, e := range manifest {
		b, ok := data[e.SHA]
		if !ok {
			return nil, false, fmt.Errorf("run %s: saved working copy misses content %s of %s", runID, e.SHA, e.Path)
		}
		files[i] = sandbox.File{Path: e.Path, Mode: e.Mode, Data: b}
	}
	return files, true, nil
}
