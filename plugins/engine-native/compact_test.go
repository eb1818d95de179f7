package native

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runEvents runs req on an engine configured with cfg and returns its
// result and every event it emitted (the Recorder keeps kinds only).
func runEvents(t *testing.T, cfg string, req engine.RunRequest) (engine.Result, []engine.Event) {
	t.Helper()
	rec := enginetest.NewRecorder()
	c := plugintest.Engine(t, New(), json.RawMessage(cfg), rec)
	req.RunID = runID(t)
	var mu sync.Mutex
	var evs []engine.Event
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.Run(ctx, req, func(ev engine.Event) error {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	return res, evs
}

// statuses are the messages of the run.status events of a stage.
func statuses(evs []engine.Event, stage string) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == engine.KindStatus && ev.Stage == stage {
			out = append(out, ev.Message)
		}
	}
	return out
}

// bigEchoes scripts rounds of echo calls, each with a distinct payload of
// size bytes (the echo tool returns it, so each round adds it twice: the
// call's arguments and the tool's output), then a final answer.
func bigEchoes(rounds, size int) (turns []fakellm.Turn, payloads []string) {
	for i := range rounds {
		p := strings.Repeat(string(rune('a'+i)), size)
		payloads = append(payloads, p)
		turns = append(turns, echoCall(fmt.Sprintf(`{"text":%q}`, p)))
	}
	return append(turns, say("done")), payloads
}

// TestCompactionKeepsRequestsInContext: a run whose tool rounds add up to
// more than the model's context completes, every request within the
// window the provider enforces, because the engine elides old tool
// outputs and arguments as it goes and says so; the round the model is
// reading always reaches it whole.
func TestCompactionKeepsRequestsInContext(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "ctx")
			turns, payloads := bigEchoes(8, 1500)
			srv.Script(m.ProviderModel, turns...)
			// 8 rounds × 3 KB would be 24 KB of conversation; the model
			// takes 12 KB of request and the engine is told 4,000 tokens
			// (3,000 after the answer's 1,000), about 9 KB of text.
			srv.LimitContext(m.ProviderModel, 12000)
			res, evs := runEvents(t, `{"context_tokens":4000,"max_output_tokens":1000,"max_tool_iterations":20}`,
				engine.RunRequest{Prompt: "go", Model: m, Tools: echoTools()})
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			assert.Equal(t, "done", res.OutputText)

			reqs := srv.RequestsFor(m.ProviderModel)
			require.Len(t, reqs, len(turns), "no request was refused: each fit the model's context")
			for i, r := range reqs {
				assert.LessOrEqual(t, len(r.Body), 12000, "request %d", i)
			}
			last := string(reqs[len(reqs)-1].Body)
			assert.Contains(t, last, payloads[len(payloads)-1], "the round the model reads is whole")
			assert.NotContains(t, last, payloads[0], "the first round's output and arguments are elided")
			assert.Contains(t, last, "call the tool again", "the model is told what went")

			compacted := statuses(evs, "context_compacted")
			require.NotEmpty(t, compacted, "the user is told")
			assert.Contains(t, compacted[0], "old tool output")
		})
	}
}

// TestProviderRefusalShrinksTheContext: the engine assumes a larger window
// than the model has; the provider's "too long" refusal makes it compact
// below what was refused and ask again, without spending the retry
// budget, and the run completes.
func TestProviderRefusalShrinksTheContext(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			m := model(srv, p, "refuse")
			turns, _ := bigEchoes(6, 1500)
			srv.Script(m.ProviderModel, turns...)
			srv.LimitContext(m.ProviderModel, 9000)
			// retry_max 1: the refusals must not come out of it.
			res, evs := runEvents(t, `{"retry_max":1,"retry_base_ms":1,"retry_cap_ms":5,"max_tool_iterations":20}`,
				engine.RunRequest{Prompt: "go", Model: m, Tools: echoTools()})
			require.Equal(t, engine.StatusCompleted, res.Status, res.ErrorMessage)
			assert.Greater(t, len(srv.RequestsFor(m.ProviderModel)), len(turns), "some requests were refused first")
			compacted := statuses(evs, "context_compacted")
			require.NotEmpty(t, compacted)
			assert.Contains(t, compacted[0], "refused the request as too long")
			assert.Empty(t, statuses(evs, "model_retry"), "a refusal for length is not a retry")
		})
	}
}

// TestOverflowThatCannotShrinkFails: a request that no compaction can fit
// (the user's own request is longer than the window) fails with
// MODEL_PROVIDER_ERROR saying so, after a bounded number of tries.
func TestOverflowThatCannotShrinkFails(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	m := model(srv, ProviderOpenAI, "huge")
	srv.Script(m.ProviderModel, say("never"))
	srv.LimitContext(m.ProviderModel, 4000)
	res, _ := runEvents(t, `{}`, engine.RunRequest{Prompt: strings.Repeat("too long ", 1000), Model: m})
	require.Equal(t, engine.StatusFailed, res.Status)
	assert.Equal(t, CodeProviderError, res.ErrorCode)
	assert.Contains(t, res.ErrorMessage, "cannot be made to fit the model's context")
	assert.LessOrEqual(t, len(srv.RequestsFor(m.ProviderModel)), maxOverflowRetries+1)
}

// TestCompactDropsHistoryWholeExchanges: when eliding is not enough, the
// chat's earlier turns go, oldest first and only in front of a user
// message (no tool result loses its call); the run's request and what
// follows it stay, and the system prompt says the start is missing.
func TestCompactDropsHistoryWholeExchanges(t *testing.T) {
	long := strings.Repeat("h", 3000)
	req := engine.RunRequest{Prompt: "the request", History: []engine.Message{
		{Role: "user", Content: "first " + long}, {Role: "assistant", Content: "answer one " + long},
		{Role: "user", Content: "second " + long}, {Role: "assistant", Content: "answer two " + long},
	}}
	c := newConversation(req)
	require.Equal(t, 4, c.RequestAt)
	limit := estimateTokens(c.system(), c.Messages, nil) - 1500 // two messages too many
	res := c.compact(limit, nil)
	assert.Equal(t, 2, res.dropped, "one whole exchange went")
	assert.Equal(t, 0, res.shortened)
	require.Len(t, c.Messages, 3)
	assert.Equal(t, roleUser, c.Messages[0].Role)
	assert.True(t, strings.HasPrefix(c.Messages[0].Text, "second "))
	assert.Equal(t, 2, c.RequestAt)
	assert.Equal(t, "the request", c.Messages[c.RequestAt].Text)
	assert.Contains(t, c.system(), droppedNote)
	assert.LessOrEqual(t, res.after, limit)

	// Down to the request: the rest is shortened, never the request.
	res = c.compact(estimateTokens(c.system(), []message{c.Messages[c.RequestAt]}, nil)+1000, nil)
	assert.Equal(t, "the request", c.Messages[c.RequestAt].Text)
	assert.Equal(t, 0, c.RequestAt)
	assert.Equal(t, 2, res.dropped)
}

// TestShortenMiddleKeepsUTF8: a shortened text keeps its head and tail,
// says how much went, and never splits a character.
func TestShortenMiddleKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é漢", 2000) // 2- and 3-byte runes
	out := shortenMiddle(s, 1001)
	assert.True(t, utf8.ValidString(out))
	assert.Less(t, len(out), len(s))
	assert.Contains(t, out, "bytes left out")
	assert.True(t, strings.HasPrefix(out, "é漢"))
	assert.True(t, strings.HasSuffix(out, "é漢"))
	assert.Equal(t, "short", shortenMiddle("short", 100))
}
