// Package store is the host's persistence on two first-class SQL dialects:
// embedded SQLite (the default: one command, no server) and PostgreSQL (what
// a team runs, and what several hosts share). SQL is portable `?` SQL,
// rebound per dialect; driver errors are translated here so nothing above
// knows which database it talks to.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store/stmtcache"
	"github.com/agenthost/agenthost/migrations"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect names a SQL dialect.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is the host's database.
type Store struct {
	dialect Dialect
	// connStr is the driver connection string, kept for migrations.
	connStr string
	// w takes every write. On SQLite it has a single connection: SQLite has
	// one writer, and queueing in Go beats spinning on SQLITE_BUSY.
	w *sqlx.DB
	// r serves reads; on PostgreSQL it is the same pool as w.
	r *sqlx.DB
	// lease renews this host's lease. On PostgreSQL it is a connection of
	// its own, so a busy pool (every connection held by event commits and
	// run writes) cannot delay the heartbeat past the lease and make the
	// other hosts take this one's runs. On SQLite it is w.
	lease *sqlx.DB
	// lanePool is, on PostgreSQL, the connections of the event log's
	// writers (events) apart from w's (SetMaxConns splits them): each
	// connection prepares and plans every statement text it runs, and a
	// lane's batch statements come in dozens of shapes (changesStatement),
	// so spread over all of w's connections they were planned again for
	// most of a busy host's first minutes. nil on SQLite.
	lanePool *sqlx.DB
	// laneDB is what the lanes write with: lanePool, or w when the
	// connections are too few to set some apart (SetMaxConns).
	laneDB atomic.Pointer[sqlx.DB]

	// events are the event log's writers (lanes), a run always on the
	// same one.
	events []*eventWriter
	// manifests caches revision manifests (RevisionManifest).
	manifests manifestCache
	// chatTails holds recent chats' tails (ChatSessionTail).
	chatTails chatTailCache
	// path is the SQLite database file ("" on PostgreSQL).
	path string
	// owner is this host's lease key (SetOwner): the owner of the runs it
	// records, and on PostgreSQL the fence of every write for a run.
	owner string
	// outage tracks writes failing for reasons that may clear (outage.go).
	outage *outage
	// ckpt copies SQLite's WAL into the database file off the writer
	// (checkpoint.go); nil on PostgreSQL and for OpenNoMigrate.
	ckpt *checkpointer
}

// ErrConflict is returned (wrapped) when a write collides with existing data
// (a unique key).
var ErrConflict = errors.New("conflict")

// ErrNotFound is returned (wrapped) when a row does not exist.
var ErrNotFound = errors.New("not found")

// Open connects to databaseURL — postgres://… for PostgreSQL, anything else
// (a path, file:…, or empty for dataDir/agenthost.db) for SQLite — and brings
// the schema up to date. It refuses a schema newer than this binary knows.
func Open(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	s, err := connect(ctx, databaseURL, dataDir)
	if err != nil {
		return nil, err
	}
	if err := s.MigrateUp(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.sweepOrphanChunks(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sweep orphaned content chunks: %w", err)
	}
	if s.ckpt, err = s.startCheckpointer(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("start the WAL checkpointer: %w", err)
	}
	s.events = newEventLanes(s)
	return s, nil
}

// OpenNoMigrate connects without touching the schema (agenthost migrate).
func OpenNoMigrate(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	return connect(ctx, databaseURL, dataDir)
}

func connect(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	if strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://") {
		databaseURL, err := connectionDefaults(databaseURL)
		if err != nil {
			return nil, err
		}
		db, err := openCached(Postgres, databaseURL)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(postgresMaxConns - 1)
		db.SetMaxIdleConns(postgresIdleConns)
		db.SetConnMaxIdleTime(5 * time.Minute)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		lease, err := sqlx.Open("postgres", databaseURL)
		if err != nil {
			db.Close()
			return nil, err
		}
		lease.SetMaxOpenConns(1)
		lease.SetMaxIdleConns(1)
		lanes, err := openCached(Postgres, databaseURL)
		if err != nil {
			db.Close()
			lease.Close()
			return nil, err
		}
		lanes.SetConnMaxIdleTime(5 * time.Minute)
		s := &Store{dialect: Postgres, connStr: databaseURL, w: db, r: db, lease: lease, lanePool: lanes, outage: newOutage()}
		s.SetMaxConns(postgresMaxConns)
		return s, nil
	}

	path := strings.TrimPrefix(databaseURL, "sqlite://")
	path = strings.TrimPrefix(path, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if path == "" {
		path = filepath.Join(dataDir, "agenthost.db")
	}
	if err := ensurePrivateFile(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, err
	}
	// WAL lets readers run beside the writer; synchronous=NORMAL in WAL mode
	// never loses a committed transaction to a process crash (only to an OS
	// crash or power loss); busy_timeout covers the writer/reader handoff.
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()), "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	w, err := openCached(SQLite, dsn)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	r, err := openCached(SQLite, dsn+"&mode=ro")
	if err != nil {
		w.Close()
		return nil, err
	}
	// Readers are kept open as long as the pool may hold them (the default
	// keeps two): opening a SQLite connection costs more than most reads,
	// and 20 concurrent chats reopened one for nearly every query. Idle
	// ones close after a minute, giving back their page caches.
	r.SetMaxOpenConns(sqliteReaders)
	r.SetMaxIdleConns(sqliteReaders)
	r.SetConnMaxIdleTime(time.Minute)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	return &Store{dialect: SQLite, connStr: dsn, w: w, r: r, lease: w, path: path, outage: newOutage()}, nil
}

// statementsPerConn is how many prepared statements each connection keeps
// (stmtcache): more than the store has distinct hot statements, so a turn's
// queries are each parsed once per connection, not once per call.
const statementsPerConn = 128

// openCached opens a pool whose connections keep their prepared statements
// by SQL text (see stmtcache).
func openCached(d Dialect, dsn string) (*sqlx.DB, error) {
	if d == Postgres {
		c, err := pq.NewConnector(dsn)
		if err != nil {
			return nil, err
		}
		return sqlx.NewDb(sql.OpenDB(stmtcache.New(c, statementsPerConn)), "postgres"), nil
	}
	return sqlx.NewDb(sql.OpenDB(stmtcache.New(stmtcache.DSNConnector(&sqlite.Driver{}, dsn), statementsPerConn)), "sqlite"), nil
}

// connectionDefaults sets two connection parameters unless the URL sets
// them itself:
//
//   - lib/pq's binary_parameters=yes. Without it every query with
//     arguments costs two round trips (prepare and describe, then bind and
//     execute), each ending in a Sync that the server counts as a
//     transaction of its own: a mock turn's reads and autocommitted writes
//     were counted twice. With it a query is one message batch; []byte
//     arguments go in binary, which the server reads as the column's own
//     type (text and bytea alike; JSON is stored as TEXT here).
//   - the server's plan_cache_mode=force_generic_plan, sent as a run-time
//     parameter when the connection starts. Statements here are prepared
//     once per connection (stmtcache) and find rows by key, so one plan
//     serves every argument. Left to choose, PostgreSQL plans the event
//     log's insert anew at every execution (it estimates the generic
//     plan for 100 rows of unnest, a custom one for the batch's few): 0.5
//     of its 0.8 ms server time per commit went to planning, with two or
//     three such commits a turn. plan_cache_mode=auto in the URL restores
//     PostgreSQL's default.
func connectionDefaults(databaseURL string) (string, error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		// Not err itself: it quotes the URL, password and all.
		return "", errors.New("the PostgreSQL database URL is not a valid URL")
	}
	q := u.Query()
	for key, value := range map[string]string{"binary_parameters": "yes", "plan_cache_mode": "force_generic_plan"} {
		if q.Get(key) == "" {
			q.Set(key, value)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// sqliteBusyTimeout is how long a SQLite connection waits for a lock
// another holds before its statement fails with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// sqliteReaders is how many read connections a SQLite store keeps.
const sqliteReaders = 8

// postgresIdleConns is how many idle PostgreSQL connections the pool keeps:
// as many as it may open, since every connection opened past the idle ones
// is closed on return and a new one costs the server a backend fork (20
// concurrent chat sessions spent most of a create-run opening connections
// with 8). Idle ones still close after ConnMaxIdleTime, so a quiet host
// holds none for long.
const postgresIdleConns = 32

func (s *Store) dsn() string { return s.connStr }

// postgresMaxConns is how many connections a PostgreSQL store opens at
// most unless SetMaxConns says otherwise: the lease's one and the pool.
const postgresMaxConns = 32

// SetMaxConns bounds the connections this store opens to PostgreSQL (32
// unless set, at least 2): one renews the lease, the rest are the pool,
// of which a quarter, up to one per lane of the event log, is the lanes'
// own (lanePool; none below 5 connections). With several hosts on one
// server, their connections together (and one more each that listens for
// notifications) must fit its max_connections. It does nothing on SQLite.
func (s *Store) SetMaxConns(n int) {
	if s.dialect != Postgres || n <= 0 {
		return
	}
	pool := max(n-1, 1)
	if lanes := min(postgresLanes, pool/4); lanes > 0 {
		s.lanePool.SetMaxOpenConns(lanes)
		s.lanePool.SetMaxIdleConns(lanes)
		s.laneDB.Store(s.lanePool)
		pool -= lanes
	} else {
		// Not closed: a lane may be writing with it. Its connections
		// close as they come back.
		s.laneDB.Store(s.w)
		s.lanePool.SetMaxIdleConns(0)
		s.lanePool.SetMaxOpenConns(1)
	}
	s.w.SetMaxOpenConns(pool)
	s.w.SetMaxIdleConns(min(pool, postgresIdleConns))
}

// SQLitePath is the SQLite database's file, "" on PostgreSQL.
func (s *Store) SQLitePath() string { return s.path }

// Dialect reports which database this is.
func (s *Store) Dialect() Dialect { return s.dialect }

// DropIdleConnections closes the PostgreSQL connections no query is using
// (the pool opens new ones as needed). Benchmarks use it to make the server
// flush the statistics its backends keep until they exit
// (pg_stat_database). It does nothing on SQLite.
func (s *Store) DropIdleConnections() {
	if s.dialect != Postgres {
		return
	}
	s.w.SetMaxIdleConns(0)
	s.w.SetMaxIdleConns(postgresIdleConns)
	// The lease's own connection too: a statistics reader waits for every
	// backend of the host's but the listener's to exit.
	s.lease.SetMaxIdleConns(0)
	s.lease.SetMaxIdleConns(1)
	if s.laneDB.Load() == s.lanePool {
		s.lanePool.SetMaxIdleConns(0)
		s.lanePool.SetMaxIdleConns(postgresLanes)
	}
}

// Close flushes pending event appends and closes the connections.
func (s *Store) Close() error {
	for _, w := range s.events {
		w.close()
	}
	err := s.ckpt.close()
	err = errors.Join(err, s.w.Close())
	for _, db := range []*sqlx.DB{s.r, s.lease, s.lanePool} {
		if db != nil && db != s.w {
			err = errors.Join(err, db.Close())
		}
	}
	return err
}

// rebind turns portable `?` SQL into the dialect's placeholders.
func (s *Store) rebind(q string) string { return s.w.Rebind(q) }

// tx runs fn in a transaction: rolled back on error or panic, committed
// otherwise, never committed after a rollback.
func (s *Store) tx(ctx context.Context, fn func(tx *sqlx.Tx) error) (err error) {
	return txOn(ctx, s.w, fn)
}

// txOn is tx on db's connections.
func txOn(ctx context.Context, db *sqlx.DB, fn func(tx *sqlx.Tx) error) (err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	done = true
	return translate(tx.Commit())
}

// translate maps driver errors onto the store's: unique violations become
// ErrConflict, no rows ErrNotFound.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23505" {
		return fmt.Errorf("%w: %s", ErrConflict, pqErr.Message)
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %v", ErrConflict, err)
		}
	}
	return err
}

// notFound wraps ErrNotFound in the domain's NOT_FOUND error.
func notFound(what, id string) error {
	return fmt.Errorf("%w: %w", core.Errf(core.CodeNotFound, "", "%s %s not found", what, id), ErrNotFound)
}

var migrationName = regexp.MustCompile(`^(\d+)_.*\.up\.sql$`)

// LatestVersion is the newest migration this binary carries for d.
func LatestVersion(d Dialect) (uint, error) {
	entries, err := fs.ReadDir(migrations.FS, string(d))
	if err != nil {
		return 0, err
	}
	var versions []int
	for _, e := range entries {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil {
			v, _ := strconv.Atoi(m[1])
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return 0, fmt.Errorf("no migrations for %s", d)
	}
	sort.Ints(versions)
	return uint(versions[len(versions)-1]), nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.w.PingContext(ctx) }

// ensurePrivateFile makes the SQLite database file (and its WAL and shared
// memory files, which SQLite creates with the database's mode) readable by
// the host's user only: sandboxed commands run as other uids on this
// machine, and the database holds every tenant's prompts and files. An
// existing file is tightened too.
func ensurePrivateFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open database file: %w", err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("make %s private: %w", p, err)
		}
	}
	return nil
}
