package stmtcache_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/store/stmtcache"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"
)

// counting counts the statements the real driver prepares under the cache.
type counting struct {
	driver.Connector
	prepares atomic.Int64
}

func (c *counting) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: c}, nil
}

type countingConn struct {
	driver.Conn
	c *counting
}

func (cc *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	cc.c.prepares.Add(1)
	return cc.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

// ExecContext and QueryContext are the driver's own uncached paths, which
// the cache falls back to.
func (cc *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return cc.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (cc *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return cc.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (cc *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return cc.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

// each runs fn on one connection (so what it caches is observable) of a
// real SQLite and a real PostgreSQL database, through the cache.
func each(t *testing.T, size int, fn func(t *testing.T, db *sql.DB, c *counting, postgres bool)) {
	t.Run("sqlite", func(t *testing.T) {
		c := &counting{Connector: stmtcache.DSNConnector(&sqlite.Driver{}, "file:"+filepath.Join(t.TempDir(), "t.db"))}
		db := sql.OpenDB(stmtcache.New(c, size))
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		fn(t, db, c, false)
	})
	t.Run("postgres", func(t *testing.T) {
		pc, err := pq.NewConnector(testenv.PostgresURL(t))
		require.NoError(t, err)
		c := &counting{Connector: pc}
		db := sql.OpenDB(stmtcache.New(c, size))
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		fn(t, db, c, true)
	})
}

func param(postgres bool, n string) string {
	if postgres {
		return "$" + n
	}
	return "?"
}

// TestStatementsAreReused: the same SQL again on a connection, in or out of
// a transaction, is not prepared again; different SQL is.
func TestStatementsAreReused(t *testing.T) {
	each(t, 16, func(t *testing.T, db *sql.DB, c *counting, pg bool) {
		_, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`)
		require.NoError(t, err)
		insert := `INSERT INTO kv (k, v) VALUES (` + param(pg, "1") + `, ` + param(pg, "2") + `)`
		before := c.prepares.Load()
		for i := range 20 {
			_, err := db.Exec(insert, string(rune('a'+i)), i)
			require.NoError(t, err)
		}
		tx, err := db.Begin()
		require.NoError(t, err)
		_, err = tx.Exec(insert, "z", 99)
		require.NoError(t, err)
		require.NoError(t, tx.Commit())
		assert.Equal(t, int64(1), c.prepares.Load()-before, "one prepare for 21 inserts")

		var sum int
		require.NoError(t, db.QueryRow(`SELECT SUM(v) FROM kv WHERE v < `+param(pg, "1"), 99).Scan(&sum))
		assert.Equal(t, 190, sum)
		require.NoError(t, db.QueryRow(`SELECT SUM(v) FROM kv WHERE v < `+param(pg, "1"), 10).Scan(&sum))
		assert.Equal(t, 45, sum, "the reused statement binds its new arguments")
		assert.Equal(t, int64(2), c.prepares.Load()-before)
	})
}

// TestSameQueryInsideItsOwnRows: a query run again while its first result
// set is still open (a lookup inside a row loop, in one transaction) gets
// right answers from an uncached statement, and the cached one is free
// again once the first result set is closed.
func TestSameQueryInsideItsOwnRows(t *testing.T) {
	each(t, 16, func(t *testing.T, db *sql.DB, c *counting, pg bool) {
		_, err := db.Exec(`CREATE TABLE n (i INTEGER PRIMARY KEY)`)
		require.NoError(t, err)
		for i := 1; i <= 3; i++ {
			_, err := db.Exec(`INSERT INTO n (i) VALUES (`+param(pg, "1")+`)`, i)
			require.NoError(t, err)
		}
		q := `SELECT i FROM n WHERE i >= ` + param(pg, "1") + ` ORDER BY i`
		tx, err := db.Begin()
		require.NoError(t, err)
		defer tx.Rollback()
		if pg {
			// PostgreSQL cannot run a second query on a connection whose
			// result set is still being read: read the outer one first.
			rows, err := tx.Query(q, 1)
			require.NoError(t, err)
			var outer []int
			for rows.Next() {
				var i int
				require.NoError(t, rows.Scan(&i))
				outer = append(outer, i)
			}
			require.NoError(t, rows.Close())
			assert.Equal(t, []int{1, 2, 3}, outer)
			return
		}
		rows, err := tx.Query(q, 1)
		require.NoError(t, err)
		var pairs [][2]int
		for rows.Next() {
			var i, first int
			require.NoError(t, rows.Scan(&i))
			require.NoError(t, tx.QueryRow(q, i).Scan(&first))
			pairs = append(pairs, [2]int{i, first})
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		assert.Equal(t, [][2]int{{1, 1}, {2, 2}, {3, 3}}, pairs)
		before := c.prepares.Load()
		var got int
		require.NoError(t, tx.QueryRow(q, 2).Scan(&got))
		assert.Equal(t, 2, got)
		assert.Equal(t, before, c.prepares.Load(), "the cached statement is free again")
	})
}

// TestEvictionKeepsTheBound: past its size the least recently used
// statement is closed and prepared again when it comes back.
func TestEvictionKeepsTheBound(t *testing.T) {
	each(t, 2, func(t *testing.T, db *sql.DB, c *counting, _ bool) {
		queries := []string{`SELECT 1`, `SELECT 2`, `SELECT 3`}
		before := c.prepares.Load()
		for range 3 {
			for i, q := range queries {
				var n int
				require.NoError(t, db.QueryRow(q).Scan(&n))
				assert.Equal(t, i+1, n)
			}
		}
		assert.Equal(t, int64(9), c.prepares.Load()-before, "a cycle of 3 through 2 slots misses every time")
		var n int
		require.NoError(t, db.QueryRow(`SELECT 3`).Scan(&n))
		assert.Equal(t, int64(9), c.prepares.Load()-before, "the most recent stays")
	})
}

// TestStaleStatementHealsAfterOneError: PostgreSQL refuses a prepared
// statement whose result columns a schema change altered; that error is
// the caller's, and the statement is prepared again on the next call.
// SQLite re-prepares such statements itself.
func TestStaleStatementHealsAfterOneError(t *testing.T) {
	each(t, 16, func(t *testing.T, db *sql.DB, _ *counting, pg bool) {
		_, err := db.Exec(`CREATE TABLE s (a INTEGER)`)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO s (a) VALUES (1)`)
		require.NoError(t, err)
		cols := func() ([]string, error) {
			rows, err := db.Query(`SELECT * FROM s`)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			return rows.Columns()
		}
		got, err := cols()
		require.NoError(t, err)
		assert.Equal(t, []string{"a"}, got)
		_, err = db.Exec(`ALTER TABLE s ADD COLUMN b INTEGER`)
		require.NoError(t, err)
		got, err = cols()
		if pg {
			require.ErrorContains(t, err, "cached plan must not change result type")
			got, err = cols()
		}
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, got)
	})
}

// TestScriptsAndBadSQL: SQL the driver cannot prepare as one statement (a
// script) still runs, and bad SQL gets the driver's own error.
func TestScriptsAndBadSQL(t *testing.T) {
	each(t, 16, func(t *testing.T, db *sql.DB, _ *counting, _ bool) {
		_, err := db.Exec(`CREATE TABLE a (i INTEGER); CREATE TABLE b (i INTEGER)`)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO b (i) VALUES (7)`)
		require.NoError(t, err, "both tables of the script exist")
		_, err = db.Exec(`SELEKT nonsense`)
		require.ErrorContains(t, err, "syntax error")
		var n int
		require.NoError(t, db.QueryRow(`SELECT i FROM b`).Scan(&n))
		assert.Equal(t, 7, n)
	})
}
