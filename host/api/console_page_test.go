package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageWait bounds every wait on the console's state: long enough for a
// slow CI machine to start a sandbox, short enough to fail a hung step.
const pageWait = 30 * time.Second

// consolePage drives the console in one Chromium tab: actions, waits on
// what the page shows, numbered screenshots, and every script error or
// console error the page produces (a refused Content-Security-Policy
// included), which the test holds to none.
type consolePage struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string
	n     int

	mu       sync.Mutex
	problems []string
}

// newConsolePage opens a tab on the console of the host at base; its
// screenshots go to a fresh folder agenthost-console-shots/<test> under
// the temporary directory ($TMPDIR), kept after the test.
func newConsolePage(t *testing.T, ctx context.Context, base string) *consolePage {
	shots := filepath.Join(os.TempDir(), "agenthost-console-shots", strings.ReplaceAll(t.Name(), "/", "_"))
	require.NoError(t, os.RemoveAll(shots))
	require.NoError(t, os.MkdirAll(shots, 0o755))
	t.Logf("console screenshots: %s", shots)
	p := &consolePage{t: t, ctx: ctx, base: base, shots: shots}
	// The first action starts the browser: it takes no timeout (chromedp
	// would stop the browser with it).
	_, err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900))
	require.NoError(t, err)
	require.NoError(t, chromedp.Listen(ctx, p.listen))
	t.Cleanup(func() {
		if t.Failed() {
			p.shot("failed")
			t.Logf("console screenshots (the last is the failure): %s", shots)
		}
	})
	return p
}

func (p *consolePage) listen(ev any) {
	var problem string
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		problem = "uncaught: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			problem += " " + e.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			problem = "console.error: " + strings.Join(args, " ")
		}
	case *log.EventEntryAdded:
		// Network errors are answers the test provokes (a bad token's
		// 401); anything else logged as an error (a refused policy, a
		// deprecation turned error) is a problem.
		if e.Entry.Level == log.EntryLevelError && e.Entry.Source != log.EntrySourceNetwork {
			problem = fmt.Sprintf("%s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	}
	if problem != "" {
		p.mu.Lock()
		p.problems = append(p.problems, problem)
		p.mu.Unlock()
	}
}

// Problems returns the script and console errors seen so far.
func (p *consolePage) Problems() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// do runs actions with a deadline.
func (p *consolePage) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression and decodes its value into out.
func (p *consolePage) eval(expr string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
	require.NoError(p.t, err, "evaluate %s", expr)
	if out != nil {
		require.NoError(p.t, json.Unmarshal(raw, out), "evaluate %s: %s", expr, raw)
	}
}

// await evaluates a JavaScript expression whose value is a promise, and
// decodes what it resolves to into out.
func (p *consolePage) await(expr string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err, "evaluate %s", expr)
	require.NoError(p.t, json.Unmarshal(raw, out), "evaluate %s: %s", expr, raw)
}

// until waits for a JavaScript expression to be truthy and decodes its
// value into out (nil to ignore it).
func (p *consolePage) until(expr string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	if out == nil {
		out = new(json.RawMessage)
	}
	waitFor(p.t, ctx, expr, out)
}

// js quotes a Go string as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// text is the text of the first element matching a CSS selector ("" when
// there is none), as an expression.
func text(sel string) string {
	return fmt.Sprintf(`((document.querySelector(%s) || {}).textContent || "")`, js(sel))
}

// untilText waits for the first element matching sel to show want, and
// returns its whole text.
func (p *consolePage) untilText(sel, want string) string {
	p.t.Helper()
	var got string
	p.until(fmt.Sprintf(`%s.includes(%s) && %s`, text(sel), js(want), text(sel)), &got)
	return got
}

// count is the number of elements matching sel, as an expression.
func count(sel string) string {
	return fmt.Sprintf(`document.querySelectorAll(%s).length`, js(sel))
}

// setValue sets a form control's value as typing would (an input event
// follows), for text with newlines that keys would send one by one.
func (p *consolePage) setValue(sel, value string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s;
		el.dispatchEvent(new Event("input", {bubbles: true})); el.focus(); return true })()`, js(sel), js(value)), nil)
}

// unlabelled lists the visible form controls and buttons that have no
// accessible name (a <label>, aria-label or aria-labelledby, or a
// button's text), as an expression.
const unlabelled = `[...document.querySelectorAll("input, select, textarea, button")]
	.filter((el) => el.type !== "hidden" && el.getClientRects().length > 0)
	.filter((el) => !((el.getAttribute("aria-label") || "").trim() || el.getAttribute("aria-labelledby") ||
		[...(el.labels || [])].some((l) => l.textContent.trim()) || (el.tagName === "BUTTON" && el.textContent.trim())))
	.map((el) => el.outerHTML.slice(0, 160))`

// step checks that the page shows no error and that every control it
// shows is labelled, then saves a screenshot.
func (p *consolePage) step(name string) {
	p.t.Helper()
	var shown, bare []string
	p.eval(`[...document.querySelectorAll(".error")].map(e => e.textContent)`, &shown)
	assert.Empty(p.t, shown, "step %s: the page shows an error", name)
	p.eval(unlabelled, &bare)
	assert.Empty(p.t, bare, "step %s: controls without a label", name)
	p.shot(name)
}

// shot saves a full-page screenshot as NN-name.png.
func (p *consolePage) shot(name string) {
	p.t.Helper()
	p.n++
	ctx, cancel := context.WithTimeout(p.ctx, pageWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(p.shots, fmt.Sprintf("%02d-%s.png", p.n, name))
	if err := os.WriteFile(file, png, 0o644); err != nil {
		p.t.Logf("screenshot %s: %v", name, err)
	}
}

// shownEvents lists what the page shows of a run's events, as "seq event"
// in seq order: every element of the run's timeline that renders an event
// (data-seq), so a duplicate shows twice and a gap is missing.
func (p *consolePage) shownEvents(runID string) []string {
	p.t.Helper()
	var rows []struct {
		Seq   string `json:"seq"`
		Event string `json:"event"`
	}
	p.eval(fmt.Sprintf(`[...document.querySelectorAll('[data-run=%s] [data-seq]')].map(e => ({seq: e.dataset.seq, event: e.dataset.event}))`,
		js(runID)), &rows)
	sort.SliceStable(rows, func(i, j int) bool {
		a, _ := strconv.Atoi(rows[i].Seq)
		b, _ := strconv.Atoi(rows[j].Seq)
		return a < b
	})
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Seq + " " + r.Event
	}
	return out
}

// loggedEvents lists a run's log from the API as "seq event", and the
// text of its assistant deltas.
func (e *env) loggedEvents(app, runID string) (events []string, said string) {
	e.t.Helper()
	var log struct {
		Items []struct {
			Seq     int64           `json:"seq"`
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	require.Equal(e.t, 200, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+runID+"/events?limit=1000", nil, &log))
	for _, it := range log.Items {
		events = append(events, fmt.Sprintf("%d %s", it.Seq, it.Event))
		if it.Event == "assistant.delta" {
			var d struct{ Text string }
			require.NoError(e.t, json.Unmarshal(it.Payload, &d))
			said += d.Text
		}
	}
	return events, said
}
