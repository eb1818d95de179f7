package engine

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/pb/enginev1"
	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every field of a request, an event of each kind and a result survives
// the trip through its proto: a field added to a type but not to its
// conversion fails here.
func TestConversionsRoundTrip(t *testing.T) {
	// Fill gives the closed sets (Message.Role, Result.Status) a string
	// outside the set, which travels in the string field alone; each value
	// of the set, which travels in the enum too, is tried as well.
	var req RunRequest
	roundtrip.Fill(&req)
	assert.Equal(t, req, requestFromProto(requestToProto(req)))
	for _, role := range []string{"system", "user", "assistant"} {
		req.History[0].Role = role
		assert.Equal(t, req, requestFromProto(requestToProto(req)))
	}

	var res Result
	roundtrip.Fill(&res)
	assert.Equal(t, res, resultFromProto(resultToProto(res)))
	for _, status := range []string{StatusCompleted, StatusFailed, StatusCancelled, StatusPaused} {
		res.Status = status
		assert.Equal(t, res, resultFromProto(resultToProto(res)))
	}

	events := []Event{
		{Kind: KindAssistantDelta, Text: "hi"},
		{Kind: KindStatus, Stage: "engine_ready", Message: "ready"},
		{Kind: KindReasoning, Text: "thinking"},
		{Kind: KindUsage, InputTokens: 3, OutputTokens: 4},
		{Kind: KindToolStarted, CallID: "c1", Tool: "t", Input: []byte(`{"a":1}`)},
		{Kind: KindToolFinished, CallID: "c1", Tool: "t", OK: true, Output: []byte(`{"b":2}`),
			ErrorCode: "E", ErrorMessage: "m", Diagnostics: []byte(`{"d":3}`)},
	}
	// The list above must use every field of Event, or a new one would
	// never be checked.
	used := map[string]bool{}
	for _, ev := range events {
		v := reflect.ValueOf(ev)
		for i := 0; i < v.NumField(); i++ {
			if !v.Field(i).IsZero() {
				used[v.Type().Field(i).Name] = true
			}
		}
	}
	for i := 0; i < reflect.TypeOf(Event{}).NumField(); i++ {
		assert.True(t, used[reflect.TypeOf(Event{}).Field(i).Name], "no event here sets Event.%s", reflect.TypeOf(Event{}).Field(i).Name)
	}
	for _, ev := range events {
		back, ok := eventFromProto(eventToProto(ev))
		assert.True(t, ok, ev.Kind)
		assert.Equal(t, ev, back, ev.Kind)
	}
	_, ok := eventFromProto(nil)
	assert.False(t, ok, "an event of an unknown kind is skipped")
}

// RunResult carries the status twice: writers set the string and the enum,
// readers prefer a known enum and fall back to the string.
func TestResultStatusStringAndEnum(t *testing.T) {
	for status, e := range map[string]enginev1.RunStatus{
		StatusCompleted: enginev1.RunStatus_RUN_STATUS_COMPLETED,
		StatusFailed:    enginev1.RunStatus_RUN_STATUS_FAILED,
		StatusCancelled: enginev1.RunStatus_RUN_STATUS_CANCELLED,
		StatusPaused:    enginev1.RunStatus_RUN_STATUS_PAUSED,
	} {
		p := resultToProto(Result{Status: status})
		assert.Equal(t, status, p.GetStatus(), "writers set the string")
		assert.Equal(t, e, p.GetStatusEnum(), "writers set the enum")
		assert.Equal(t, status, resultFromProto(roundtrip.OverTheWire(t, p)).Status)
	}
	p := resultToProto(Result{Status: "interrupted"})
	assert.Equal(t, "interrupted", p.GetStatus(), "a status outside the set travels in the string")
	assert.Equal(t, enginev1.RunStatus_RUN_STATUS_UNSPECIFIED, p.GetStatusEnum())

	tests := []struct {
		name string
		in   *enginev1.RunResult
		want string
	}{
		{"only the string (an older engine)", &enginev1.RunResult{Status: "cancelled"}, StatusCancelled},
		{"only the enum", &enginev1.RunResult{StatusEnum: enginev1.RunStatus_RUN_STATUS_PAUSED}, StatusPaused},
		{"an unknown enum number falls back to the string", &enginev1.RunResult{Status: "failed", StatusEnum: 42}, StatusFailed},
		{"the enum wins over the string", &enginev1.RunResult{Status: "failed", StatusEnum: enginev1.RunStatus_RUN_STATUS_COMPLETED}, StatusCompleted},
		{"a status outside the set comes through", &enginev1.RunResult{Status: "interrupted"}, "interrupted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resultFromProto(roundtrip.OverTheWire(t, tc.in)).Status)
		})
	}
}

// Message carries the role twice, under the same rule.
func TestMessageRoleStringAndEnum(t *testing.T) {
	for role, e := range map[string]enginev1.Role{
		"system":    enginev1.Role_ROLE_SYSTEM,
		"user":      enginev1.Role_ROLE_USER,
		"assistant": enginev1.Role_ROLE_ASSISTANT,
	} {
		p := requestToProto(RunRequest{History: []Message{{Role: role, Content: "c"}}})
		require.Len(t, p.GetHistory(), 1)
		assert.Equal(t, role, p.GetHistory()[0].GetRole(), "writers set the string")
		assert.Equal(t, e, p.GetHistory()[0].GetRoleEnum(), "writers set the enum")
		back := requestFromProto(roundtrip.OverTheWire(t, p))
		require.Len(t, back.History, 1)
		assert.Equal(t, role, back.History[0].Role)
	}

	tests := []struct {
		name string
		in   *enginev1.Message
		want string
	}{
		{"only the string (an older host)", &enginev1.Message{Role: "user"}, "user"},
		{"only the enum", &enginev1.Message{RoleEnum: enginev1.Role_ROLE_ASSISTANT}, "assistant"},
		{"an unknown enum number falls back to the string", &enginev1.Message{Role: "system", RoleEnum: 42}, "system"},
		{"the enum wins over the string", &enginev1.Message{Role: "user", RoleEnum: enginev1.Role_ROLE_SYSTEM}, "system"},
		{"a role outside the set comes through", &enginev1.Message{Role: "tool"}, "tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := roundtrip.OverTheWire(t, &enginev1.RunRequest{History: []*enginev1.Message{tc.in}})
			back := requestFromProto(p)
			require.Len(t, back.History, 1)
			assert.Equal(t, tc.want, back.History[0].Role)
		})
	}
}

// BenchmarkRunRequestConversion: a run's request with a 200-message
// history (a long chat at the host's default bound) and 12 tools, to its
// proto and back: once per run on each side of the engine plugin.
func BenchmarkRunRequestConversion(b *testing.B) {
	req := RunRequest{RunID: "run_1", Prompt: "say ok"}
	for i := range 200 {
		req.History = append(req.History, Message{Role: []string{"user", "assistant"}[i%2], Content: "a turn of the chat"})
	}
	for i := range 12 {
		req.Tools = append(req.Tools, ToolDescriptor{Name: fmt.Sprintf("tool_%d", i), Description: "does a thing", InputSchema: []byte(`{"type":"object"}`)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if back := requestFromProto(requestToProto(req)); len(back.History) != len(req.History) {
			b.Fatal("history lost")
		}
	}
}
