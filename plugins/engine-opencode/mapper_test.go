package opencode

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ses = "ses_1"

func ev(typ string, props any) event {
	b, _ := json.Marshal(props)
	return event{Type: typ, Properties: b}
}

func msg(id, role string, completed int64) event {
	info := map[string]any{"id": id, "role": role, "sessionID": ses}
	if completed != 0 {
		info["time"] = map[string]any{"created": 1, "completed": completed}
	}
	return ev("message.updated", map[string]any{"sessionID": ses, "info": info})
}

func prt(p map[string]any) event {
	p["sessionID"] = ses
	return ev("message.part.updated", map[string]any{"sessionID": ses, "part": p})
}

func delta(msgID, partID, text string) event {
	return ev("message.part.delta", map[string]any{"sessionID": ses, "messageID": msgID, "partID": partID, "field": "text", "delta": text})
}

func tool(msgID, partID, callID, name, status string, extra map[string]any) event {
	state := map[string]any{"status": status, "input": map[string]any{"filePath": "a.txt"}}
	for k, v := range extra {
		state[k] = v
	}
	return prt(map[string]any{"id": partID, "messageID": msgID, "type": "tool", "tool": name, "callID": callID, "state": state})
}

// run feeds events and collects what the mapper emits.
func feedAll(m *mapper, events ...event) (out []engine.Event, asks []*permissionProps) {
	for _, e := range events {
		evs, ask := m.feed(e)
		out = append(out, evs...)
		if ask != nil {
			asks = append(asks, ask)
		}
	}
	return out, asks
}

func kinds(evs []engine.Event) string {
	var s []string
	for _, e := range evs {
		switch e.Kind {
		case engine.KindAssistantDelta:
			s = append(s, "delta:"+e.Text)
		case engine.KindToolStarted, engine.KindToolFinished:
			s = append(s, fmt.Sprintf("%s:%s:%s:%v", e.Kind, e.CallID, e.Tool, e.OK))
		default:
			s = append(s, string(e.Kind))
		}
	}
	return strings.Join(s, " ")
}

// The observed order of a write-then-text run maps to the timeline, with the
// user's own text part, reasoning and noise left out.
func TestMapperObservedOrder(t *testing.T) {
	m := newMapper(ses, nil)
	out, _ := feedAll(m,
		ev("server.connected", map[string]any{}),
		msg("msg_u", "user", 0),
		prt(map[string]any{"id": "prt_u", "messageID": "msg_u", "type": "text", "text": "create hello.txt"}),
		ev("session.status", map[string]any{"sessionID": ses, "status": map[string]any{"type": "busy"}}),
		msg("msg_a", "assistant", 0),
		ev("plugin.added", map[string]any{"id": "x"}),
		prt(map[string]any{"id": "prt_s", "messageID": "msg_a", "type": "step-start"}),
		prt(map[string]any{"id": "prt_r", "messageID": "msg_a", "type": "reasoning", "text": ""}),
		delta("msg_a", "prt_r", "secret thoughts"),
		tool("msg_a", "prt_t", "call_1", "write", "pending", nil),
		tool("msg_a", "prt_t", "call_1", "write", "running", nil),
		tool("msg_a", "prt_t", "call_1", "write", "running", map[string]any{"metadata": map[string]any{"output": "x"}}),
		tool("msg_a", "prt_t", "call_1", "write", "completed", map[string]any{"output": "Wrote file successfully."}),
		tool("msg_a", "prt_t", "call_1", "write", "completed", map[string]any{"output": "again"}),
		prt(map[string]any{"id": "prt_f", "messageID": "msg_a", "type": "step-finish", "tokens": map[string]any{"input": 100, "output": 10}}),
		msg("msg_b", "assistant", 0),
		prt(map[string]any{"id": "prt_x", "messageID": "msg_b", "type": "text", "text": ""}),
		delta("msg_b", "prt_x", "Done"),
		delta("msg_b", "prt_x", "."),
		prt(map[string]any{"id": "prt_x", "messageID": "msg_b", "type": "text", "text": "Done."}),
		ev("session.status", map[string]any{"sessionID": ses, "status": map[string]any{"type": "idle"}}),
		ev("session.idle", map[string]any{"sessionID": ses}),
	)
	assert.Equal(t, "reasoning tool.started:call_1:write:false tool.finished:call_1:write:true usage delta:Done delta:.", kinds(out))
	assert.True(t, m.idle)
	assert.Equal(t, "Done.", m.output())
	assert.Empty(t, m.editFails)
}

// Parts that arrive before their message, deltas before their part, and a
// text part that arrives whole are all kept; another session's are not.
func TestMapperOrderingAndSessions(t *testing.T) {
	m := newMapper(ses, nil)
	out, _ := feedAll(m,
		delta("msg_a", "prt_x", "Hel"),
		prt(map[string]any{"id": "prt_x", "messageID": "msg_a", "type": "text", "text": "Hel"}),
		msg("msg_a", "assistant", 0),
		delta("msg_a", "prt_x", "lo"),
		prt(map[string]any{"id": "prt_y", "messageID": "msg_a", "type": "text", "text": " world"}),
		ev("message.part.delta", map[string]any{"sessionID": "other", "messageID": "m", "partID": "p", "field": "text", "delta": "leak"}),
		ev("session.idle", map[string]any{"sessionID": ses}),
	)
	assert.Equal(t, "delta:Hel delta:lo delta: world", kinds(out))
	assert.False(t, m.idle, "an idle before this run was busy is not ours")
	assert.Equal(t, "Hello world", m.output())
}

// The last words of an earlier, aborted run (a message first seen already
// completed) never reach this run.
func TestMapperDropsStaleMessages(t *testing.T) {
	m := newMapper(ses, nil)
	out, _ := feedAll(m,
		prt(map[string]any{"id": "prt_old", "messageID": "msg_old", "type": "text", "text": "old text"}),
		msg("msg_old", "assistant", 123),
		delta("msg_old", "prt_old", "more old"),
	)
	assert.Empty(t, out)
}

// Each tool part is reported started once and finished once; a bridged
// (host) tool not at all; an edit failure is remembered until a later
// successful edit of the same file; a part id stands in for a reused call id.
func TestMapperToolsAndEditRule(t *testing.T) {
	m := newMapper(ses, map[string]bool{"coding_agent_get_agent_integration_contract": true})
	out, _ := feedAll(m,
		msg("msg_a", "assistant", 0),
		tool("msg_a", "p1", "call_1", "edit", "error", map[string]any{"error": "oldString not found"}),
		tool("msg_a", "p2", "call_2", "coding_agent_get_agent_integration_contract", "running", nil),
		tool("msg_a", "p2", "call_2", "coding_agent_get_agent_integration_contract", "completed", nil),
		tool("msg_a", "p3", "call_1", "bash", "running", nil),
	)
	assert.Equal(t, "tool.finished:call_1:edit:false tool.started:p3:bash:false", kinds(out))
	require.Len(t, m.editFails, 1)
	assert.Equal(t, "a.txt", m.editFails[0].File)
	assert.Equal(t, CodeToolError, out[0].ErrorCode)

	// A write of another file does not recover it; one of the same does.
	other := prt(map[string]any{"id": "p4", "messageID": "msg_a", "type": "tool", "tool": "write", "callID": "call_4",
		"state": map[string]any{"status": "completed", "input": map[string]any{"filePath": "b.txt"}}})
	feedAll(m, other)
	assert.Len(t, m.editFails, 1)
	feedAll(m, tool("msg_a", "p5", "call_5", "write", "completed", nil))
	assert.Empty(t, m.editFails)
}

// Permission asks, retries and session errors are surfaced.
func TestMapperAsksAndErrors(t *testing.T) {
	m := newMapper(ses, nil)
	out, asks := feedAll(m,
		ev("permission.asked", map[string]any{"id": "per_1", "sessionID": ses, "permission": "bash", "patterns": []string{"ls"}, "tool": map[string]any{"callID": "call_1"}}),
		ev("permission.asked", map[string]any{"id": "per_2", "sessionID": "other", "permission": "bash"}),
		ev("session.status", map[string]any{"sessionID": ses, "status": map[string]any{"type": "retry", "attempt": 2, "message": "upstream 503"}}),
		ev("session.error", map[string]any{"sessionID": ses, "error": map[string]any{"name": "APIError", "data": map[string]any{"message": "bad", "statusCode": 400}}}),
	)
	require.Len(t, asks, 1)
	assert.Equal(t, "per_1", asks[0].ID)
	assert.Equal(t, "call_1", asks[0].Tool.CallID)
	require.Len(t, out, 1)
	assert.Contains(t, out[0].Message, "attempt 2")
	require.NotNil(t, m.sessErr)
	assert.Equal(t, 400, m.sessErr.Status)
}

func TestRenderHistory(t *testing.T) {
	sys, turns := renderHistory([]engine.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}})
	assert.Equal(t, "be brief", sys)
	assert.Equal(t, "Earlier in this conversation:\n\nuser: hi\n\nassistant: hello", turns)
	long := strings.Repeat("x", maxHistoryChars)
	_, turns = renderHistory([]engine.Message{{Role: "user", Content: long}, {Role: "user", Content: "recent"}})
	assert.Contains(t, turns, "the 1 oldest messages left out")
	assert.Contains(t, turns, "recent")
	_, turns = renderHistory(nil)
	assert.Empty(t, turns)
}

func TestReadSSE(t *testing.T) {
	var got []string
	err := readSSE(strings.NewReader("data: {\"a\":1}\n\n: comment\ndata: {\"b\":\ndata: 2}\n\n"), func(b []byte) bool {
		got = append(got, string(b))
		return true
	})
	assert.Error(t, err, "a stream that ends is reported")
	assert.Equal(t, []string{`{"a":1}`, "{\"b\":\n2}"}, got)
}

func TestParseConfig(t *testing.T) {
	_, err := parseConfig(json.RawMessage(`{"opencode_pth":"x"}`))
	assert.Error(t, err, "unknown keys are refused")
	_, err = parseConfig(json.RawMessage(`{"permission":{"bash":"maybe"}}`))
	assert.Error(t, err)
	t.Setenv("APPS_CODING_AGENT_OPENCODE_FAIL_ON_UNRECOVERED_APPLY_PATCH", "0")
	c, err := parseConfig(nil)
	require.NoError(t, err)
	assert.False(t, *c.FailOnUnrecoveredEdit)
	assert.Equal(t, "ask", c.Permission["bash"])
	c, err = parseConfig(json.RawMessage(`{"permission":{"bash":"allow"}}`))
	require.NoError(t, err)
	assert.Equal(t, "allow", c.Permission["bash"])
	assert.Equal(t, "deny", c.Permission["webfetch"], "naming one tool keeps the other defaults")
}

func TestModelConfig(t *testing.T) {
	_, _, _, err := modelConfig(engine.Model{ID: "m", EngineModelID: "nobinding"})
	assert.ErrorContains(t, err, "no OpenCode binding", "the engine never guesses a model id")
	t.Setenv("OC_TEST_KEY", "sk-1")
	p, id, prov, err := modelConfig(engine.Model{ID: "m", EngineModelID: "local/qwen", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OC_TEST_KEY"})
	require.NoError(t, err)
	assert.Equal(t, "local", p)
	assert.Equal(t, "qwen", id)
	assert.Equal(t, "@ai-sdk/openai-compatible", prov["npm"])
	_, _, _, err = modelConfig(engine.Model{ID: "m", EngineModelID: "openai/gpt", APIKeyEnv: "OC_TEST_MISSING"})
	assert.ErrorContains(t, err, "OC_TEST_MISSING")
}

// BenchmarkMapperTextDelta: the per-token hot path, from one /event message
// to the engine event.
func BenchmarkMapperTextDelta(b *testing.B) {
	m := newMapper(ses, nil)
	feedAll(m, msg("msg_a", "assistant", 0), prt(map[string]any{"id": "prt_x", "messageID": "msg_a", "type": "text", "text": ""}))
	line := []byte(`{"id":"evt_1","type":"message.part.delta","properties":{"sessionID":"ses_1","messageID":"msg_a","partID":"prt_x","field":"text","delta":"token "}}`)
	b.ReportAllocs()
	for b.Loop() {
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			b.Fatal(err)
		}
		if out, _ := m.feed(e); len(out) != 1 {
			b.Fatal("no delta")
		}
	}
}

// TestMapperCountsRetries: every retry of the session counts toward the
// run's budget, across model requests (OpenCode numbers attempts per
// request); a streak of retries ends when the model's answer streams, and
// other sessions' retries are not ours.
func TestMapperCountsRetries(t *testing.T) {
	retry := func(session string, attempt int, message string) event {
		return ev("session.status", map[string]any{"sessionID": session, "status": map[string]any{"type": "retry", "attempt": attempt, "message": message, "next": 1}})
	}
	m := newMapper(ses, nil)
	out, _ := feedAll(m, retry(ses, 1, "refused"), retry(ses, 2, "refused again"), retry("ses_other", 5, "not ours"))
	assert.Equal(t, 2, m.retries)
	assert.Equal(t, "refused again", m.lastRetry)
	assert.True(t, m.retrying)
	require.Len(t, out, 2, "each of our retries is shown")
	assert.Equal(t, "model_retry", out[0].Stage)

	feedAll(m, msg("m1", "assistant", 0), prt(map[string]any{"id": "p1", "messageID": "m1", "type": "step-start"}))
	assert.True(t, m.retrying, "a step starting is not an answer yet")
	feedAll(m, prt(map[string]any{"id": "p2", "messageID": "m1", "type": "text", "text": ""}), delta("m1", "p2", "hi"))
	assert.False(t, m.retrying, "the model answers: the streak is over")

	feedAll(m, retry(ses, 1, "a later request fails"))
	assert.Equal(t, 3, m.retries, "the budget is the run's, not the request's")
	assert.True(t, m.retrying)
}

// A reused session may announce a busy/idle pair of its previous run
// after this run subscribed (an aborted run's second idle, a late
// summary of an old user message): only an idle after this prompt's own
// user message ends the run.
func TestMapperIgnoresIdleBeforeItsPrompt(t *testing.T) {
	m := newMapper(ses, nil)
	m.since = 5000
	userAt := func(id string, created int64) event {
		return ev("message.updated", map[string]any{"sessionID": ses, "info": map[string]any{
			"id": id, "role": "user", "sessionID": ses, "time": map[string]any{"created": created}}})
	}
	busy := ev("session.status", map[string]any{"sessionID": ses, "status": map[string]any{"type": "busy"}})
	idle := ev("session.idle", map[string]any{"sessionID": ses})
	feedAll(m, userAt("msg_old", 4000), busy, idle)
	assert.False(t, m.idle, "the previous run's idle ended this run")
	out, _ := feedAll(m, userAt("msg_new", 5001), busy, msg("msg_a", "assistant", 0),
		prt(map[string]any{"id": "prt_x", "messageID": "msg_a", "type": "text", "text": "answer"}), idle)
	assert.True(t, m.idle)
	assert.Equal(t, "delta:answer", kinds(out))
}

// A fast model's answer may arrive parts first and its message's first
// update already finished: created after the prompt, it is this run's
// and its text is kept; one created before the prompt is not.
func TestMapperKeepsAFastAnswer(t *testing.T) {
	m := newMapper(ses, nil)
	m.since = 5000
	at := func(id string, created, completed int64) event {
		return ev("message.updated", map[string]any{"sessionID": ses, "info": map[string]any{
			"id": id, "role": "assistant", "sessionID": ses, "time": map[string]any{"created": created, "completed": completed}}})
	}
	out, _ := feedAll(m,
		prt(map[string]any{"id": "prt_old", "messageID": "msg_old", "type": "text", "text": "old text"}),
		at("msg_old", 4000, 4500),
		prt(map[string]any{"id": "prt_new", "messageID": "msg_new", "type": "text", "text": "ok"}),
		at("msg_new", 5002, 5003),
	)
	assert.Equal(t, "delta:ok", kinds(out))
	assert.Equal(t, "ok", m.output())
}
