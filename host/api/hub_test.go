package api

import (
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
)

func ev(seq int64) core.Envelope { return core.Envelope{RunID: "r", Seq: seq} }

func seqsOf(es []core.Envelope) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func TestHubTail(t *testing.T) {
	h := NewHub()
	h.Publish(ev(2)) // nobody watches, and not from its start: not kept
	_, ok := h.Since("r", 0, 10)
	assert.False(t, ok, "an unwatched run has no tail: read the log")

	wake, stop := h.Subscribe("r")
	_, ok = h.Since("r", 0, 10)
	assert.False(t, ok, "an empty tail proves nothing")
	h.Publish(ev(5))
	h.Publish(ev(6))
	h.Publish(ev(7))
	select {
	case <-wake:
	default:
		t.Fatal("no wake-up")
	}
	got, ok := h.Since("r", 5, 10)
	assert.True(t, ok)
	assert.Equal(t, []int64{6, 7}, seqsOf(got))
	got, ok = h.Since("r", 5, 1)
	assert.True(t, ok)
	assert.Equal(t, []int64{6}, seqsOf(got), "max is honoured")
	got, ok = h.Since("r", 7, 10)
	assert.True(t, ok, "caught up")
	assert.Empty(t, got)
	_, ok = h.Since("r", 3, 10)
	assert.False(t, ok, "events 4 and 5 are not in the tail: read the log")

	h.Publish(ev(9)) // a hole: the tail restarts
	_, ok = h.Since("r", 7, 10)
	assert.False(t, ok)
	for i := int64(10); i < 10+tailSize+5; i++ {
		h.Publish(ev(i))
	}
	_, ok = h.Since("r", 9, 10)
	assert.False(t, ok, "the oldest events fell out of the bounded tail")
	got, ok = h.Since("r", 10+tailSize+3, 10)
	assert.True(t, ok)
	assert.Equal(t, []int64{10 + tailSize + 4}, seqsOf(got))

	stop()
	_, ok = h.Since("r", 0, 10)
	assert.False(t, ok, "the tail goes with the last subscriber")
}

// TestHubEarlyTail: the first events of a run nobody streams yet are kept
// (for the newest earlyRuns runs, earlyEvents each) and become its tail when
// a stream subscribes, so a stream opened right after the run was created
// reads no log.
func TestHubEarlyTail(t *testing.T) {
	h := NewHub()
	for seq := int64(1); seq <= 3; seq++ {
		h.Publish(ev(seq))
	}
	_, stop := h.Subscribe("r")
	got, ok := h.Since("r", 0, 10)
	assert.True(t, ok, "the early events are the tail")
	assert.Equal(t, []int64{1, 2, 3}, seqsOf(got))
	stop()
	_, ok = h.Since("r", 0, 10)
	assert.False(t, ok, "taken by the stream, gone with it")

	long := func(seq int64) core.Envelope { return core.Envelope{RunID: "long", Seq: seq} }
	for seq := int64(1); seq <= earlyEvents+5; seq++ {
		h.Publish(long(seq))
	}
	_, stop = h.Subscribe("long")
	_, ok = h.Since("long", 0, 1000)
	assert.False(t, ok, "a run that outgrew its early tail has none: the stream reads the log")
	_, ok = h.Since("long", earlyEvents, 10)
	assert.False(t, ok, "and is never told it caught up with a partial tail")
	stop()

	for i := range earlyRuns + 1 {
		h.Publish(core.Envelope{RunID: fmt.Sprintf("run%d", i), Seq: 1})
	}
	assert.Len(t, h.early, earlyRuns, "only the newest runs are kept")
	_, kept := h.early["run0"]
	assert.False(t, kept, "the oldest went first")
}

// TestHubOtherHosts: another host's commits reach a watched run's tail
// when the notification carries the events; a bare hint past the tail
// drops the tail (streams read the log); a hint the tail covers, and an
// event it holds already, change nothing; Resync drops every tail.
func TestHubOtherHosts(t *testing.T) {
	h := NewHub()
	wake, stop := h.Subscribe("r")
	defer stop()
	h.Publish(ev(1))
	h.Publish(ev(2))
	<-wake
	h.Notify("r", 4, []core.Envelope{ev(3), ev(4)})
	select {
	case <-wake:
	default:
		t.Fatal("no wake-up for another host's events")
	}
	got, ok := h.Since("r", 1, 10)
	assert.True(t, ok)
	assert.Equal(t, []int64{2, 3, 4}, seqsOf(got))

	h.Publish(ev(4)) // held already: no restart of the tail
	got, ok = h.Since("r", 0, 10)
	assert.True(t, ok)
	assert.Equal(t, []int64{1, 2, 3, 4}, seqsOf(got))

	h.Notify("r", 3, nil) // covered by the tail
	_, ok = h.Since("r", 0, 10)
	assert.True(t, ok)

	h.Notify("r", 6, nil) // events the tail lacks: read the log
	select {
	case <-wake:
	default:
		t.Fatal("no wake-up for a hint")
	}
	_, ok = h.Since("r", 4, 10)
	assert.False(t, ok, "the tail cannot prove it reaches seq 6")

	h.Notify("r", 9, []core.Envelope{ev(8), ev(9)})
	_, ok = h.Since("r", 6, 10)
	assert.False(t, ok, "7 is missing: read the log")
	got, ok = h.Since("r", 7, 10)
	assert.True(t, ok)
	assert.Equal(t, []int64{8, 9}, seqsOf(got))

	h.Resync()
	_, ok = h.Since("r", 8, 10)
	assert.False(t, ok, "after a resync every stream reads the log")
}
