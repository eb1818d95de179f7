package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseFrame is the frame the host writes for event seq of type typ.
func sseFrame(seq int, typ string) string {
	return fmt.Sprintf("id: %d\nevent: %s\ndata: {\"event\":%q,\"run_id\":\"run_1\",\"app_id\":\"app_1\",\"seq\":%d,\"payload\":{}}\n\n", seq, typ, typ, seq)
}

// frames is the frames of events from..to, the last a run.completed
// when it is the run's end (end).
func frames(from, to, end int) string {
	var b strings.Builder
	for seq := from; seq <= to; seq++ {
		typ := "assistant.delta"
		if seq == end {
			typ = "run.completed"
		}
		b.WriteString(sseFrame(seq, typ))
	}
	return b.String()
}

// scripted is a stream endpoint that answers its n-th connection with
// answers[n] and records each connection's Last-Event-ID.
type scripted struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter, r *http.Request)
	lastIDs []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.lastIDs)
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	s.mu.Unlock()
	if n >= len(s.answers) {
		http.Error(w, `{"detail":{"code":"TEST_OVER","message":"no more answers"}}`, http.StatusGone)
		return
	}
	s.answers[n](w, r)
}

func (s *scripted) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lastIDs...)
}

// stream answers 200 with body, then ends the connection.
func stream(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

// fast makes Follow's reconnections immediate enough for tests.
var fast = FollowOptions{Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}

func follow(t *testing.T, s *scripted, after int64, o FollowOptions) ([]int64, error) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var got []int64
	err := New(srv.URL, "tok").Follow(context.Background(), "app_1", "run_1", after, o, func(e Event) error {
		got = append(got, e.Seq)
		return nil
	})
	return got, err
}

func seqs(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// TestFollowResumesExactlyOnce: connections that end early (one in the
// middle of a frame), replay events already delivered, skip one, or
// bring nothing for the idle time are resumed from the last event
// delivered; every event reaches the callback once, in order.
func TestFollowResumesExactlyOnce(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	s := &scripted{answers: []func(http.ResponseWriter, *http.Request){
		// 1–4, then half of 5.
		stream(frames(1, 4, 12) + sseFrame(5, "assistant.delta")[:20]),
		// A replay of 3 and 4, a heartbeat, then 5–6 and a gap (8).
		stream(frames(3, 4, 12) + ": keep-alive\n\n" + frames(5, 6, 12) + sseFrame(8, "assistant.delta")),
		// 7, then silence.
		func(w http.ResponseWriter, r *http.Request) {
			stream(frames(7, 7, 12))(w, r)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-hang:
			}
		},
		// CRLF line ends, the rest through the terminal event.
		stream(strings.ReplaceAll(frames(8, 12, 12), "\n", "\r\n")),
	}}
	o := fast
	o.Idle = 100 * time.Millisecond
	got, err := follow(t, s, 0, o)
	require.NoError(t, err)
	assert.Equal(t, seqs(1, 12), got)
	assert.Equal(t, []string{"", "4", "6", "7"}, s.ids())
}

// TestFollowEnds: a stream resumed after its terminal event answers 204
// (nothing delivered, no error); an answer retrying cannot change is
// returned at once; an error of the callback stops following.
func TestFollowEnds(t *testing.T) {
	t.Run("204", func(t *testing.T) {
		s := &scripted{answers: []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
		}}
		got, err := follow(t, s, 9, fast)
		require.NoError(t, err)
		assert.Empty(t, got)
		assert.Equal(t, []string{"9"}, s.ids())
	})
	t.Run("not found", func(t *testing.T) {
		s := &scripted{answers: []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, `{"detail":{"code":"NOT_FOUND","message":"run run_1 not found"}}`, http.StatusNotFound)
			},
		}}
		_, err := follow(t, s, 0, fast)
		var ae *Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "NOT_FOUND", ae.Code)
		assert.Equal(t, http.StatusNotFound, ae.Status)
		assert.Len(t, s.ids(), 1, "no retry")
	})
	t.Run("callback", func(t *testing.T) {
		srv := httptest.NewServer(&scripted{answers: []func(http.ResponseWriter, *http.Request){stream(frames(1, 3, 3))}})
		t.Cleanup(srv.Close)
		stop := errors.New("stop here")
		var got []int64
		err := New(srv.URL, "tok").Follow(context.Background(), "app_1", "run_1", 0, fast, func(e Event) error {
			got = append(got, e.Seq)
			if e.Seq == 2 {
				return stop
			}
			return nil
		})
		assert.Equal(t, stop, err)
		assert.Equal(t, []int64{1, 2}, got)
	})
}

// TestFollowGivesUp: a host that answers only 503 (or not at all) is
// retried until it has been unheard of for GiveUp, then Follow returns a
// *LostError naming the last event delivered.
func TestFollowGivesUp(t *testing.T) {
	unavailable := func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"detail":{"code":"STORE_UNAVAILABLE","message":"later"}}`, http.StatusServiceUnavailable)
	}
	s := &scripted{answers: []func(http.ResponseWriter, *http.Request){stream(frames(1, 2, 9))}}
	for range 1000 {
		s.answers = append(s.answers, unavailable)
	}
	o := fast
	o.GiveUp = 50 * time.Millisecond
	var retries int
	o.OnRetry = func(after int64, _ time.Duration, _ error) { retries++ }
	got, err := follow(t, s, 0, o)
	var lost *LostError
	require.ErrorAs(t, err, &lost)
	assert.Equal(t, int64(2), lost.After)
	assert.Equal(t, "STORE_UNAVAILABLE", CodeOf(err))
	assert.Equal(t, seqs(1, 2), got)
	assert.Equal(t, len(s.ids())-1, retries)
	assert.Greater(t, retries, 1)

	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	err = New(srv.URL, "tok").Follow(context.Background(), "app_1", "run_1", 0, o, func(Event) error { return nil })
	var ce *ConnError
	require.ErrorAs(t, err, &lost)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, srv.URL, ce.URL)
}

// TestSSEReader: frames end at a blank line; comments, CRLF, several data
// lines and unknown fields are read as the SSE spec says; a frame cut off
// by the end of the stream is an error, never a frame.
func TestSSEReader(t *testing.T) {
	in := ": keep-alive\n\nid: 1\nevent: a\nretry: 10\ndata: x\ndata:y\n\r\nid: 2\r\nevent: b\r\ndata: z\r\n\r\nid: 3\nevent: c\ndata: cut"
	r := newSSEReader(strings.NewReader(in))
	var got []frame
	for {
		f, err := r.next()
		if err != nil {
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
			break
		}
		got = append(got, f)
	}
	assert.Equal(t, []frame{{}, {id: "1", event: "a", data: []string{"x", "y"}}, {id: "2", event: "b", data: []string{"z"}}}, got)

	_, err := newSSEReader(strings.NewReader("id: 1\n\n")).next()
	require.NoError(t, err)
	_, err = newSSEReader(strings.NewReader("")).next()
	assert.ErrorIs(t, err, io.EOF, "a stream that ends between frames ends cleanly")
}

// FuzzSSEReader: any bytes are read into frames or an error, never a
// panic, and every frame read was complete (the input had its blank line).
func FuzzSSEReader(f *testing.F) {
	f.Add(frames(1, 3, 3))
	f.Add(": keep-alive\n\n")
	f.Add("id: 1\r\nevent: x\r\ndata: {}\r\n\r\n")
	f.Add("data: a\ndata: b\n\nid")
	f.Fuzz(func(t *testing.T, in string) {
		r := newSSEReader(strings.NewReader(in))
		for range len(in) + 1 {
			if _, err := r.next(); err != nil {
				return
			}
		}
		t.Fatalf("more frames than bytes in %q", in)
	})
}
