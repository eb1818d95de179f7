package api

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	must "github.com/stretchr/testify/require"
)

// TestSSEFrameIsWhatFmtAndJSONWrote: the hand-built frame is byte for byte
// the frame fmt and json.Marshal wrote, for payloads as the log gives them
// back (PostgreSQL's jsonb spaces them), line breaks and HTML characters
// in strings included: the data stays on one line.
func TestSSEFrameIsWhatFmtAndJSONWrote(t *testing.T) {
	ts := time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.UTC)
	for _, e := range []core.Envelope{
		{Event: core.EventAssistantDelta, RunID: "run_1", AppID: "app_1", Seq: 1, TS: ts, Payload: json.RawMessage(`{"text": "line one\nline <two> & \u2028"}`)},
		{Event: core.EventToolFailed, RunID: "run_1", AppID: "app_1", Seq: 42, TS: ts, Payload: json.RawMessage(`{"error_code":"X"}`), Diagnostics: json.RawMessage("{\"problems\":\n [ 1 ]}")},
		{Event: core.EventRunCompleted, RunID: "run_2", AppID: "app_é", Seq: 7, TS: ts.Add(time.Hour)},
	} {
		data, err := json.Marshal(e)
		must.NoError(t, err)
		want := fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Event, data)
		got := appendSSEFrame([]byte("earlier"), e)
		assert.Equal(t, want, string(got[len("earlier"):]))
		assert.NotContains(t, string(data), "\n", "one line of data")
	}
}
