package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/hashicorp/go-hclog"
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

// recordingQueue is an EventQueue that notes what is queued, in order, and
// logs it at once.
type recordingQueue struct {
	mu     sync.Mutex
	queued []core.EventType
}

func (q *recordingQueue) Append(_ context.Context, _ *core.Run, ev NewEvent) (core.Envelope, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, ev.Type)
	return core.Envelope{Event: ev.Type}, nil
}

func (q *recordingQueue) Enqueue(ctx context.Context, r *core.Run, ev NewEvent, done func(core.Envelope, error)) error {
	env, err := q.Append(ctx, r, ev)
	done(env, err)
	return nil
}

func (q *recordingQueue) types() []core.EventType {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.queued)
}

// TestToolStartedWaitsForItsCall: a tool.started is queued with the next
// event the run emits (its call's closing event, for a quick call), right
// before it, so the two share a commit; one whose call outlasts the linger
// is queued alone; the run's end queues one still held.
func TestToolStartedWaitsForItsCall(t *testing.T) {
	q := &recordingQueue{}
	o := &Orchestrator{events: q, log: hclog.NewNullLogger()}
	ar := newActiveRun(&core.Run{ID: "run_1", AppID: "app_1"}, StartRequest{})
	ctx := context.Background()
	call := func(id string) NewEvent {
		return NewEvent{Type: core.EventToolCompleted, Payload: toolCompletedPayload(id, "t", json.RawMessage("null"))}
	}
	start := func(id string) error { return o.emitToolStarted(ctx, ar, id, "t", json.RawMessage("{}")) }

	require.NoError(t, start("c1"))
	assert.Empty(t, q.types(), "held")
	require.NoError(t, o.emitClosing(ctx, ar, call("c1"), nil, "c1"))
	assert.Equal(t, []core.EventType{core.EventToolStarted, core.EventToolCompleted}, q.types(), "queued together, in order")

	require.NoError(t, start("c2"))
	require.Eventually(t, func() bool { return len(q.types()) == 3 }, 5*time.Second, time.Millisecond,
		"a call that outlasts the linger has its start queued alone")
	require.NoError(t, o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolFailed}, toolFailed{Tool: "t", CallID: "c2"}, "c2"))

	require.NoError(t, start("c3"))
	require.NoError(t, o.emit(ctx, ar, core.EventAssistantDelta, map[string]any{"text": "meanwhile"}))
	assert.Equal(t, []core.EventType{core.EventToolStarted, core.EventToolCompleted, core.EventToolStarted, core.EventToolFailed,
		core.EventToolStarted, core.EventAssistantDelta}, q.types(), "anything the run emits next goes after it")

	require.NoError(t, start("c4"))
	require.NoError(t, o.emit(ctx, ar, core.EventRunFailed, map[string]any{"status": "failed"}))
	got := q.types()
	assert.Equal(t, []core.EventType{core.EventToolStarted, core.EventRunFailed}, got[len(got)-2:], "the end queues it first")
}

// discardQueue is an event queue that keeps nothing: benchmarks of the
// host's own work around events.
type discardQueue struct{}

func (discardQueue) Append(_ context.Context, _ *core.Run, ev NewEvent) (core.Envelope, error) {
	return core.Envelope{Event: ev.Type}, nil
}

func (q discardQueue) Enqueue(ctx context.Context, r *core.Run, ev NewEvent, done func(core.Envelope, error)) error {
	env, err := q.Append(ctx, r, ev)
	done(env, err)
	return nil
}

// BenchmarkToolCallEvents: the host's own work for a tool call's two
// events, tool.started then tool.completed, without the log's: their
// payloads and the open call's bookkeeping. The 64 KiB input is an
// apply_patch call with a large patch.
func BenchmarkToolCallEvents(b *testing.B) {
	for _, size := range []int{100, 64 << 10} {
		b.Run(fmt.Sprintf("input=%dB", size), func(b *testing.B) {
			o := &Orchestrator{events: discardQueue{}, log: hclog.NewNullLogger()}
			ar := newActiveRun(&core.Run{ID: "run_1", AppID: "app_1"}, StartRequest{})
			ctx := context.Background()
			input, err := json.Marshal(map[string]string{"path": "src/app.ts", "patch": strings.Repeat("+a line of code\n", size/16)})
			require.NoError(b, err)
			output := json.RawMessage(`{"ok":true}`)
			for i := 0; b.Loop(); i++ {
				id := "call_" + strconv.Itoa(i)
				if err := o.emitToolStarted(ctx, ar, id, "t", input); err != nil {
					b.Fatal(err)
				}
				if err := o.emitClosing(ctx, ar, NewEvent{Type: core.EventToolCompleted, Payload: toolCompletedPayload(id, "t", output)}, nil, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
