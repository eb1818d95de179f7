package soak_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// counterFile is the file each turn reads and then patches: it holds the
// number of the session's last turn, so a turn that saw another state of
// the app than the previous turn left is caught.
const counterFile = "counter.txt"

// turnDeltas is how many `deltas` each turn emits between its tool calls,
// besides the words it says.
const turnDeltas = 10

// contextPad is a comment line (the mock engine skips it) that makes each
// prompt about 2,000 characters, as a user's message with pasted context
// is: the chat's history then reaches the host's budget (24,000
// characters by default) within a dozen turns, and from there on every
// run carries a full history, the steady state of a long chat. With short
// prompts it took some 60 turns per session, past a 2-minute soak's
// warm-up, and the engine's memory grew until then.
var contextPad = "# context: " + strings.Repeat("the user pasted some context here; ", 56) + "\n"

// session is one chat: an app of its own, whose turns run one after the
// other, each in the chat the first one started.
type session struct {
	h     *hostProc
	id    int
	appID string
	chat  string // "" until the first turn made it
	turns int    // turns completed, which is also the counter file's content
}

// appModules is how many source files each session's app has besides
// the counter and index.html: an app of some size, as real ones are. The
// host keeps recent revisions' manifests in memory, up to 50,000 entries
// (host/store's manifestCache, about 10 MiB at its bound): with 100 files
// a revision, it is full after 500 turns, within warm-up, and the soak
// compares a host in its steady state. With two files a revision it
// filled for 25,000 turns, 10 to 20 minutes here, and a soak of that
// length saw its host's memory grow by that much after warm-up.
const appModules = 98

// newSession creates the session's app.
func newSession(ctx context.Context, h *hostProc, id int) (*session, error) {
	var app struct {
		ID string `json:"id"`
	}
	files := map[string]string{counterFile: "0\n", "index.html": fmt.Sprintf("<h1>soak session %d</h1>\n", id)}
	for i := range appModules {
		files[fmt.Sprintf("src/module%02d.js", i)] = fmt.Sprintf("// module %d of soak session %d\nexport function f%d(x) {\n  return x + %d;\n}\n", i, id, i, i)
	}
	if _, err := h.call(ctx, "POST", "/admin/apps", map[string]any{"name": fmt.Sprintf("soak-%d", id), "files": files}, &app); err != nil {
		return nil, err
	}
	return &session{h: h, id: id, appID: app.ID}, nil
}

// script is the mock engine script of the session's next turn: some words,
// a read of the counter, deltas, a patch that moves it on, more words.
func (s *session) script() string {
	n := s.turns + 1
	patch := fmt.Sprintf("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-%d\n+%d\n", counterFile, counterFile, n-1, n)
	read, _ := json.Marshal(map[string]string{"path": counterFile})
	apply, _ := json.Marshal(map[string]string{"patch": patch})
	return contextPad + fmt.Sprintf("say Session %d, turn %d: reading the counter.\ntool coding_agent_read_file %s\ndeltas %d\ntool coding_agent_apply_patch %s\nsay The counter is at %d now.",
		s.id, n, read, turnDeltas, apply, n)
}

// event is one SSE event of a run's stream.
type event struct {
	Seq     int64
	Type    string
	Payload json.RawMessage
}

// turn runs one turn: creates the run in the session's chat, follows its
// stream from the start to the terminal event, and checks what it saw.
func (s *session) turn(ctx context.Context) error {
	body := map[string]any{"engine": "mock", "prompt": s.script()}
	if s.chat != "" {
		body["chat_session_id"] = s.chat
	}
	var run struct {
		ID            string `json:"id"`
		ChatSessionID string `json:"chat_session_id"`
	}
	if _, err := s.h.call(ctx, "POST", "/admin/apps/"+s.appID+"/coding-agent/runs", body, &run); err != nil {
		return fmt.Errorf("session %d turn %d: %w", s.id, s.turns+1, err)
	}
	switch {
	case s.chat == "":
		s.chat = run.ChatSessionID
	case run.ChatSessionID != s.chat:
		return fmt.Errorf("session %d turn %d: run %s is in chat %q, not %q", s.id, s.turns+1, run.ID, run.ChatSessionID, s.chat)
	}
	events, err := s.stream(ctx, run.ID)
	if err == nil {
		err = s.check(events)
	}
	if err != nil {
		return fmt.Errorf("session %d turn %d, run %s: %w", s.id, s.turns+1, run.ID, err)
	}
	s.turns++
	return nil
}

// stream reads a run's stream from its first event until the terminal one.
func (s *session) stream(ctx context.Context, runID string) ([]event, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.h.url+"/admin/apps/"+s.appID+"/coding-agent/runs/"+runID+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("stream answered %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var events []event
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			if ev.Seq, err = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64); err != nil {
				return events, fmt.Errorf("bad event id %q", line)
			}
		case strings.HasPrefix(line, "event: "):
			ev.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var env struct {
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &env); err != nil {
				return events, fmt.Errorf("event %d: bad data: %w", ev.Seq, err)
			}
			ev.Payload = env.Payload
		case line == "" && ev.Type != "":
			events = append(events, ev)
			if terminal(ev.Type) {
				return events, nil
			}
			ev = event{}
		}
	}
	if err := sc.Err(); err != nil {
		return events, fmt.Errorf("stream broke after %d events: %w", len(events), err)
	}
	return events, fmt.Errorf("stream ended after %d events without a terminal event", len(events))
}

func terminal(typ string) bool {
	return typ == "run.completed" || typ == "run.failed" || typ == "run.cancelled"
}

// check holds a turn's events to what its script must produce: seqs 1..n
// with no gap or repeat, one terminal event (run.completed, last), both
// tool calls completed (the read seeing the previous turn's counter), every
// delta, and the result applied.
func (s *session) check(events []event) error {
	var deltas, reads, patches int
	for i, e := range events {
		if e.Seq != int64(i+1) {
			return fmt.Errorf("event %d (%s) has seq %d: the log has a gap or a repeat", i+1, e.Type, e.Seq)
		}
		switch e.Type {
		case "assistant.delta":
			deltas++
		case "tool.failed":
			return fmt.Errorf("a tool failed: %s", e.Payload)
		case "tool.completed":
			var p struct {
				Tool   string `json:"tool"`
				Output struct {
					Content string `json:"content"`
				} `json:"output"`
			}
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return fmt.Errorf("tool.completed %s: %w", e.Payload, err)
			}
			switch p.Tool {
			case "coding_agent_read_file":
				reads++
				if want := fmt.Sprintf("%d\n", s.turns); p.Output.Content != want {
					return fmt.Errorf("read %s as %q, want %q", counterFile, p.Output.Content, want)
				}
			case "coding_agent_apply_patch":
				patches++
			}
		}
	}
	last := events[len(events)-1]
	if last.Type != "run.completed" {
		return fmt.Errorf("ended %s: %s", last.Type, last.Payload)
	}
	var done struct {
		Result struct {
			Kind string `json:"kind"`
		} `json:"result"`
	}
	if err := json.Unmarshal(last.Payload, &done); err != nil {
		return fmt.Errorf("run.completed %s: %w", last.Payload, err)
	}
	// The two `say` lines stream a delta per word: at least one each.
	switch {
	case reads != 1 || patches != 1:
		return fmt.Errorf("%d reads and %d patches completed, want 1 and 1", reads, patches)
	case deltas < turnDeltas+2:
		return fmt.Errorf("%d assistant.delta events, want at least %d", deltas, turnDeltas+2)
	case done.Result.Kind != "applied":
		return fmt.Errorf("result %q, want applied: %s", done.Result.Kind, last.Payload)
	}
	return nil
}
