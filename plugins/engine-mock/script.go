package mock

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// op is one script command.
type op struct {
	line int // 1-based line in the prompt
	name string
	text string          // say, fail message, ask title, status message
	code string          // fail code, ask action, status stage
	n    int             // deltas, tools
	tool string          // tool, tools
	json json.RawMessage // tool input
	dur  time.Duration   // sleep, hang
}

var commands = map[string]bool{
	"say": true, "deltas": true, "stamps": true, "history": true, "tool": true, "tools": true, "sleep": true, "hang": true,
	"fail": true, "ask": true, "status": true, "checkpoint": true, "crash": true, "report": true,
}

// parse turns a prompt into a script. ok is false when the prompt is not a
// script at all (its first line is not a command): the engine then echoes it.
func parse(prompt string) (ops []op, ok bool, err error) {
	lines := strings.Split(prompt, "\n")
	first := true
	for i, raw := range lines {
		// A prompt typed on Windows ends its lines with \r\n; the \r is
		// not part of any command or text.
		raw = strings.TrimSuffix(raw, "\r")
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if first {
			first = false
			if !commands[name] {
				return nil, false, nil
			}
		}
		o := op{line: i + 1, name: name}
		bad := func(format string, args ...any) ([]op, bool, error) {
			return nil, true, fmt.Errorf("line %d (%s): %s", i+1, name, fmt.Sprintf(format, args...))
		}
		switch name {
		case "say":
			// The text keeps its inner spacing; the leading space after the
			// command is the separator.
			o.text = strings.TrimPrefix(strings.TrimLeftFunc(raw, unicode.IsSpace)[len("say"):], " ")
		case "deltas", "stamps":
			n, err := strconv.Atoi(rest)
			if err != nil || n < 0 {
				return bad("want a count, got %q", rest)
			}
			o.n = n
		case "tool", "tools":
			if name == "tools" {
				count, r, _ := strings.Cut(rest, " ")
				n, err := strconv.Atoi(count)
				if err != nil || n < 0 {
					return bad("want a count, got %q", count)
				}
				o.n, rest = n, strings.TrimSpace(r)
			}
			tool, input, _ := strings.Cut(rest, " ")
			if tool == "" {
				return bad("want a tool name")
			}
			input = strings.TrimSpace(input)
			if input == "" {
				input = "{}"
			}
			if !json.Valid([]byte(input)) {
				return bad("input is not JSON: %s", input)
			}
			o.tool, o.json = tool, json.RawMessage(input)
		case "sleep", "hang":
			d, err := time.ParseDuration(rest)
			if err != nil {
				return bad("want a duration like 2s, got %q", rest)
			}
			o.dur = d
		case "fail":
			code, msg, _ := strings.Cut(rest, " ")
			if code == "" {
				return bad("want an error code")
			}
			o.code, o.text = code, strings.TrimSpace(msg)
		case "ask", "status":
			action, title, _ := strings.Cut(rest, " ")
			if action == "" {
				return bad("want an action")
			}
			o.code, o.text = action, strings.TrimSpace(title)
		case "report":
			// report started|completed|failed CALL_ID TOOL [JSON]
			f := strings.Fields(rest)
			if len(f) < 3 || (f[0] != "started" && f[0] != "completed" && f[0] != "failed") {
				return bad("want started|completed|failed, a call id and a tool")
			}
			input := "{}"
			if len(f) > 3 {
				input = strings.Join(f[3:], " ")
			}
			if !json.Valid([]byte(input)) {
				return bad("input is not JSON: %s", input)
			}
			o.code, o.text, o.tool, o.json = f[0], f[1], f[2], json.RawMessage(input)
		case "checkpoint", "crash", "history":
		default:
			return bad("unknown command")
		}
		ops = append(ops, o)
	}
	return ops, !first, nil
}

// words splits text into deltas that concatenate back to it: each word
// keeps the spaces that follow it.
func words(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == ' ' && (i+1 == len(text) || text[i+1] != ' ') {
			out = append(out, text[start:i+1])
			start = i + 1
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}
