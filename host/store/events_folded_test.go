package store

import (
	"context"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFoldedBatches: on PostgreSQL a run's end (and a status change) with
// only its own events before it is written as one statement, not a
// transaction of four round trips, and still does what the transaction
// did: everything or, for a run another host took over, nothing at all
// (no event, no chat turn, no count, no change to the run); the events'
// notification reaches the other hosts; a refused change keeps its
// events.
func TestFoldedBatches(t *testing.T) {
	a, b, user, suffix := hostsWithUser(t, "fold")
	ctx := context.Background()

	// Other hosts hear the end: the notification is sent by the
	// statement's insert itself.
	heard := make(chan int64, 16)
	listenCtx, stop := context.WithCancel(ctx)
	defer stop()
	kept := "run_kept_" + suffix
	require.NoError(t, b.Listen(listenCtx, Notices{Self: "b/1", Event: func(runID string, seq int64, _ []core.Envelope) {
		if runID == kept {
			heard <- seq
		}
	}}))

	start := func(id, chat string) *core.Run {
		r := newRun(id)
		r.UserID, r.ChatSessionID = user, chat
		_, err := a.StartRun(ctx, r, &core.ChatTurn{MessageID: "msg_" + id + "_user", Content: "say hi", NewSession: true}, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		running := *r
		running.Status = core.RunRunning
		lane := a.lane(r.ID)
		folded := lane.folded.Load()
		_, err = a.TransitionInOrder(ctx, &running, core.Sources(core.RunRunning))
		require.NoError(t, err)
		assert.Equal(t, folded+1, lane.folded.Load(), "a status change alone is one statement")
		return &running
	}
	finish := func(r *core.Run) (core.Envelope, *core.Run, error) {
		done := *r
		done.Status, done.OutputText = core.RunCompleted, "hi"
		return a.FinishRun(ctx, &done, core.Sources(core.RunCompleted), core.EventInput{Type: core.EventRunCompleted, Payload: []byte(`{"status":"completed"}`)},
			&core.ChatTurn{MessageID: "msg_" + r.ID + "_answer", Content: "hi"})
	}

	// Kept: the end and the delta before it, in one statement.
	r := start(kept, "chat_kept_"+suffix)
	lane := a.lane(r.ID)
	folded := lane.folded.Load()
	delta := enqueued(t, a, r, core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"hi"}`)})
	env, got, err := finish(r)
	require.NoError(t, err)
	_, derr := delta()
	require.NoError(t, derr)
	assert.Greater(t, lane.folded.Load(), folded, "the end went as one statement")
	assert.Equal(t, int64(3), env.Seq)
	require.NotNil(t, got)
	assert.Equal(t, core.RunCompleted, got.Status)
	assert.Equal(t, "hi", got.OutputText)
	msgs, err := a.ChatMessages(ctx, r.ChatSessionID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "assistant", msgs[1].Role)
	session, err := a.GetChatSession(ctx, r.ChatSessionID)
	require.NoError(t, err)
	assert.Equal(t, env.TS.UnixMilli(), session.UpdatedAt)
	count, _ := messageCount(t, a, r.ChatSessionID)
	assert.Equal(t, 2, count)
	deadline := time.After(30 * time.Second)
	for seq := int64(0); seq != env.Seq; {
		select {
		case seq = <-heard:
		case <-deadline:
			t.Fatalf("host b never heard of seq %d (last heard %d)", env.Seq, seq)
		}
	}

	// Refused: the event is logged, the row left alone.
	again := *got
	again.Status = core.RunFailed
	env, refusedRun, err := a.FinishRun(ctx, &again, core.Sources(core.RunFailed), core.EventInput{Type: core.EventRunFailed}, nil)
	assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(err), "%v", err)
	assert.Nil(t, refusedRun)
	assert.Equal(t, int64(4), env.Seq)
	stored, err := b.GetRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, core.RunCompleted, stored.Status)

	// Lost: b takes a's runs over; a's end then writes nothing.
	lost := start("run_lost_"+suffix, "chat_lost_"+suffix)
	ok, err := a.RenewHost(ctx, "a/1", -time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	claimed, err := b.ClaimRuns(ctx, "a/1", time.Now())
	require.NoError(t, err)
	require.NotEmpty(t, claimed)
	_, _, err = finish(lost)
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(err), "%v", err)
	evs, err := b.ListEvents(ctx, lost.ID, lost.AppID, 0, 0)
	require.NoError(t, err)
	for _, e := range evs {
		assert.NotEqual(t, core.EventRunCompleted, e.Event, "the fenced-off end is not in the log")
	}
	msgs, err = b.ChatMessages(ctx, lost.ChatSessionID)
	require.NoError(t, err)
	assert.Len(t, msgs, 1, "no answer recorded for the fenced-off end")
	count, _ = messageCount(t, b, lost.ChatSessionID)
	assert.Equal(t, 1, count, "the chat's count is untouched")
	stored, err = b.GetRun(ctx, lost.ID)
	require.NoError(t, err)
	assert.Equal(t, core.RunRunning, stored.Status)
	assert.Empty(t, stored.OutputText)
	assert.Equal(t, "b/1", stored.Owner)
}
