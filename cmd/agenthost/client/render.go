package client

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/apiclient"
)

// The payloads the transcript reads (the host's event payloads; README's
// API section and plugins/engine-mock/README.md show them).
type (
	statusPayload struct {
		Stage          string `json:"stage"`
		Message        string `json:"message"`
		SandboxBackend string `json:"sandbox_backend"`
		Engine         string `json:"engine"`
		Reused         bool   `json:"reused"`
		LeftOut        []struct {
			Path   string `json:"path"`
			Reason string `json:"reason"`
		} `json:"left_out"`
	}
	toolPayload struct {
		CallID       string          `json:"tool_call_id"`
		Tool         string          `json:"tool"`
		Input        json.RawMessage `json:"input"`
		ErrorCode    string          `json:"error_code"`
		ErrorMessage string          `json:"error_message"`
	}
	changes struct {
		Added    []string `json:"added"`
		Modified []string `json:"modified"`
		Deleted  []string `json:"deleted"`
	}
	revisionPayload struct {
		RevisionID string  `json:"revision_id"`
		Applied    bool    `json:"applied"`
		Changes    changes `json:"changes"`
	}
	terminalPayload struct {
		ErrorCode    string `json:"error_code"`
		ErrorMessage string `json:"error_message"`
		Result       struct {
			Kind         string  `json:"kind"`
			RevisionID   string  `json:"revision_id"`
			CheckpointID string  `json:"checkpoint_id"`
			MergedInto   string  `json:"merged_into"`
			Changes      changes `json:"changes"`
			Conflicts    []struct {
				Path string `json:"path"`
			} `json:"conflicts"`
		} `json:"result"`
	}
)

// render writes one event into the transcript: the assistant's text as
// it comes, a line for everything else ("-- " before it), one per tool
// call, when it ends, with its duration.
func (fl *follower) render(ev apiclient.Event) {
	t := fl.out
	switch ev.Type {
	case "run.accepted":
		var p struct {
			Engine string `json:"engine"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		t.line("-- run %s accepted (engine %s)", ev.RunID, p.Engine)
	case "run.status":
		var p statusPayload
		_ = json.Unmarshal(ev.Payload, &p)
		t.line("-- %s", describeStatus(p))
		t.spin.Set(strings.ReplaceAll(p.Stage, "_", " "))
	case "assistant.delta":
		var p struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		t.text(p.Text)
		t.spin.Set("thinking")
	case "tool.started":
		var p toolPayload
		_ = json.Unmarshal(ev.Payload, &p)
		fl.tools[p.CallID] = toolStart{tool: p.Tool, summary: summarizeInput(p.Input), at: ev.TS}
		t.spin.Set("running " + p.Tool)
	case "tool.completed", "tool.failed":
		var p toolPayload
		_ = json.Unmarshal(ev.Payload, &p)
		start, known := fl.tools[p.CallID]
		delete(fl.tools, p.CallID)
		what := p.Tool
		if start.summary != "" {
			what += " " + start.summary
		}
		took := ""
		if known {
			took = " in " + duration(ev.TS.Sub(start.at))
		}
		if ev.Type == "tool.completed" {
			t.line("-- tool %s: completed%s", what, took)
		} else {
			t.line("-- tool %s: failed%s: %s: %s", what, took, p.ErrorCode, p.ErrorMessage)
		}
		t.spin.Set("thinking")
	case "permission.requested":
		var p permission
		_ = json.Unmarshal(ev.Payload, &p)
		t.line("-- permission asked: %s", describePermission(p))
		if d := readableJSON(p.Details); d != "" && d != "null" {
			t.line("   %s", clip(d, 300))
		}
	case "permission.resolved":
		var p struct {
			Allow  bool   `json:"allow"`
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		verdict := "denied"
		if p.Allow {
			verdict = "allowed"
		}
		if p.Reason != "" {
			verdict += ": " + p.Reason
		}
		t.line("-- permission %s", verdict)
	case "run.paused":
		var p pause
		_ = json.Unmarshal(ev.Payload, &p)
		t.line("-- paused (%s)", p.Reason)
		t.spin.Set("paused")
	case "run.resumed":
		t.line("-- resumed")
		t.spin.Set("working")
	case "revision.created":
		var p revisionPayload
		_ = json.Unmarshal(ev.Payload, &p)
		state := "applied"
		if !p.Applied {
			state = "not applied"
		}
		t.line("-- revision %s (%s): %s", p.RevisionID, state, countChanges(p.Changes))
	case "checkpoint.created":
		var p struct {
			CheckpointID string `json:"checkpoint_id"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		t.line("-- checkpoint %s", p.CheckpointID)
	case "run.completed":
		var p terminalPayload
		_ = json.Unmarshal(ev.Payload, &p)
		fl.renderResult(p)
	case "run.failed":
		var p terminalPayload
		_ = json.Unmarshal(ev.Payload, &p)
		t.line("-- failed: %s: %s", p.ErrorCode, p.ErrorMessage)
	case "run.cancelled":
		t.line("-- cancelled")
	default:
		t.line("-- %s %s", ev.Type, clip(string(ev.Payload), 200))
	}
}

// renderResult is a completed run's last lines: what became of its
// files, and each file it changed.
func (fl *follower) renderResult(p terminalPayload) {
	t, r := fl.out, p.Result
	switch r.Kind {
	case "", "unchanged":
		t.line("-- completed: no files changed")
		return
	case "applied":
		t.line("-- completed: revision %s is the draft (checkpoint %s)", r.RevisionID, r.CheckpointID)
	case "merged":
		t.line("-- completed: revision %s, merged with changes made meanwhile, is the draft (checkpoint %s)", r.RevisionID, r.CheckpointID)
	case "conflict":
		var paths []string
		for _, c := range r.Conflicts {
			paths = append(paths, c.Path)
		}
		t.line("-- completed, not applied: the result conflicts with changes made meanwhile in %s; kept as revision %s", strings.Join(paths, ", "), r.RevisionID)
	default:
		t.line("-- completed: %s, revision %s", r.Kind, r.RevisionID)
	}
	for _, c := range []struct {
		verb  string
		paths []string
	}{{"added", r.Changes.Added}, {"modified", r.Changes.Modified}, {"deleted", r.Changes.Deleted}} {
		for _, p := range c.paths {
			t.line("   %-8s %s", c.verb, p)
		}
	}
}

// describeStatus is a run.status event as words.
func describeStatus(p statusPayload) string {
	switch p.Stage {
	case "sandbox_starting":
		return "starting a sandbox (" + p.SandboxBackend + ")"
	case "sandbox_ready":
		if p.Reused {
			return "sandbox ready (the chat's, reused)"
		}
		return "sandbox ready"
	case "engine_starting":
		return "starting engine " + p.Engine
	case "applying":
		return "applying the result"
	case "warning":
		var parts []string
		for _, l := range p.LeftOut {
			parts = append(parts, l.Path+" ("+l.Reason+")")
		}
		return "warning: left out " + strings.Join(parts, ", ")
	}
	if p.Message != "" {
		return p.Stage + ": " + p.Message
	}
	return p.Stage
}

// patchFile finds the files a patch touches (its +++ lines).
var patchFile = regexp.MustCompile(`(?m)^\+\+\+ (?:b/)?(\S+)`)

// summarizeInput is a tool input in a few words: the path or command it
// is about, or the files a patch touches.
func summarizeInput(raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	for _, k := range []string{"path", "command", "query", "pattern"} {
		if s, ok := in[k].(string); ok && s != "" {
			return clip(s, 60)
		}
	}
	if from, ok := in["from_path"].(string); ok {
		to, _ := in["to_path"].(string)
		return clip(from+" -> "+to, 60)
	}
	if patch, ok := in["patch"].(string); ok {
		var files []string
		for _, m := range patchFile.FindAllStringSubmatch(patch, -1) {
			if m[1] != "/dev/null" {
				files = append(files, m[1])
			}
		}
		return clip(strings.Join(files, " "), 60)
	}
	return ""
}

// readableJSON is a JSON value on one line as a person reads it: without
// the \u003c escapes of <, > and & the host's encoder writes (keys in
// order).
func readableJSON(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber() // numbers as written, not as float64
	if dec.Decode(&v) != nil {
		return strings.TrimSpace(string(raw))
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return strings.TrimSpace(string(raw))
	}
	return strings.TrimSpace(b.String())
}

// countChanges is a change set in numbers.
func countChanges(c changes) string {
	var parts []string
	for _, n := range []struct {
		k string
		v int
	}{{"added", len(c.Added)}, {"modified", len(c.Modified)}, {"deleted", len(c.Deleted)}} {
		if n.v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.v, n.k))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

// duration is a tool call's time as a person reads it.
func duration(d time.Duration) string {
	if d < time.Millisecond {
		// Event times are to the millisecond.
		return "<1ms"
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(100 * time.Millisecond).String()
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// transcript writes the human transcript on stdout: the assistant's text
// as it comes, and whole lines, each started on a line of its own. It
// keeps the spinner off the text.
type transcript struct {
	w    io.Writer
	spin *spinner
	// midLine is true when the last text written did not end its line.
	midLine bool
	// sharedTerminal: stdout and stderr are both terminals.
	sharedTerminal bool
}

// text writes the assistant's text as it is.
func (t *transcript) text(s string) {
	if s == "" {
		return
	}
	t.spin.around(func() {
		_, _ = io.WriteString(t.w, s)
		t.midLine = !strings.HasSuffix(s, "\n")
	}, !strings.HasSuffix(s, "\n"))
}

// line writes a line, ending the assistant's text's line first.
func (t *transcript) line(format string, args ...any) {
	t.spin.around(func() {
		if t.midLine {
			_, _ = io.WriteString(t.w, "\n")
		}
		_, _ = fmt.Fprintf(t.w, format+"\n", args...)
		t.midLine = false
	}, false)
}

// note writes a line on w (stderr), ending stdout's line first when both
// are the terminal (the note would go on at the end of the text).
func (t *transcript) note(w io.Writer, format string, args ...any) {
	t.spin.around(func() {
		if t.midLine && t.sharedTerminal {
			_, _ = io.WriteString(t.w, "\n")
			t.midLine = false
		}
		_, _ = fmt.Fprintf(w, format+"\n", args...)
	}, t.midLine)
}

// endLine ends the assistant's text's line, when following stops in it.
func (t *transcript) endLine() {
	if t.midLine {
		t.spin.around(func() { _, _ = io.WriteString(t.w, "\n") }, false)
		t.midLine = false
	}
}

// hold keeps the spinner away (while a question waits for its answer).
func (t *transcript) hold(on bool) { t.spin.hold(on) }

// spinnerFrames turn once a second at spinnerTick.
var spinnerFrames = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// spinnerTick is how often the spinner moves: fast enough to look alive,
// slow enough to cost nothing.
const spinnerTick = 100 * time.Millisecond

// spinner draws "⠋ label" at the start of stderr's line while the run is
// followed; stderr must be a terminal. A nil *spinner does nothing.
type spinner struct {
	w io.Writer
	// shareLine: stdout is a terminal too, where the spinner must not draw
	// over a line of text the assistant has not ended.
	shareLine bool
	mu        sync.Mutex
	label     string
	shown     bool
	midLine   bool
	held      bool
	frame     int
	stop      chan struct{}
	done      chan struct{}
}

func startSpinner(w io.Writer, shareLine bool) *spinner {
	s := &spinner{w: w, shareLine: shareLine, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(spinnerTick)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				s.mu.Lock()
				s.draw()
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// draw shows the next frame; s.mu is held.
func (s *spinner) draw() {
	if s.label == "" || s.held || s.shareLine && s.midLine {
		return
	}
	s.frame = (s.frame + 1) % len(spinnerFrames)
	fmt.Fprintf(s.w, "\r\033[K%c %s", spinnerFrames[s.frame], s.label)
	s.shown = true
}

// clear erases the frame drawn; s.mu is held.
func (s *spinner) clear() {
	if s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

// Set is what the spinner says the run is doing.
func (s *spinner) Set(label string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.label = label
	s.mu.Unlock()
}

// around erases the spinner, runs write, and records whether the text
// written left stdout mid-line.
func (s *spinner) around(write func(), midLine bool) {
	if s == nil {
		write()
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	write()
	s.midLine = midLine
}

func (s *spinner) hold(on bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = on
	if on {
		s.clear()
	}
}

// Stop ends the spinner's goroutine and erases it; it may be called more
// than once.
func (s *spinner) Stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	s.clear()
	s.mu.Unlock()
}
