package client

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/apiclient"
	"github.com/stretchr/testify/assert"
)

// TestRender: the transcript of events a mock run seldom makes: a failed
// tool call (with its duration), one whose start was before following
// began (without), a warning, a result kept aside, a merged one, a
// question whose details hold HTML; the assistant's text is ended before
// a line.
func TestRender(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(typ string, ms int, payload string) apiclient.Event {
		return apiclient.Event{Type: typ, RunID: "run_1", TS: t0.Add(time.Duration(ms) * time.Millisecond), Payload: json.RawMessage(payload)}
	}
	for _, tc := range []struct {
		name   string
		events []apiclient.Event
		want   string
	}{
		{"failed tool", []apiclient.Event{
			ev("assistant.delta", 0, `{"text":"Reading"}`),
			ev("tool.started", 1, `{"tool_call_id":"c1","tool":"coding_agent_read_file","input":{"path":"a.txt"}}`),
			ev("tool.failed", 1501, `{"tool_call_id":"c1","tool":"coding_agent_read_file","error_code":"NOT_FOUND","error_message":"no a.txt"}`),
			ev("tool.completed", 1600, `{"tool_call_id":"c0","tool":"coding_agent_search","output":{}}`),
		}, "Reading\n-- tool coding_agent_read_file a.txt: failed in 1.5s: NOT_FOUND: no a.txt\n-- tool coding_agent_search: completed\n"},
		{"warning", []apiclient.Event{
			ev("run.status", 0, `{"stage":"warning","left_out":[{"path":"big.bin","reason":"over the file limit"}]}`),
			ev("run.status", 0, `{"stage":"planning","message":"reading the request"}`),
		}, "-- warning: left out big.bin (over the file limit)\n-- planning: reading the request\n"},
		{"conflict", []apiclient.Event{
			ev("revision.created", 0, `{"revision_id":"rev_2","applied":false,"changes":{"added":["b"],"modified":["a"]}}`),
			ev("run.completed", 0, `{"status":"completed","result":{"kind":"conflict","revision_id":"rev_2","conflicts":[{"path":"a"}],"changes":{"added":["b"],"modified":["a"]}}}`),
		}, "-- revision rev_2 (not applied): 1 added, 1 modified\n-- completed, not applied: the result conflicts with changes made meanwhile in a; kept as revision rev_2\n   added    b\n   modified a\n"},
		{"merged", []apiclient.Event{
			ev("run.completed", 0, `{"status":"completed","result":{"kind":"merged","revision_id":"rev_3","checkpoint_id":"cp_3","changes":{"deleted":["c"]}}}`),
		}, "-- completed: revision rev_3, merged with changes made meanwhile, is the draft (checkpoint cp_3)\n   deleted  c\n"},
		{"question", []apiclient.Event{
			ev("permission.requested", 0, `{"permission_id":"p1","action":"coding_agent_run_command","title":"Allow coding_agent_run_command?","details":{"command":"echo <b> && ls"}}`),
			ev("permission.resolved", 0, `{"permission_id":"p1","allow":false,"reason":"not now"}`),
		}, "-- permission asked: coding_agent_run_command\n   {\"command\":\"echo <b> && ls\"}\n-- permission denied: not now\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			fl := &follower{out: &transcript{w: &out}, tools: map[string]toolStart{}}
			for _, e := range tc.events {
				fl.render(e)
			}
			assert.Equal(t, tc.want, out.String())
		})
	}
}

// TestSummarizeInput: a tool input in a few words.
func TestSummarizeInput(t *testing.T) {
	for in, want := range map[string]string{
		`{"path":"src/a.ts"}`:                                    "src/a.ts",
		`{"command":"npm   test"}`:                               "npm test",
		`{"from_path":"a","to_path":"b"}`:                        "a -> b",
		`{"patch":"--- a/x\n+++ b/x\n--- /dev/null\n+++ b/y\n"}`: "x y",
		`{"other":1}`:                                            "",
		`"not an object"`:                                        "",
	} {
		assert.Equal(t, want, summarizeInput(json.RawMessage(in)), in)
	}
}

// TestSpinner: the spinner draws at the start of stderr's line, is erased
// before anything is written, stays away from a line of text stdout has
// not ended when both are the terminal, and while a question waits.
func TestSpinner(t *testing.T) {
	var term bytes.Buffer
	s := &spinner{w: &term, shareLine: true}
	s.draw()
	assert.Empty(t, term.String(), "nothing to say yet")
	s.Set("thinking")
	s.draw()
	assert.Equal(t, "\r\033[K⠙ thinking", term.String())

	term.Reset()
	s.around(func() { term.WriteString("Hello") }, true)
	s.draw()
	assert.Equal(t, "\r\033[KHello", term.String(), "erased, then the text; no frame after it")

	term.Reset()
	s.around(func() { term.WriteString(" world\n") }, false)
	s.draw()
	assert.Equal(t, " world\n\r\033[K⠹ thinking", term.String())

	term.Reset()
	s.hold(true)
	s.draw()
	assert.Equal(t, "\r\033[K", term.String(), "erased for the question, not drawn again")
	s.hold(false)

	var nilSpinner *spinner
	nilSpinner.Set("x")
	nilSpinner.hold(true)
	nilSpinner.Stop()
	called := false
	nilSpinner.around(func() { called = true }, false)
	assert.True(t, called)

	started := startSpinner(&strings.Builder{}, false)
	started.Stop()
	started.Stop()
}

// TestDescribePermission: what a question asks to allow, in one line.
func TestDescribePermission(t *testing.T) {
	assert.Equal(t, "deploy: Deploy to staging", describePermission(permission{Action: "deploy", Title: "Deploy to staging?"}))
	assert.Equal(t, "coding_agent_run_command", describePermission(permission{Action: "coding_agent_run_command", Title: "Allow coding_agent_run_command?"}))
	assert.Equal(t, "deploy", describePermission(permission{Action: "deploy"}))
}
