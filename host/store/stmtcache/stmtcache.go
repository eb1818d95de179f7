// Package stmtcache keeps each database connection's prepared statements
// by their SQL text, so a query the store runs again on the same connection
// is not parsed and planned again.
//
// It wraps a driver.Connector: every query and exec that database/sql hands
// to a connection (directly or inside a transaction) runs through a
// statement that connection prepared the first time it saw that SQL. The
// store's code is unchanged by it. SQLite (modernc) re-parsed every
// statement, about a tenth of a turn's host CPU; PostgreSQL parses and plans
// an unnamed statement per query.
//
// A statement is used by one query at a time: while a result set from it is
// open, the same SQL on the same connection (a query inside another's row
// loop) runs uncached. A statement whose use failed is dropped and prepared
// again next time, so one that a schema change made stale (PostgreSQL's
// "cached plan must not change result type") heals after one error.
package stmtcache

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
)

// New wraps c so each connection keeps up to size prepared statements,
// least recently used out first.
func New(c driver.Connector, size int) driver.Connector {
	return &connector{inner: c, size: max(size, 1)}
}

// DSNConnector is a driver.Connector for a driver that has none of its
// own: it opens dsn with d.
func DSNConnector(d driver.Driver, dsn string) driver.Connector {
	return dsnConnector{d: d, dsn: dsn}
}

type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

type connector struct {
	inner driver.Connector
	size  int
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	ic, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{inner: ic, size: c.size, byQuery: map[string]*list.Element{}, lru: list.New()}, nil
}

func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

// conn is one connection and its statements. database/sql never uses a
// connection from two goroutines at once (a result set's Close included),
// so it needs no lock.
type conn struct {
	inner   driver.Conn
	size    int
	byQuery map[string]*list.Element // of *entry
	lru     *list.List               // most recently used first
}

type entry struct {
	query string
	stmt  driver.Stmt
	// busy: a result set of the statement is open.
	busy bool
}

// cached returns the connection's statement for query, prepared now if
// it has none; nil when it is busy or the driver cannot prepare the SQL
// (a script of several statements, say): the caller then runs the query
// uncached, and gets the driver's own error if the SQL is bad.
func (c *conn) cached(ctx context.Context, query string) *entry {
	if el, ok := c.byQuery[query]; ok {
		e := el.Value.(*entry)
		if e.busy {
			return nil
		}
		c.lru.MoveToFront(el)
		return e
	}
	st, err := prepare(ctx, c.inner, query)
	if err != nil {
		return nil
	}
	for c.lru.Len() >= c.size {
		if !c.evictOldestIdle() {
			// Every statement has an open result set: use this one once.
			_ = st.Close()
			return nil
		}
	}
	e := &entry{query: query, stmt: st}
	c.byQuery[query] = c.lru.PushFront(e)
	return e
}

// evictOldestIdle closes the least recently used statement with no open
// result set; false when there is none.
func (c *conn) evictOldestIdle() bool {
	for el := c.lru.Back(); el != nil; el = el.Prev() {
		if e := el.Value.(*entry); !e.busy {
			c.drop(e)
			return true
		}
	}
	return false
}

// drop forgets e and closes its statement.
func (c *conn) drop(e *entry) {
	if el, ok := c.byQuery[e.query]; ok && el.Value.(*entry) == e {
		c.lru.Remove(el)
		delete(c.byQuery, e.query)
	}
	_ = e.stmt.Close()
}

func prepare(ctx context.Context, c driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := c.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Prepare(query)
}

// ExecContext runs query through the connection's statement for it.
func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e := c.cached(ctx, query); e != nil {
		if st, ok := e.stmt.(driver.StmtExecContext); ok {
			res, err := st.ExecContext(ctx, args)
			if err != nil {
				c.drop(e)
			}
			return res, err
		}
	}
	if ex, ok := c.inner.(driver.ExecerContext); ok {
		return ex.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

// QueryContext runs query through the connection's statement for it; the
// statement is busy until the result set is closed.
func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if e := c.cached(ctx, query); e != nil {
		if st, ok := e.stmt.(driver.StmtQueryContext); ok {
			r, err := st.QueryContext(ctx, args)
			if err != nil {
				c.drop(e)
				return nil, err
			}
			e.busy = true
			return &rows{Rows: r, done: func() { e.busy = false }}, nil
		}
	}
	if q, ok := c.inner.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

// Close closes the connection's statements, then the connection.
func (c *conn) Close() error {
	var errs []error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		errs = append(errs, el.Value.(*entry).stmt.Close())
	}
	c.lru.Init()
	clear(c.byQuery)
	return errors.Join(append(errs, c.inner.Close())...)
}

// Prepare and PrepareContext are for callers that prepare statements
// themselves (database/sql's DB.Prepare): those are theirs, not cached.
func (c *conn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return prepare(ctx, c.inner, query)
}

// Begin is driver.Conn's; database/sql calls BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.inner.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	if opts.Isolation != driver.IsolationLevel(0) || opts.ReadOnly {
		return nil, errors.New("stmtcache: the driver takes no transaction options")
	}
	//lint:ignore SA1019 the driver has no BeginTx
	return c.inner.Begin()
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// CheckNamedValue lets the driver convert arguments as it would unwrapped;
// without its own checker, database/sql's default conversion applies.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.inner.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
