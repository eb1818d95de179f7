package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/jmoiron/sqlx"
)

// Several hosts may share one PostgreSQL database (docs/scale-out.md). Each
// host process registers under a lease key — its host id, "/", and a
// random incarnation — and renews the lease while it lives. A run is owned
// by the lease key of the host executing it: a run's lease is its owner's
// host lease, so one heartbeat renews all of a host's runs at once. Every
// write a host makes for a run (its events, its status, its engine state)
// is conditional on the run still being its own, so a host that lost its
// lease (paused past it, cut off) and comes back cannot write for a run
// another host took over.

// SetOwner makes key the owner of every run this store records from now on
// and, on PostgreSQL, fences every write for a run by it. Called once, at
// start-up, before any run is started.
func (s *Store) SetOwner(key string) { s.owner = key }

// Owner is the lease key set by SetOwner ("" for none).
func (s *Store) Owner() string { return s.owner }

// fenced reports whether writes for a run must check its owner: on a
// database several hosts can share, once the host has a lease key. SQLite
// serves one host (the host refuses a second one on the same file).
func (s *Store) fenced() bool { return s.dialect == Postgres && s.owner != "" }

// claimNew marks a run this host records as its own.
func (s *Store) claimNew(r *core.Run) {
	if r.Owner == "" {
		r.Owner = s.owner
	}
}

// leaseLost is the refusal of a write for a run another host owns.
func leaseLost(runID, owner string) error {
	if owner == "" {
		return core.Errf(core.CodeLeaseLost, "", "run %s is no longer this host's: its lease lapsed and another host took the run over", runID)
	}
	return core.Errf(core.CodeLeaseLost, "", "run %s is owned by %s now, not by this host: its lease lapsed and the run was taken over", runID, owner)
}

// holdRun share-locks a run's row for the rest of tx if this host owns the
// run, so no takeover can commit before tx does; otherwise it refuses
// with CodeLeaseLost.
func (s *Store) holdRun(ctx context.Context, tx *sqlx.Tx, runID string) error {
	var owner string
	err := tx.GetContext(ctx, &owner, tx.Rebind(`SELECT owner FROM runs WHERE id = ? FOR SHARE`), runID)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("run", runID)
	}
	if err != nil {
		return translate(err)
	}
	if owner != s.owner {
		return leaseLost(runID, owner)
	}
	return nil
}

// activeRunsWhere selects the runs a host holds: queued, running or
// paused. It is the predicate of the partial index runs_active, word for
// word: SQLite uses a partial index only for a query whose WHERE holds the
// index's own term, and PostgreSQL cannot prove that a list of bound
// parameters implies it (and plans statements generically here). A query
// of active runs names it literally, never as parameters.
const activeRunsWhere = `status IN ('queued', 'running', 'paused')`

// activeStatuses are the states activeRunsWhere names.
var activeStatuses = []core.RunStatus{core.RunQueued, core.RunRunning, core.RunPaused}

// HostRecord is one live or lapsed host process.
type HostRecord struct {
	LeaseKey    string    `json:"lease_key"`
	HostID      string    `json:"host_id"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	LeaseUntil  time.Time `json:"lease_until"`
}

type hostRow struct {
	LeaseKey    string `db:"lease_key"`
	HostID      string `db:"host_id"`
	StartedAt   int64  `db:"started_at"`
	HeartbeatAt int64  `db:"heartbeat_at"`
	LeaseUntil  int64  `db:"lease_until"`
}

func (h hostRow) record() HostRecord {
	return HostRecord{LeaseKey: h.LeaseKey, HostID: h.HostID, StartedAt: fromMS(h.StartedAt), HeartbeatAt: fromMS(h.HeartbeatAt), LeaseUntil: fromMS(h.LeaseUntil)}
}

// RegisterHost records a host process's lease, valid for ttl from now.
func (s *Store) RegisterHost(ctx context.Context, leaseKey, hostID string, ttl time.Duration) error {
	now := time.Now()
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO hosts (lease_key, host_id, started_at, heartbeat_at, lease_until) VALUES (?, ?, ?, ?, ?)`),
		leaseKey, hostID, now.UnixMilli(), now.UnixMilli(), now.Add(ttl).UnixMilli())
	return translate(err)
}

// WaitOutOlderTransactions waits, on PostgreSQL, until every transaction
// that began before the call has ended, for at most limit; it returns an
// error if some still run then. A host calls it once its row is in hosts
// (and it listens): a commit of another host's events whose statement
// began before that row existed saw no peer and sent no notification
// (notifyIfHeard), and it is over once this returns. Only transactions
// whose state this database role may read count (its own role's, or all
// with pg_read_all_stats): hosts share one role.
func (s *Store) WaitOutOlderTransactions(ctx context.Context, limit time.Duration) error {
	if s.dialect != Postgres {
		return nil
	}
	var since time.Time
	if err := s.r.GetContext(ctx, &since, `SELECT clock_timestamp()`); err != nil {
		return translate(err)
	}
	deadline := time.Now().Add(limit)
	wait := time.Millisecond
	for {
		var older []string
		err := s.r.SelectContext(ctx, &older, `SELECT 'pid ' || pid || COALESCE(' (' || NULLIF(application_name, '') || ')', '') FROM pg_stat_activity
 WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
   AND state <> 'idle' AND xact_start < $1`, since)
		if err != nil {
			return translate(err)
		}
		if len(older) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d transactions that began before this host registered are still open after %s: %s", len(older), limit, strings.Join(older, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// leaseToken is the lease renewal's entry among failing writes (outage).
const leaseToken = "lease"

// RenewHost pushes a host's lease to ttl from now. ok is false when its row
// is gone: another host declared it dead and took its runs over. It has a
// connection of its own on PostgreSQL (Store.lease), so it never queues
// behind the host's own load.
func (s *Store) RenewHost(ctx context.Context, leaseKey string, ttl time.Duration) (ok bool, err error) {
	now := time.Now()
	res, err := s.lease.ExecContext(ctx, s.rebind(`UPDATE hosts SET heartbeat_at = ?, lease_until = ? WHERE lease_key = ?`),
		now.UnixMilli(), now.Add(ttl).UnixMilli(), leaseKey)
	if err != nil {
		// The renewal is the store's heartbeat too: it tells Health that
		// the database takes writes again, or not, even when nothing else
		// writes.
		if cause, transient := transientCause(err); transient {
			s.outage.fail(leaseToken, cause)
		}
		return false, translate(err)
	}
	s.outage.succeeded(leaseToken)
	n, err := res.RowsAffected()
	return n == 1, err
}

// RemoveHost deletes a host's row when it stops cleanly (its runs are
// settled by then), so nobody waits for its lease to lapse.
func (s *Store) RemoveHost(ctx context.Context, leaseKey string) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`DELETE FROM hosts WHERE lease_key = ?`), leaseKey)
	return translate(err)
}

// Hosts lists the registered host processes, live or lapsed, by host id.
func (s *Store) Hosts(ctx context.Context) ([]HostRecord, error) {
	var rows []hostRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT lease_key, host_id, started_at, heartbeat_at, lease_until FROM hosts ORDER BY host_id, started_at`); err != nil {
		return nil, translate(err)
	}
	out := make([]HostRecord, len(rows))
	for i, r := range rows {
		out[i] = r.record()
	}
	return out, nil
}

// LostOwners returns the owners of active runs (queued, running, paused)
// that hold no live lease at now: hosts that died, or stopped renewing,
// and "" for runs nobody owns.
func (s *Store) LostOwners(ctx context.Context, now time.Time) ([]string, error) {
	var owners []string
	if err := s.r.SelectContext(ctx, &owners, s.rebind(`SELECT DISTINCT owner FROM runs WHERE `+activeRunsWhere+`
 AND owner NOT IN (SELECT lease_key FROM hosts WHERE lease_until >= ?)`), now.UnixMilli()); err != nil {
		return nil, translate(err)
	}
	return owners, nil
}

// ClaimRuns makes this host (SetOwner's key) the owner of the active runs
// of lost, a lease key whose lease has lapsed by now, and returns them. In
// one transaction it first removes lost's host row, so that host finds out
// at its next renewal; if that lease was renewed in the meantime nothing
// is claimed (nil). Of hosts claiming the same runs at once, each run goes
// to exactly one.
func (s *Store) ClaimRuns(ctx context.Context, lost string, now time.Time) ([]*core.Run, error) {
	if s.owner == "" {
		return nil, errors.New("claim runs: this store has no owner (SetOwner)")
	}
	var out []*core.Run
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM hosts WHERE lease_key = ? AND lease_until < ?`), lost, now.UnixMilli()); err != nil {
			return translate(err)
		}
		var alive int
		if err := tx.GetContext(ctx, &alive, tx.Rebind(`SELECT COUNT(*) FROM hosts WHERE lease_key = ?`), lost); err != nil {
			return translate(err)
		}
		if alive > 0 {
			return nil // it renewed its lease: not lost after all
		}
		var rows []runRow
		if err := tx.SelectContext(ctx, &rows, tx.Rebind(`UPDATE runs SET owner = ?, updated_at = ? WHERE owner = ? AND `+activeRunsWhere+` RETURNING `+runColumns),
			s.owner, time.Now().UnixMilli(), lost); err != nil {
			return translate(err)
		}
		for _, r := range rows {
			out = append(out, r.toRun())
		}
		return nil
	})
	return out, err
}

// RunOwner returns a run's owner and whether that owner's lease is live
// now ("" and false for a run nobody owns).
func (s *Store) RunOwner(ctx context.Context, runID string, now time.Time) (owner string, live bool, err error) {
	var row struct {
		Owner string        `db:"owner"`
		Until sql.NullInt64 `db:"lease_until"`
	}
	err = s.r.GetContext(ctx, &row, s.rebind(`SELECT r.owner, h.lease_until FROM runs r LEFT JOIN hosts h ON h.lease_key = r.owner WHERE r.id = ?`), runID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, notFound("run", runID)
	}
	if err != nil {
		return "", false, translate(err)
	}
	return row.Owner, row.Owner != "" && row.Until.Valid && row.Until.Int64 >= now.UnixMilli(), nil
}

// LiveHostLeases returns the lease keys of host id's processes whose
// leases are live at now (another process of the same host id still
// running, or one that died less than a lease ago).
func (s *Store) LiveHostLeases(ctx context.Context, hostID string, now time.Time) ([]string, error) {
	var keys []string
	err := s.r.SelectContext(ctx, &keys, s.rebind(`SELECT lease_key FROM hosts WHERE host_id = ? AND lease_until >= ?`), hostID, now.UnixMilli())
	return keys, translate(err)
}

// ForgetLapsedHosts deletes the rows of hosts whose leases lapsed before
// cutoff and that own no active run (those are deleted when their runs are
// taken over): hosts that died idle would otherwise stay listed forever.
func (s *Store) ForgetLapsedHosts(ctx context.Context, cutoff time.Time) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`DELETE FROM hosts WHERE lease_until < ?
 AND lease_key NOT IN (SELECT owner FROM runs WHERE `+activeRunsWhere+`)`), cutoff.UnixMilli())
	return translate(err)
}

// ChatOwner returns the newest run of a chat session, that run's owner and
// whether the owner's lease is live now: the host that holds the chat's
// warm sandbox, if any does. runID is "" for a chat with no run.
func (s *Store) ChatOwner(ctx context.Context, chatID string, now time.Time) (runID, owner string, live bool, err error) {
	var rows []struct {
		RunID string        `db:"id"`
		Owner string        `db:"owner"`
		Until sql.NullInt64 `db:"lease_until"`
	}
	err = s.r.SelectContext(ctx, &rows, s.rebind(`SELECT r.id, r.owner, h.lease_until FROM chat_messages m
 JOIN runs r ON r.id = m.run_id LEFT JOIN hosts h ON h.lease_key = r.owner
 WHERE m.chat_session_id = ? ORDER BY m.created_at DESC, m.id DESC LIMIT 1`), chatID)
	if err != nil || len(rows) == 0 {
		return "", "", false, translate(err)
	}
	r := rows[0]
	return r.RunID, r.Owner, r.Owner != "" && r.Until.Valid && r.Until.Int64 >= now.UnixMilli(), nil
}
