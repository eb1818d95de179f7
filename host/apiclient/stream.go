package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Event is one event of a run's log: the envelope the stream's data lines
// and the events endpoint carry.
type Event struct {
	// Type is the envelope's "event": run.accepted, assistant.delta, …
	Type        string          `json:"event"`
	RunID       string          `json:"run_id"`
	AppID       string          `json:"app_id"`
	Seq         int64           `json:"seq"`
	TS          time.Time       `json:"ts"`
	Payload     json.RawMessage `json:"payload"`
	Diagnostics json.RawMessage `json:"diagnostics,omitempty"`
	// Raw is the envelope as the host sent it.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the envelope as sent in Raw.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = Event(p)
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Terminal reports whether an event type ends a run's log: exactly one of
// these is a finished run's last event.
func Terminal(eventType string) bool {
	return eventType == "run.completed" || eventType == "run.failed" || eventType == "run.cancelled"
}

// FollowOptions bound Follow's reconnection; zero fields take the
// defaults.
type FollowOptions struct {
	// Backoff is the delay before the first reconnection (200 ms); each
	// failed attempt doubles it, up to MaxBackoff (5 s).
	Backoff, MaxBackoff time.Duration
	// GiveUp is how long Follow keeps reconnecting without hearing from
	// the host (no event, no heartbeat) before it returns a *LostError
	// (1 min: a host restart takes seconds).
	GiveUp time.Duration
	// Idle is how long a connection may bring nothing before it is taken
	// as dead (45 s: the host sends a heartbeat every 15 s).
	Idle time.Duration
	// OnRetry, when set, is told of each reconnection before its delay:
	// the last event delivered and why the connection ended.
	OnRetry func(after int64, delay time.Duration, cause error)
}

func (o FollowOptions) withDefaults() FollowOptions {
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	if o.MaxBackoff < o.Backoff {
		o.MaxBackoff = max(5*time.Second, o.Backoff)
	}
	if o.GiveUp <= 0 {
		o.GiveUp = time.Minute
	}
	if o.Idle <= 0 {
		o.Idle = 45 * time.Second
	}
	return o
}

// LostError is Follow giving up: the host could not be heard from for
// FollowOptions.GiveUp. The run goes on; After is the last event
// delivered, where following again starts.
type LostError struct {
	After int64
	Err   error
}

// Error says since when and why.
func (e *LostError) Error() string {
	return fmt.Sprintf("lost the run's stream after event %d: %v", e.After, e.Err)
}

// Unwrap is the last connection's error.
func (e *LostError) Unwrap() error { return e.Err }

// handlerError carries an error of Follow's callback out of the stream.
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }

// Follow delivers a run's events after seq after to fn, each exactly once
// and in seq order, through the run's terminal event; then it returns nil
// (also when the run had ended at or before after: nothing is delivered).
// A connection that drops, or brings nothing for Idle, is resumed with
// Last-Event-ID from the last event delivered, after a bounded backoff; a
// host unheard of for GiveUp is a *LostError. An answer that retrying
// would not change (401, 404, …) is returned as its *Error, and an error
// of fn stops following and is returned as it is. fn runs on the caller's
// goroutine and may block (a question to the user): the connection waits.
func (c *Client) Follow(ctx context.Context, app, run string, after int64, o FollowOptions, fn func(Event) error) error {
	o = o.withDefaults()
	last := after
	heard := time.Now()
	delay := o.Backoff
	for {
		before := last
		done, err := c.streamOnce(ctx, app, run, &last, &heard, o.Idle, fn)
		if done {
			return nil
		}
		var he handlerError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &he):
			return he.err
		case !retryable(err):
			return err
		}
		if last > before {
			delay = o.Backoff
		}
		if time.Since(heard) >= o.GiveUp {
			return &LostError{After: last, Err: err}
		}
		if o.OnRetry != nil {
			o.OnRetry(last, delay, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, o.MaxBackoff)
	}
}

// retryable: the connection or the host's state, not the request, failed.
func retryable(err error) bool {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Status >= 500 || ae.Status == http.StatusTooManyRequests || ae.Status == http.StatusRequestTimeout
	}
	return true
}

// errIdle is a connection that brought nothing for FollowOptions.Idle.
var errIdle = errors.New("nothing from the host, not even a heartbeat")

// streamOnce reads one connection of the stream from *last on, delivering
// new events in order and advancing *last; done is true once the run's
// terminal event is delivered (or the host says there is nothing after
// *last). *heard is when the host was last heard from.
func (c *Client) streamOnce(ctx context.Context, app, run string, last *int64, heard *time.Time, idle time.Duration, fn func(Event) error) (done bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := http.Header{"Accept": {"text/event-stream"}}
	if *last > 0 {
		h.Set("Last-Event-ID", strconv.FormatInt(*last, 10))
	}
	resp, err := c.send(cctx, request{method: http.MethodGet, path: agentPath(app, "/runs/"+seg(run)+"/stream"), header: h})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	*heard = time.Now()
	if resp.StatusCode == http.StatusNoContent {
		// Resumed at or past the terminal event: nothing more will come.
		return true, nil
	}
	var timedOut atomic.Bool
	watchdog := time.AfterFunc(idle, func() { timedOut.Store(true); cancel() })
	defer watchdog.Stop()
	rd := newSSEReader(resp.Body)
	for {
		f, err := rd.next()
		if err != nil {
			if timedOut.Load() {
				return false, fmt.Errorf("%w for %s", errIdle, idle)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return false, errors.New("the stream ended before the run did")
			}
			return false, err
		}
		*heard = time.Now()
		watchdog.Reset(idle)
		if len(f.data) == 0 {
			continue // a heartbeat
		}
		var ev Event
		if err := json.Unmarshal([]byte(strings.Join(f.data, "\n")), &ev); err != nil {
			return false, fmt.Errorf("event %s: the data is not an event envelope: %w", f.id, err)
		}
		if f.id != "" {
			if ev.Seq, err = strconv.ParseInt(f.id, 10, 64); err != nil {
				return false, fmt.Errorf("event id %q is not a seq", f.id)
			}
		}
		if ev.Type == "" {
			ev.Type = f.event
		}
		switch {
		case ev.Seq <= *last:
			continue // seen already (a replay after a reconnection)
		case ev.Seq != *last+1:
			// The log is gap-free: a gap is a broken stream. Reconnecting
			// from the last delivered event fills it.
			return false, fmt.Errorf("event %d arrived after event %d", ev.Seq, *last)
		}
		watchdog.Stop()
		if err := fn(ev); err != nil {
			return false, handlerError{err}
		}
		*last = ev.Seq
		if Terminal(ev.Type) {
			return true, nil
		}
		watchdog.Reset(idle)
	}
}

// maxSSELine bounds one line of the stream (an event's data is one line).
const maxSSELine = 16 << 20

// sseReader reads Server-Sent Events frames.
type sseReader struct{ r *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// frame is one dispatched SSE frame; a comment-only frame (a heartbeat)
// has no data.
type frame struct {
	id, event string
	data      []string
}

// line reads one line without its end (\n or \r\n); a last line cut off
// by the end of the stream is not a line (io.ErrUnexpectedEOF).
func (s *sseReader) line() (string, error) {
	var buf []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxSSELine {
			return "", fmt.Errorf("a line of the stream is over %d bytes", maxSSELine)
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(buf) > 0 {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		return strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r"), nil
	}
}

// next reads up to the blank line that ends a frame. Only a complete
// frame is returned: one cut off by the end of the stream is an error.
func (s *sseReader) next() (frame, error) {
	var f frame
	seen := false
	for {
		line, err := s.line()
		if err != nil {
			if errors.Is(err, io.EOF) && seen {
				err = io.ErrUnexpectedEOF
			}
			return frame{}, err
		}
		if line == "" {
			if seen {
				return f, nil
			}
			continue
		}
		seen = true
		if strings.HasPrefix(line, ":") {
			continue // a comment: a heartbeat
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.id = value
		case "event":
			f.event = value
		case "data":
			f.data = append(f.data, value)
		}
	}
}
