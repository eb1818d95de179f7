package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/lib/pq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A database has bad moments that end on their own: a PostgreSQL restart
// or failover drops every connection for a few seconds, a full disk frees
// up, a lock clears. A write that fails for such a reason is retried, with
// backoff, for as long as the outage has lasted less than the store's
// outage window; its caller waits meanwhile (the event log's writer stops
// taking events, so engines block on emit and nothing is lost or shown
// early). Past the window the write fails closed with
// core.CodeStoreUnavailable, naming the cause. The store's Health says
// meanwhile that the database is not taking writes, and why.

// DefaultOutageWindow is how long a write waits out an unavailable
// database before it fails with core.CodeStoreUnavailable.
const DefaultOutageWindow = 30 * time.Second

// retryBackoff bounds the wait between two tries of a write: short at
// first (a dropped connection is often back at once), then no more than
// maxRetryBackoff, so a write goes through soon after the database is back.
const (
	firstRetryBackoff = 20 * time.Millisecond
	maxRetryBackoff   = 200 * time.Millisecond
)

// Health is whether the database takes writes now.
type Health struct {
	// OK is false while writes fail for a reason that may clear, or after
	// one failed past the outage window and nothing was written since.
	OK bool `json:"ok"`
	// Cause says why not: "connection refused", "disk full" …
	Cause string `json:"cause,omitempty"`
	// Since is when writes began to fail.
	Since time.Time `json:"since,omitzero"`
	// Window is the outage window: how long writes wait before they fail.
	Window time.Duration `json:"-"`
}

// outage tracks the writes failing now. Each retrying write holds an entry
// while it fails; the host's lease renewal holds one too, so an outage is
// seen within a second even when nothing else writes.
type outage struct {
	mu      sync.Mutex
	window  time.Duration
	next    int
	failing map[string]failure
	// gaveUp is when a write last failed past the window; cleared by the
	// next write that succeeds.
	gaveUp      time.Time
	gaveUpCause string
	// back is closed (and replaced) whenever a write succeeds after a
	// failure: writes waiting out the outage try again at once.
	back chan struct{}
}

type failure struct {
	since time.Time
	cause string
}

func newOutage() *outage {
	return &outage{window: DefaultOutageWindow, failing: map[string]failure{}, back: make(chan struct{})}
}

// SetOutageWindow sets how long writes wait out an unavailable database
// (DefaultOutageWindow unless set); zero or less fails them at once.
func (s *Store) SetOutageWindow(d time.Duration) {
	s.outage.mu.Lock()
	s.outage.window = d
	s.outage.mu.Unlock()
}

// Health says whether the database takes writes now (see Health).
func (s *Store) Health() Health {
	o := s.outage
	o.mu.Lock()
	defer o.mu.Unlock()
	h := Health{OK: true, Window: o.window}
	for _, f := range o.failing {
		if h.OK || f.since.Before(h.Since) {
			h.Since, h.Cause = f.since, f.cause
		}
		h.OK = false
	}
	if h.OK && !o.gaveUp.IsZero() {
		h.OK, h.Since, h.Cause = false, o.gaveUp, o.gaveUpCause
	}
	return h
}

// fail records that the write holding token (a new one when token is "")
// failed for cause, and returns its token and whether the outage has now
// lasted the window.
func (o *outage) fail(token, cause string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if token == "" {
		o.next++
		token = "write-" + strconv.Itoa(o.next)
	}
	f, ok := o.failing[token]
	if !ok {
		f.since = now
	}
	f.cause = cause
	o.failing[token] = f
	start := now
	for _, f := range o.failing {
		if f.since.Before(start) {
			start = f.since
		}
	}
	return token, now.Sub(start) >= o.window
}

// giveUp ends the failing write's entry: it failed past the window.
func (o *outage) giveUp(token, cause string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.failing, token)
	o.gaveUp, o.gaveUpCause = time.Now(), cause
}

// succeeded ends the write's entry (token "" for a write that never
// failed) and clears a give-up: the database took a write.
func (o *outage) succeeded(token string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, was := o.failing[token]; !was && o.gaveUp.IsZero() {
		return
	}
	delete(o.failing, token)
	o.gaveUp, o.gaveUpCause = time.Time{}, ""
	close(o.back)
	o.back = make(chan struct{})
}

// forget ends the write's entry without a verdict on the database: it
// failed for another reason, or its caller gave up.
func (o *outage) forget(token string) {
	if token == "" {
		return
	}
	o.mu.Lock()
	delete(o.failing, token)
	o.mu.Unlock()
}

// recovered is closed when a write next succeeds.
func (o *outage) recovered() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.back
}

// retry runs write until it succeeds, fails for a reason that will not
// clear by waiting, or the outage has lasted the window (then the error is
// core.CodeStoreUnavailable, wrapping the last failure). what names the
// write in that error.
func (s *Store) retry(ctx context.Context, what string, write func(ctx context.Context) error) error {
	token := ""
	backoff := firstRetryBackoff
	for {
		err := write(ctx)
		if err == nil {
			s.outage.succeeded(token)
			return nil
		}
		cause, ok := transientCause(err)
		if !ok || ctx.Err() != nil {
			s.outage.forget(token)
			return err
		}
		var past bool
		token, past = s.outage.fail(token, cause)
		if past {
			s.outage.giveUp(token, cause)
			return unavailable(what, cause, err)
		}
		select {
		case <-ctx.Done():
			s.outage.forget(token)
			return err
		case <-s.outage.recovered():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// Retry runs write as the store runs its own writes while the database is
// unavailable: again, with backoff, while the outage has lasted less than
// the outage window, then failing with core.CodeStoreUnavailable. It is
// for a caller's step that spans several store calls or feeds one from a
// stream (a run's result), which the store cannot try again by itself.
// write must be safe to run again after it failed.
func (s *Store) Retry(ctx context.Context, what string, write func(ctx context.Context) error) error {
	return s.retry(ctx, what, write)
}

// unavailable is the error of a write that gave up on the database.
func unavailable(what, cause string, err error) error {
	return fmt.Errorf("%w: %w", core.Errf(core.CodeStoreUnavailable, "", "%s: the database did not take the write within the outage window (%s)", what, cause), err)
}

// Transient reports whether err is a store failure that may clear by
// waiting (the database restarting, a lost connection, a full disk), and
// why in a few words.
func Transient(err error) (cause string, ok bool) {
	return transientCause(err)
}

// transientCause classifies err: whether waiting may clear it, and a
// short cause for people ("connection refused", "disk full").
func transientCause(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		switch {
		case pqErr.Code.Class() == "08":
			return "connection lost: " + pqErr.Message, true
		case pqErr.Code == "57P01", pqErr.Code == "57P02", pqErr.Code == "57P03":
			return "server restarting: " + pqErr.Message, true
		case pqErr.Code == "53100":
			return "disk full: " + pqErr.Message, true
		case pqErr.Code == "53300":
			return "too many connections", true
		case pqErr.Code == "40001", pqErr.Code == "40P01":
			return "transaction conflict: " + pqErr.Message, true
		}
		return "", false
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return "disk full", true
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return "database locked", true
		case sqlite3.SQLITE_IOERR:
			return "disk I/O error", true
		}
		return "", false
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset", true
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection lost", true
	case errors.Is(err, context.DeadlineExceeded):
		return "the database did not answer in time", true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return "network: " + netErr.Error(), true
	}
	return "", false
}
