package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChangesOfSeveralRunsAreOneStatement: on PostgreSQL a batch holding
// several runs' status changes and ends, with their events, is written as
// one statement, and each request gets what the transaction gave it: a run
// that ends has its event, its row and its chat's answer; a status change
// alone its row; a refused end its event but not its row; a run another
// host took over nothing at all, and its requests say the lease was lost.
// A run that changes twice in a batch (its start and its end) is in the
// same statement, and each change gets what it would have got one after
// the other; more go in a transaction.
func TestChangesOfSeveralRunsAreOneStatement(t *testing.T) {
	a, b, user, suffix := hostsWithUser(t, "changes")
	ctx := context.Background()

	start := func(name string, status core.RunStatus) *core.Run {
		r := newRun("run_" + name + "_" + suffix)
		r.UserID, r.ChatSessionID = user, "chat_"+name+"_"+suffix
		_, err := a.StartRun(ctx, r, &core.ChatTurn{MessageID: "msg_" + r.ID + "_user", Content: "say hi", NewSession: true}, core.EventInput{Type: core.EventRunAccepted})
		require.NoError(t, err)
		if status == core.RunRunning {
			running := *r
			running.Status = core.RunRunning
			_, err = a.TransitionInOrder(ctx, &running, core.Sources(core.RunRunning))
			require.NoError(t, err)
			return &running
		}
		return r
	}
	ending := start("ending", core.RunRunning)
	starting := start("starting", core.RunQueued)
	refused := start("refused", core.RunRunning)
	taken := start("taken", core.RunRunning)
	// b takes one run over, as a takeover would.
	_, err := b.w.Exec(b.rebind(`UPDATE runs SET owner = ? WHERE id = ?`), "b/1", taken.ID)
	require.NoError(t, err)

	completed := func(r *core.Run) *core.Run {
		done := *r
		done.Status, done.OutputText = core.RunCompleted, "answer of "+r.ID
		return &done
	}
	answer := func(r *core.Run) *core.ChatTurn {
		return &core.ChatTurn{MessageID: "msg_" + r.ID + "_answer", Content: "answer of " + r.ID}
	}
	delta := core.EventInput{Type: core.EventAssistantDelta, Payload: []byte(`{"text":"hi"}`)}
	end := core.EventInput{Type: core.EventRunCompleted, Payload: []byte(`{"status":"completed"}`)}
	nowRunning := *starting
	nowRunning.Status = core.RunRunning

	results := make([]appendResult, 7)
	batch := []*appendReq{
		{run: ending, ev: delta},
		a.finishReq(completed(ending), core.Sources(core.RunCompleted), end, answer(ending)),
		a.transitionReq(&nowRunning, core.Sources(core.RunRunning)),
		{run: refused, ev: delta},
		// Allowed only from queued: the stored run is running.
		a.finishReq(completed(refused), []core.RunStatus{core.RunQueued}, end, answer(refused)),
		{run: taken, ev: delta},
		a.finishReq(completed(taken), core.Sources(core.RunCompleted), end, answer(taken)),
	}
	for i, r := range batch {
		r.done = func(res appendResult) { results[i] = res }
	}
	lane := a.lane(ending.ID)
	folded := lane.folded.Load()
	// The lane's goroutine is idle: nothing else is queued.
	lane.commit(batch)
	assert.Equal(t, folded+1, lane.folded.Load(), "the batch went as one statement")

	// The run that ended: its events, its row, its chat's answer.
	require.NoError(t, results[0].err)
	require.NoError(t, results[1].err)
	got, _ := results[1].tail.(finished)
	require.NoError(t, got.refused)
	require.NotNil(t, got.run)
	assert.Equal(t, core.RunCompleted, got.run.Status)
	assert.Equal(t, "a/1", got.run.Owner)
	stored, err := b.GetRun(ctx, ending.ID)
	require.NoError(t, err)
	assert.Equal(t, core.RunCompleted, stored.Status)
	assert.Equal(t, "answer of "+ending.ID, stored.OutputText)
	evs, err := b.ListEvents(ctx, ending.ID, ending.AppID, 0, 0)
	require.NoError(t, err)
	require.Len(t, evs, 3, "accepted, the delta and the end")
	assert.Equal(t, core.EventRunCompleted, evs[2].Event)
	msgs, err := b.ChatMessages(ctx, ending.ChatSessionID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "answer of "+ending.ID, msgs[1].Content)
	session, err := b.GetChatSession(ctx, ending.ChatSessionID)
	require.NoError(t, err)
	assert.Equal(t, results[1].env.TS.UnixMilli(), session.UpdatedAt)
	kept, counted := messageCount(t, b, ending.ChatSessionID)
	assert.Equal(t, 2, kept)
	assert.Equal(t, 2, counted)

	// The status change alone.
	require.NoError(t, results[2].err)
	changed, ok := results[2].tail.(*core.Run)
	require.True(t, ok, "%#v", results[2].tail)
	assert.Equal(t, core.RunRunning, changed.Status)
	assertStatus(t, b, starting.ID, core.RunRunning)

	// The refused end: its events are logged, its row is left alone.
	require.NoError(t, results[4].err)
	got, _ = results[4].tail.(finished)
	assert.Nil(t, got.run)
	assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(got.refused), "%v", got.refused)
	assertStatus(t, b, refused.ID, core.RunRunning)
	evs, err = b.ListEvents(ctx, refused.ID, refused.AppID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 3, "the refused end's events are in the log")

	// The run b took: nothing of it, and both requests say so.
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(results[5].err), "%v", results[5].err)
	assert.Equal(t, core.CodeLeaseLost, core.CodeOf(results[6].err), "%v", results[6].err)
	evs, err = b.ListEvents(ctx, taken.ID, taken.AppID, 0, 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1, "run.accepted only")
	assertStatus(t, b, taken.ID, core.RunRunning)
	kept, counted = messageCount(t, b, taken.ChatSessionID)
	assert.Equal(t, 1, kept)
	assert.Equal(t, 1, counted)

	// Status changes alone, with no event, are one statement too.
	again := start("again", core.RunQueued)
	other := start("other", core.RunQueued)
	runningToo := func(r *core.Run) *core.Run { c := *r; c.Status = core.RunRunning; return &c }
	pair := []*appendReq{a.transitionReq(runningToo(again), core.Sources(core.RunRunning)), a.transitionReq(runningToo(other), core.Sources(core.RunRunning))}
	outs := make([]appendResult, len(pair))
	for i, r := range pair {
		r.done = func(res appendResult) { outs[i] = res }
	}
	folded = lane.folded.Load()
	lane.commit(pair)
	assert.Equal(t, folded+1, lane.folded.Load())
	for i, r := range []*core.Run{again, other} {
		require.NoError(t, outs[i].err)
		assertStatus(t, b, r.ID, core.RunRunning)
	}

	// A fast run starts and ends in one batch: still one statement, and
	// each change gets its own outcome.
	twice := start("twice", core.RunQueued)
	// The first change refused (the run is queued, not running), the
	// second allowed from the state the run is in.
	refusedFirst := start("refusedfirst", core.RunQueued)
	unchained := start("unchained", core.RunQueued)
	pausedToo := func(r *core.Run) *core.Run { c := *r; c.Status = core.RunPaused; return &c }
	both := []*appendReq{
		a.transitionReq(runningToo(twice), core.Sources(core.RunRunning)),
		a.transitionReq(pausedToo(refusedFirst), []core.RunStatus{core.RunRunning}),
		{run: twice, ev: delta},
		a.finishReq(completed(runningToo(twice)), core.Sources(core.RunCompleted), end, answer(twice)),
		a.finishReq(completed(refusedFirst), []core.RunStatus{core.RunQueued}, end, answer(refusedFirst)),
		// The second change not allowed from the first's new state.
		a.transitionReq(runningToo(unchained), core.Sources(core.RunRunning)),
		a.finishReq(completed(unchained), []core.RunStatus{core.RunQueued}, end, nil),
	}
	outs = make([]appendResult, len(both))
	for i, r := range both {
		r.done = func(res appendResult) { outs[i] = res }
	}
	folded = lane.folded.Load()
	lane.commit(both)
	assert.Equal(t, folded+1, lane.folded.Load(), "one statement")
	for i := range outs {
		require.NoError(t, outs[i].err, "request %d", i)
	}
	nowRun, ok := outs[0].tail.(*core.Run)
	require.True(t, ok, "%#v", outs[0].tail)
	assert.Equal(t, core.RunRunning, nowRun.Status, "the first change's own outcome")
	got, _ = outs[3].tail.(finished)
	require.NoError(t, got.refused)
	require.NotNil(t, got.run)
	assert.Equal(t, core.RunCompleted, got.run.Status)
	assertStatus(t, b, twice.ID, core.RunCompleted)
	kept, counted = messageCount(t, b, twice.ChatSessionID)
	assert.Equal(t, 2, kept)
	assert.Equal(t, 2, counted)
	refusal, ok := outs[1].tail.(error)
	require.True(t, ok, "%#v", outs[1].tail)
	assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(refusal), "%v", refusal)
	got, _ = outs[4].tail.(finished)
	require.NoError(t, got.refused, "allowed from queued, where the run still was")
	assertStatus(t, b, refusedFirst.ID, core.RunCompleted)

	nowRun, ok = outs[5].tail.(*core.Run)
	require.True(t, ok, "%#v", outs[5].tail)
	assert.Equal(t, core.RunRunning, nowRun.Status)
	got, _ = outs[6].tail.(finished)
	assert.Equal(t, core.CodeInvalidRunTransition, core.CodeOf(got.refused), "%v", got.refused)
	assertStatus(t, b, unchained.ID, core.RunRunning)

	// More than two changes of one run: a transaction, in order.
	thrice := start("thrice", core.RunQueued)
	three := []*appendReq{
		a.transitionReq(runningToo(thrice), core.Sources(core.RunRunning)),
		a.transitionReq(pausedToo(thrice), core.Sources(core.RunPaused)),
		a.transitionReq(runningToo(thrice), core.Sources(core.RunRunning)),
		a.finishReq(completed(runningToo(thrice)), core.Sources(core.RunCompleted), end, answer(thrice)),
	}
	outs = make([]appendResult, len(three))
	for i, r := range three {
		r.done = func(res appendResult) { outs[i] = res }
	}
	folded = lane.folded.Load()
	lane.commit(three)
	assert.Equal(t, folded, lane.folded.Load(), "not one statement")
	for i := range outs {
		require.NoError(t, outs[i].err, "request %d", i)
	}
	got, _ = outs[3].tail.(finished)
	require.NoError(t, got.refused)
	assertStatus(t, b, thrice.ID, core.RunCompleted)
}

// assertStatus checks the stored status of run id.
func assertStatus(t *testing.T, s *Store, id string, want core.RunStatus) {
	t.Helper()
	stored, err := s.GetRun(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, want, stored.Status)
}

// hostsWithUser is twoHosts with an app and a user (usr_<name>) on the
// first, and a random suffix that makes the test's ids its own.
func hostsWithUser(t *testing.T, name string) (a, b *Store, user, suffix string) {
	t.Helper()
	a, b = twoHosts(t, time.Minute)
	seedApp(t, a)
	user, err := a.EnsureUser(context.Background(), "t1", "usr_"+name, name+"@t1")
	require.NoError(t, err)
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	return a, b, user, hex.EncodeToString(tag[:])
}

// TestChangesStatementTextsAreFew: batches whose counts of runs changing
// once and twice round up to the same powers of two get the same
// statement text (one prepared statement and one plan per connection).
func TestChangesStatementTextsAreFew(t *testing.T) {
	a, _ := twoHosts(t, time.Minute)
	text := func(singles, pairs int) string {
		var batch []*appendReq
		var envs, events []core.Envelope
		for i := range singles + pairs {
			running := newRun(fmt.Sprintf("run_text_%d", i))
			running.Status = core.RunRunning
			batch = append(batch, a.transitionReq(running, core.Sources(core.RunRunning)))
			envs = append(envs, core.Envelope{})
			if i >= singles {
				done := *running
				done.Status = core.RunCompleted
				batch = append(batch, a.finishReq(&done, core.Sources(core.RunCompleted), core.EventInput{Type: core.EventRunCompleted}, nil))
				env := core.Envelope{RunID: done.ID, Seq: 2, Event: core.EventRunCompleted, TS: time.Now()}
				envs, events = append(envs, env), append(events, env)
			}
		}
		slots, ok := a.lane("run_text_0").changeSlots(batch, events)
		require.True(t, ok)
		logged := map[string]bool{}
		for _, e := range events {
			logged[e.RunID] = true
		}
		query, _ := a.changesStatement(batch, slots, envs, events, logged)
		return query
	}
	assert.Equal(t, text(3, 0), text(4, 0))
	assert.NotEqual(t, text(4, 0), text(5, 0))
	assert.Equal(t, text(5, 0), text(8, 0))
	assert.Equal(t, text(1, 3), text(1, 4))
	assert.NotEqual(t, text(2, 3), text(1, 3))
}
