package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChatTailHeldStaysTrue: the tail the store holds of a chat is checked
// against the database on every read, so whatever happens to the chat
// between two reads (turns added here or by another host, with any
// timestamp; turns deleted; many turns at once), each read returns what a
// read of the whole chat would. Random operations, both dialects.
func TestChatTailHeldStaysTrue(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedChat(t, s, "chat_r")
		rng := rand.New(rand.NewPCG(1, 2))
		next := 0
		add := func(createdAt int64) {
			next++
			content := strings.Repeat("ü", rng.IntN(40))
			if createdAt == 0 {
				require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%06d", next), ChatSessionID: "chat_r", Role: "user", Content: content}))
				return
			}
			// Another host, its clock behind: a turn older than the newest.
			_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO chat_messages (id, chat_session_id, run_id, role, content, created_at)
 VALUES (?, ?, NULL, 'assistant', ?, ?)`), fmt.Sprintf("msg_%06d", next), "chat_r", content, createdAt)
			require.NoError(t, err)
			// That host counts it in, as every path that adds a turn does.
			_, err = s.w.ExecContext(ctx, s.rebind(`UPDATE chat_sessions SET message_count = message_count + 1 WHERE id = ?`), "chat_r")
			require.NoError(t, err)
		}
		const budget, maxTurns = 100, 12
		for step := 0; step < 150; step++ {
			all, err := s.ChatMessages(ctx, "chat_r")
			require.NoError(t, err)
			switch op := rng.IntN(10); {
			case op < 5:
				add(0)
			case op < 6:
				for i := 0; i < chatTailNewLimit+3; i++ {
					add(0)
				}
			case op < 7 && len(all) > 0:
				add(all[rng.IntN(len(all))].CreatedAt - 1)
			case op < 9 && len(all) > 0:
				require.NoError(t, s.DeleteChatMessage(ctx, all[rng.IntN(len(all))].ID))
			}
			all, err = s.ChatMessages(ctx, "chat_r")
			require.NoError(t, err)
			want := trimTail(all, budget, maxTurns)
			// Every other read is the one run creation makes with the app
			// (AppForRunWithChatTail): both keep the same held tail true.
			var got []ChatMessage
			var older int
			if step%2 == 0 {
				_, got, older, err = s.ChatSessionTail(ctx, "chat_r", budget, maxTurns)
			} else {
				var tail ChatTailRead
				_, _, _, tail, err = s.AppForRunWithChatTail(ctx, "app1", "t1", "mock", "chat_r", budget, maxTurns)
				require.NoError(t, err)
				got, older, err = tail.Turns, tail.Older, tail.Err
				assert.Equal(t, "chat_r", tail.Session.ID, "step %d", step)
			}
			require.NoError(t, err)
			require.Equal(t, ids(want), ids(got), "step %d", step)
			require.Equal(t, len(all)-len(want), older, "step %d", step)
		}
		require.NoError(t, s.DeleteChatSession(ctx, "chat_r"))
		_, _, _, err := s.ChatSessionTail(ctx, "chat_r", budget, maxTurns)
		assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
		app, _, _, tail, err := s.AppForRunWithChatTail(ctx, "app1", "t1", "mock", "chat_r", budget, maxTurns)
		require.NoError(t, err, "the app is there")
		assert.Equal(t, "app1", app.ID)
		assert.True(t, errors.Is(tail.Err, ErrNotFound), "%v", tail.Err)
	})
}

// TestChatTailReadsOnlyWhatIsNew: a chat's second read takes from the
// database only the turns added since the first (their content is what
// changed), and the session's own fields are read fresh each time.
func TestChatTailReadsOnlyWhatIsNew(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedChat(t, s, "chat_n")
		for i := 0; i < 5; i++ {
			require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%d", i), ChatSessionID: "chat_n", Role: "user", Content: "hello"}))
		}
		_, first, _, err := s.ChatSessionTail(ctx, "chat_n", 1000, 0)
		require.NoError(t, err)
		require.Len(t, first, 5)
		// Rewritten behind the store's back: a held turn is not read again
		// (turns are never edited), so the old content shows.
		_, err = s.w.ExecContext(ctx, s.rebind(`UPDATE chat_messages SET content = 'edited' WHERE id = ?`), "msg_0")
		require.NoError(t, err)
		require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: "msg_5", ChatSessionID: "chat_n", Role: "assistant", Content: "new"}))
		require.NoError(t, s.MarkChatRestored(ctx, "chat_n", "chk_1"))
		cs, second, older, err := s.ChatSessionTail(ctx, "chat_n", 1000, 0)
		require.NoError(t, err)
		assert.Equal(t, "hello", second[0].Content, "held turns come from memory")
		assert.Equal(t, "new", second[5].Content, "the new one from the database")
		assert.Zero(t, older)
		assert.Equal(t, "chk_1", cs.RestoredCheckpointID.String, "the session is read fresh")
	})
}

// BenchmarkChatSessionTail: starting a run in a chat of 200 short turns
// reads its tail (budget 24k runes, at most 200 turns) after the previous
// run added its two turns.
func BenchmarkChatSessionTail(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		seedChat(b, s, "chat_b")
		n := 0
		turn := func() {
			for _, role := range []string{"user", "assistant"} {
				n++
				require.NoError(b, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%08d", n), ChatSessionID: "chat_b", Role: role, Content: "say ok"}))
			}
		}
		for i := 0; i < 100; i++ {
			turn()
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			turn()
			b.StartTimer()
			_, tail, _, err := s.ChatSessionTail(ctx, "chat_b", 24_000, 200)
			require.NoError(b, err)
			require.Len(b, tail, 200)
		}
	})
}

// benchRunReads runs read b.N times, each after two turns added to the
// chat chat_b (writes the read connections have not seen), with a tenant
// that has one model bound to the engine "mock"; the chat starts with
// turns turns.
func benchRunReads(b *testing.B, turns int, read func(ctx context.Context, s *Store)) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		seedChat(b, s, "chat_b")
		require.NoError(b, s.CreateModel(ctx, Model{ID: "mdl_a", Name: "a", Kind: "chat", Provider: "openai", ProviderModel: "m", Active: true},
			[]Binding{{Engine: "mock", EngineModelID: "openai/m"}}))
		n := 0
		addTurn := func() {
			n++
			require.NoError(b, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%08d", n), ChatSessionID: "chat_b", Role: "user", Content: "say ok"}))
		}
		for range turns {
			addTurn()
		}
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			addTurn()
			addTurn()
			b.StartTimer()
			read(ctx, s)
		}
	})
}

// BenchmarkAppForRunWithChatTail: what creating a run in a chat reads
// before it records the run (the app, the tenant's default model, the
// engine's id for it, the chat's tail), after the previous run added its
// two turns; the chat holds 200 turns and more.
func BenchmarkAppForRunWithChatTail(b *testing.B) {
	benchRunReads(b, 200, func(ctx context.Context, s *Store) {
		app, m, engineID, t, err := s.AppForRunWithChatTail(ctx, "app1", "t1", "mock", "chat_b", 24_000, 200)
		require.NoError(b, err)
		require.NoError(b, t.Err)
		require.Equal(b, "app1", app.ID)
		require.Equal(b, "mdl_a", m.ID)
		require.Equal(b, "openai/m", engineID)
		require.Len(b, t.Turns, 200)
	})
}

// BenchmarkAppForRun: what creating a run outside a chat reads before it
// records the run, after another run's turns were written.
func BenchmarkAppForRun(b *testing.B) {
	benchRunReads(b, 0, func(ctx context.Context, s *Store) {
		app, m, engineID, err := s.AppForRun(ctx, "app1", "t1", "mock")
		require.NoError(b, err)
		require.Equal(b, "app1", app.ID)
		require.Equal(b, "mdl_a", m.ID)
		require.Equal(b, "openai/m", engineID)
	})
}

func ids(ms []ChatMessage) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// TestChatTailBefore: the history a run had is the tail of the turns before
// its own first turn, budget and bound applied, with how many older turns
// were left out; a run with no turn in the chat gets the whole chat's tail.
func TestChatTailBefore(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedChat(t, s, "chat_b")
		n := 0
		for run := 1; run <= 4; run++ {
			for _, role := range []string{"user", "assistant"} {
				n++
				m := ChatMessage{ID: fmt.Sprintf("msg_%03d", n), ChatSessionID: "chat_b", Role: role, Content: fmt.Sprintf("%d-%s", run, role)}
				m.RunID.String, m.RunID.Valid = fmt.Sprintf("run_%d", run), true
				require.NoError(t, s.AddChatMessage(ctx, m))
			}
		}
		tail, older, err := s.ChatTailBefore(ctx, "chat_b", "run_3", 1000, 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"msg_001", "msg_002", "msg_003", "msg_004"}, ids(tail), "the turns of runs 1 and 2")
		assert.Zero(t, older)

		tail, older, err = s.ChatTailBefore(ctx, "chat_b", "run_3", 1000, 3)
		require.NoError(t, err)
		assert.Equal(t, []string{"msg_002", "msg_003", "msg_004"}, ids(tail), "at most maxTurns")
		assert.Equal(t, 1, older)

		tail, older, err = s.ChatTailBefore(ctx, "chat_b", "run_3", len("2-assistant")+1, 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"msg_003", "msg_004"}, ids(tail), "the newest that fit, and the first that does not")
		assert.Equal(t, 2, older)

		tail, _, err = s.ChatTailBefore(ctx, "chat_b", "run_1", 1000, 0)
		require.NoError(t, err)
		assert.Empty(t, tail, "the chat's first run had no history")
		tail, _, err = s.ChatTailBefore(ctx, "chat_b", "run_gone", 1000, 0)
		require.NoError(t, err)
		assert.Len(t, tail, 8, "a run with no turn: the whole chat")
	})
}

// TestChatTailsReturnedStayPut: a tail handed out shares its array with
// the store's cache, so a later read (which appends the chat's new turns)
// must never write into it, also with readers at once (run with -race).
func TestChatTailsReturnedStayPut(t *testing.T) {
	s := openSQLite(t)
	ctx := context.Background()
	seedChat(t, s, "chat_s")
	next := 0
	add := func(n int) {
		for range n {
			next++
			require.NoError(t, s.AddChatMessage(ctx, ChatMessage{ID: fmt.Sprintf("msg_%06d", next), ChatSessionID: "chat_s", Role: "user", Content: "hi"}))
		}
	}
	const budget, maxTurns = 1000, 8
	add(5)
	_, first, _, err := s.ChatSessionTail(ctx, "chat_s", budget, maxTurns)
	require.NoError(t, err)
	kept := ids(first)
	add(2)
	_, second, _, err := s.ChatSessionTail(ctx, "chat_s", budget, maxTurns)
	require.NoError(t, err)
	_, third, _, err := s.ChatSessionTail(ctx, "chat_s", budget, maxTurns) // nothing new
	require.NoError(t, err)
	add(1)
	_, _, _, err = s.ChatSessionTail(ctx, "chat_s", budget, maxTurns)
	require.NoError(t, err)
	assert.Equal(t, kept, ids(first), "the first tail is as it was returned")
	assert.Equal(t, ids(second), ids(third))
	assert.Len(t, second, 7)
	// What makes the sharing safe: a tail handed out has no room to grow
	// (a caller's append copies it), and reads claim the array's slots
	// after it before they write them (TestChatTailExtendClaimsSlots).
	held, ok := s.chatTails.get("chat_s")
	require.True(t, ok)
	assert.Equal(t, len(held.tail), cap(held.tail))

	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				_, tail, _, err := s.ChatSessionTail(ctx, "chat_s", budget, maxTurns)
				if err == nil {
					for i := 1; i < len(tail); i++ {
						if tail[i-1].ID >= tail[i].ID {
							err = fmt.Errorf("tail out of order: %v", ids(tail))
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	add(30)
	close(done)
	for range 4 {
		require.NoError(t, <-errs)
	}
}

// seedChat makes app1 of tenant t1 and an empty chat session id in it.
func seedChat(tb testing.TB, s *Store, id string) {
	tb.Helper()
	ctx := context.Background()
	seedApp(tb, s)
	user, err := s.EnsureUser(ctx, "t1", "usr_1", "u@t1")
	require.NoError(tb, err)
	require.NoError(tb, s.CreateChatSession(ctx, ChatSession{ID: id, TenantID: "t1", AppID: "app1", UserID: user, Title: id}))
}

// TestChatTailExtendClaimsSlots: the chat's new turns go into the array
// after the held tail while it has room, without copying the tail; a second
// read from the same held tail (readers at once) finds those slots taken
// and copies, so neither writes what the other returned.
func TestChatTailExtendClaimsSlots(t *testing.T) {
	msg := func(id string) ChatMessage { return ChatMessage{ID: id, Content: id} }
	held := chatTail{tail: []ChatMessage{msg("a"), msg("b")}}
	first, arr, end := held.extend([]ChatMessage{msg("c")})
	require.Equal(t, []string{"a", "b", "c"}, ids(first))
	require.Equal(t, 3, end)
	assert.Equal(t, len(first), cap(first), "handed out clipped")

	held = chatTail{tail: first, arr: arr, end: end}
	second, arr2, end2 := held.extend([]ChatMessage{msg("d"), msg("e")})
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, ids(second))
	assert.Same(t, arr, arr2, "added in place")
	assert.Same(t, &first[0], &second[0], "the tail was not copied")
	assert.Equal(t, 5, end2)

	// Another read that held the same three-turn tail cannot claim slots 3
	// and 4 again: it copies, and the second tail keeps d and e.
	other, arr3, _ := held.extend([]ChatMessage{msg("x")})
	assert.NotSame(t, arr, arr3)
	assert.Equal(t, []string{"a", "b", "c", "x"}, ids(other))
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, ids(second))

	// Past its room the array is left for a new one.
	held = chatTail{tail: second, arr: arr, end: end2}
	var many []ChatMessage
	for i := range tailRoom {
		many = append(many, msg(fmt.Sprintf("m%02d", i)))
	}
	grown, arr4, end4 := held.extend(many)
	assert.NotSame(t, arr, arr4)
	assert.Len(t, grown, 5+tailRoom)
	assert.Equal(t, 5+tailRoom, end4)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, ids(second), "the old tail is untouched")

	same, arr5, end5 := chatTail{tail: grown, arr: arr4, end: end4}.extend(nil)
	assert.Equal(t, ids(grown), ids(same))
	assert.Same(t, arr4, arr5)
	assert.Equal(t, end4, end5)
}
