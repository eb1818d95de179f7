package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acceptedOf is the run.accepted envelope StartRun would log for r.
func acceptedOf(r *core.Run) core.Envelope {
	return core.Envelope{Event: core.EventRunAccepted, RunID: r.ID, AppID: r.AppID, Seq: 1,
		TS: time.Now().UTC().Truncate(time.Millisecond), Payload: []byte(`{}`)}
}

// TestStartRunsShareTheLogsCommit: on SQLite a run's start is written by
// the event log's writer, in one transaction with other runs' pending
// events and starts. A start refused there (a taken idempotency key)
// leaves nothing of itself behind and takes nothing from the rest of the
// batch, which commits.
func TestStartRunsShareTheLogsCommit(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	seedApp(t, s)
	user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
	require.NoError(t, err)
	busy := newRun("run_busy")
	busy.IdempotencyKey = "taken"
	_, err = s.StartRun(ctx, busy, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err)

	dup := newRun("run_dup")
	dup.UserID, dup.ChatSessionID, dup.IdempotencyKey = user, "chat_dup", "taken"
	fresh := newRun("run_fresh")
	fresh.UserID, fresh.ChatSessionID = user, "chat_fresh"
	var results [4]appendResult
	batch := []*appendReq{
		{run: busy, ev: core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"a"}`)}},
		s.startReq(dup, &core.ChatTurn{MessageID: "msg_dup", Content: "dup", NewSession: true}, acceptedOf(dup)),
		s.startReq(fresh, &core.ChatTurn{MessageID: "msg_fresh", Content: "hi", NewSession: true}, acceptedOf(fresh)),
		{run: busy, ev: core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"b"}`)}},
	}
	for i, r := range batch {
		r.done = func(res appendResult) { results[i] = res }
	}
	// The lane's goroutine is idle: nothing else is queued.
	s.lane(busy.ID).commit(batch)

	for _, i := range []int{0, 3} {
		require.NoError(t, results[i].err, "the other run's events commit")
	}
	assert.Equal(t, []int64{2, 3}, []int64{results[0].env.Seq, results[3].env.Seq})
	evs, err := s.ListEvents(ctx, busy.ID, busy.AppID, 0, 10)
	require.NoError(t, err)
	assert.Len(t, evs, 3)

	require.NoError(t, results[1].err, "a refusal is the start's own outcome, not the batch's")
	refused := results[1].tail.(startOutcome).refused
	assert.True(t, errors.Is(refused, ErrConflict), "%v", refused)
	_, err = s.GetRun(ctx, dup.ID)
	assert.True(t, errors.Is(err, ErrNotFound), "the refused run is not written: %v", err)
	_, err = s.GetChatSession(ctx, "chat_dup")
	assert.True(t, errors.Is(err, ErrNotFound), "nor its new chat: %v", err)
	evs, err = s.ListEvents(ctx, dup.ID, dup.AppID, 0, 10)
	require.NoError(t, err)
	assert.Empty(t, evs, "nor its run.accepted")

	require.NoError(t, results[2].err)
	assert.NoError(t, results[2].tail.(startOutcome).refused)
	stored, err := s.GetRun(ctx, fresh.ID)
	require.NoError(t, err)
	assert.Equal(t, "chat_fresh", stored.ChatSessionID)
	msgs, err := s.ChatMessages(ctx, "chat_fresh")
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, "hi", msgs[0].Content)
	evs, err = s.ListEvents(ctx, fresh.ID, fresh.AppID, 0, 10)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, core.EventRunAccepted, evs[0].Event)
}

// TestStartRunAnswerLost: a start whose batch committed but whose answer
// was lost (the connection dropped after COMMIT) is tried again; the try
// finds the run's id taken by its own first try and reports the start
// done, once. A start refused on such a retry is still refused.
func TestStartRunAnswerLost(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	seedApp(t, s)
	r := newRun("run_lost_answer")
	r.IdempotencyKey = "k"
	lane := s.lane(r.ID)
	var lostOnce atomic.Bool
	// Set before the writer sees a request of this test: the queue's send
	// happens before the writer's receive.
	lane.loseAnswer = func() bool { return lostOnce.CompareAndSwap(false, true) }
	env, err := s.StartRun(ctx, r, nil, core.EventInput{Type: core.EventRunAccepted})
	require.NoError(t, err, "the retry finds the first try's run, and says so")
	require.True(t, lostOnce.Load(), "the first try's answer was lost")
	evs, err := s.ListEvents(ctx, r.ID, r.AppID, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, []core.Envelope{env}, evs, "one run.accepted, the first try's")

	dup := newRun("run_dup_key")
	dup.IdempotencyKey = "k"
	lostOnce.Store(false)
	_, err = s.StartRun(ctx, dup, nil, core.EventInput{Type: core.EventRunAccepted})
	assert.True(t, errors.Is(err, ErrConflict), "%v", err)
	assert.True(t, lostOnce.Load(), "the refusal came on a retry")
}
