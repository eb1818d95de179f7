package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longScript makes a run of some fifty events: forty words, a tool call,
// a last word.
func longScript() string {
	words := make([]string, 40)
	for i := range words {
		words[i] = "word"
	}
	return "say " + strings.Join(words, " ") + "\n" + strings.SplitN(patchScript, "\n", 3)[1] + "\nsay done"
}

// seqsOf checks that NDJSON output is events with seqs from..from+n-1,
// in order, and returns the lines.
func seqsOf(t *testing.T, out string, from int64) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		var ev struct {
			Seq int64 `json:"seq"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		require.Equal(t, from+int64(i), ev.Seq, "line %d: each event once, in order", i+1)
	}
	return lines
}

// TestClientReconnects: a proxy between the client and the host cuts the
// run's stream in the middle of an event, again and again; the client
// resumes each time after the last event it printed (Last-Event-ID) and
// prints every event exactly once, in order: its NDJSON is the run's log,
// its transcript the one a clean follow prints. A host gone for good
// ends following with exit 5 and the command that resumes it, which
// prints exactly the rest.
func TestClientReconnects(t *testing.T) {
	h := startHost(t)
	app := helloApp(t)

	t.Run("json", func(t *testing.T) {
		p := newCuttingProxy(t, h.url, 5, 7, 11)
		code, out, errOut := runClient(t, "", "run", app, longScript(), "--json", "--url", p.url())
		require.Equal(t, 0, code, errOut)
		lines := seqsOf(t, out, 1)
		var first struct {
			RunID string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
		log := h.events(app, first.RunID)
		require.Len(t, lines, len(log))
		require.Greater(t, len(log), 5+7+11, "the run outlasts the cuts")
		for i := range log {
			assert.JSONEq(t, string(log[i]), lines[i])
		}
		assert.Equal(t, []string{"", "5", "12", "23"}, p.streamRequests(), "each reconnection resumes after the last event printed")
		assert.Equal(t, 3, strings.Count(errOut, "; reconnecting in "), errOut)
	})

	t.Run("transcript", func(t *testing.T) {
		p := newCuttingProxy(t, h.url, 4, 9)
		code, out, errOut := runClient(t, "", "run", app, longScript(), "--url", p.url())
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, []string{"", "4", "13"}, p.streamRequests())
		run := regexp.MustCompile(`^-- run (run_\w+) accepted`).FindStringSubmatch(out)
		require.NotNil(t, run, out)
		code, clean, errOut := runClient(t, "", "runs", "follow", app, run[1])
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, clean, out)
		assert.Contains(t, out, strings.Repeat("word ", 39)+"word\n")
	})

	t.Run("lost for good", func(t *testing.T) {
		p := newCuttingProxy(t, h.url, 6)
		p.closeAfterCut = true
		code, out, errOut := runClient(t, "", "run", app, longScript(), "--json", "--url", p.url(), "--reconnect-for", "300ms")
		require.Equal(t, 5, code, errOut)
		lines := seqsOf(t, out, 1)
		require.Len(t, lines, 6)
		m := regexp.MustCompile(`the run goes on in the host: follow it again with\n  agenthost runs follow (app_\w+) (run_\w+) --after 6\n$`).FindStringSubmatch(errOut)
		require.NotNil(t, m, errOut)
		assert.Contains(t, errOut, "agenthost: lost the run's stream after event 6: ")

		code, rest, errOut := runClient(t, "", "runs", "follow", m[1], m[2], "--after", "6", "--json")
		require.Equal(t, 0, code, errOut)
		more := seqsOf(t, rest, 7)
		log := h.events(app, m[2])
		require.Len(t, append(lines, more...), len(log))
		for i, l := range append(lines, more...) {
			assert.JSONEq(t, string(log[i]), l)
		}
	})
}
