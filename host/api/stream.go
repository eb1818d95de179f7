package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/gin-gonic/gin"
)

// streamPage is how many events one read of the log serves.
const streamPage = 500

// streamRun serves a run's events as Server-Sent Events from the durable
// log: `id: <seq>`, `event: <type>`, `data: <envelope>`. Last-Event-ID (or
// ?after_seq=) resumes exactly after the last event a client saw. A finished
// run's stream replays and closes. The handler never holds events in memory
// for a slow client: it reads the next page from the log when it can write.
func (s *Server) streamRun(c *gin.Context) {
	r, ok := s.runScope(c)
	if !ok {
		return
	}
	from := c.GetHeader("Last-Event-ID")
	if from == "" {
		from = c.Query("after_seq")
	}
	after, err := seqParam(from)
	if err != nil {
		_ = c.Error(err)
		return
	}
	ctx := c.Request.Context()
	if after > 0 {
		// Resumed at (or past) the terminal event, as a browser's
		// EventSource does after the server closed a finished stream:
		// 204 closes it at once and tells EventSource to stop reconnecting.
		ended, err := s.endedAt(ctx, r, after)
		if err != nil {
			_ = c.Error(err)
			return
		}
		if ended {
			c.Status(http.StatusNoContent)
			return
		}
	}
	// Subscribe before the first read so that no append between the read
	// and the wait goes unnoticed.
	wake, stop := s.deps.Hub.Subscribe(r.ID)
	defer stop()

	w := c.Writer
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The header goes out with the first events when the log already has
	// some (a run's stream opened after its create has run.accepted): one
	// write and one wake-up of the client instead of two. It goes alone
	// before the first wait for events.

	heartbeat := time.NewTicker(s.deps.Heartbeat)
	defer heartbeat.Stop()
	beat := func() bool {
		if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
			return false
		}
		w.Flush()
		return true
	}
	readBackoff := time.Duration(0)
	var frame []byte
	for {
		evs, ok := s.deps.Hub.Since(r.ID, after, streamPage)
		if !ok {
			var err error
			evs, err = s.deps.Store.ListEvents(ctx, r.ID, r.AppID, after, streamPage)
			if cause, transient := store.Transient(err); transient && ctx.Err() == nil {
				// The database is away for a moment (a restart, a lost
				// connection): the client keeps its stream, with
				// heartbeats, and gets the events once it is back.
				if readBackoff == 0 {
					s.log.Warn("stream read waits for the database", "run", r.ID, "cause", cause)
				}
				readBackoff = min(max(2*readBackoff, 50*time.Millisecond), time.Second)
				w.Flush() // the header, if it has not gone yet
				select {
				case <-ctx.Done():
					return
				case <-time.After(readBackoff):
				case <-heartbeat.C:
					if !beat() {
						return
					}
				}
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					s.log.Error("stream read", "run", r.ID, "error", err)
				}
				return
			}
			readBackoff = 0
		}
		for _, e := range evs {
			// By hand, not fmt and json.Marshal: every event of every
			// stream passes here, some with a whole file in their payload.
			frame = appendSSEFrame(frame[:0], e)
			if _, err := w.Write(frame); err != nil {
				return
			}
			if cap(frame) > maxKeptFrame {
				frame = nil // one big event: do not hold its size for the stream's life
			}
			after = e.Seq
			if e.Event.Terminal() {
				// Not flushed here: the server sends what is left with
				// the response's end as the handler returns, one write
				// where a flush and the end were two.
				return
			}
		}
		w.Flush()
		if len(evs) == streamPage {
			continue // more is already in the log
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-heartbeat.C:
			if !beat() {
				return
			}
		}
	}
}

// maxKeptFrame is the largest frame buffer a stream keeps between events.
const maxKeptFrame = 64 << 10

// appendSSEFrame appends e as one SSE frame: its seq as the id, its type
// as the event, the envelope as the data. The envelope's JSON is one line
// (compact JSON escapes every line break inside a string).
func appendSSEFrame(dst []byte, e core.Envelope) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, e.Event...)
	dst = append(dst, "\ndata: "...)
	if b, err := e.AppendJSON(dst); err == nil {
		dst = b
	}
	return append(dst, "\n\n"...)
}
