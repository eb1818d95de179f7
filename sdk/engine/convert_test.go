package engine

import (
	"reflect"
	"testing"

	"github.com/agenthost/agenthost/sdk/internal/roundtrip"
	"github.com/stretchr/testify/assert"
)

// Every field of a request, an event of each kind and a result survives
// the trip through its proto: a field added to a type but not to its
// conversion fails here.
func TestConversionsRoundTrip(t *testing.T) {
	var req RunRequest
	roundtrip.Fill(&req)
	assert.Equal(t, req, requestFromProto(requestToProto(req)))

	var res Result
	roundtrip.Fill(&res)
	assert.Equal(t, res, resultFromProto(resultToProto(res)))

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
