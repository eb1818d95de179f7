package orchestrator

import (
	"errors"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPendingEventsBackpressure: a run may have maxEventsAhead events in
// flight; one more waits until the oldest settles, and flush waits for all
// of them and reports the first failure.
func TestPendingEventsBackpressure(t *testing.T) {
	p := newPendingEvents()
	for range maxEventsAhead {
		p.reserve()
	}
	reserved := make(chan struct{})
	go func() {
		p.reserve()
		close(reserved)
	}()
	select {
	case <-reserved:
		t.Fatal("an event past the bound was taken without waiting")
	default:
	}
	boom := errors.New("disk full")
	p.settle(core.Envelope{}, boom)
	<-reserved // the freed slot lets it in
	flushed := make(chan error)
	go func() { flushed <- p.flush() }()
	for range maxEventsAhead {
		select {
		case <-flushed:
			t.Fatal("flush returned with events still in flight")
		default:
		}
		p.settle(core.Envelope{}, errors.New("later"))
	}
	require.ErrorIs(t, <-flushed, boom, "the first failure is the one reported")
	assert.ErrorIs(t, p.failed(), boom)
}
