package store

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEventNotes: a commit's notification carries each run's events when
// they fit in a PostgreSQL notification, and reads back exactly; a run
// whose events do not fit gets a bare hint with its newest seq.
func TestEventNotes(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_123).UTC()
	small := []core.Envelope{
		{Event: core.EventAssistantDelta, RunID: "run_a", AppID: "app1", Seq: 7, TS: ts, Payload: []byte(`{"text":"hi"}`)},
		{Event: core.EventToolFailed, RunID: "run_b", AppID: "app1", Seq: 3, TS: ts, Payload: []byte(`{"x":1}`), Diagnostics: []byte(`{"d":2}`)},
		{Event: core.EventAssistantDelta, RunID: "run_a", AppID: "app1", Seq: 8, TS: ts, Payload: []byte(`{"text":"there"}`)},
	}
	big := core.Envelope{Event: core.EventAssistantDelta, RunID: "run_c", AppID: "app1", Seq: 1, TS: ts,
		Payload: []byte(`{"text":"` + strings.Repeat("x", maxNote) + `"}`)}
	notes := eventNotes("h0/abcd", append(small, big))
	require.Len(t, notes, 3)
	assert.Equal(t, []string{"run_a", "run_b", "run_c"}, []string{notes[0].run, notes[1].run, notes[2].run})

	sender, run, seq, events, ok := parseEventNote(notes[0].note, "")
	require.True(t, ok)
	assert.Equal(t, "h0/abcd", sender)
	assert.Equal(t, "run_a", run)
	assert.Equal(t, int64(8), seq)
	require.Len(t, events, 2)
	assert.Equal(t, small[0].Seq, events[0].Seq)
	assert.True(t, small[0].TS.Equal(events[0].TS))
	assert.JSONEq(t, string(small[2].Payload), string(events[1].Payload))

	_, _, _, events, ok = parseEventNote(notes[1].note, "")
	require.True(t, ok)
	require.Len(t, events, 1)
	assert.JSONEq(t, `{"d":2}`, string(events[0].Diagnostics))

	assert.LessOrEqual(t, len(notes[2].note), maxNote)
	_, run, seq, events, ok = parseEventNote(notes[2].note, "")
	require.True(t, ok)
	assert.Equal(t, "run_c", run)
	assert.Equal(t, int64(1), seq)
	assert.Nil(t, events, "too big to carry: a hint to read the log")

	_, _, _, _, ok = parseEventNote("garbage", "")
	assert.False(t, ok)
	_, _, _, _, ok = parseEventNote(notes[0].note, "h0/abcd")
	assert.False(t, ok, "a host's own note is dropped unread")
}
