package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mockScript is a mock engine prompt (plugins/engine-mock/README.md):
// text, one tool call with its JSON input, a permission question, text.
func mockScript(t *testing.T, intro, tool string, input any, action, question, outro string) string {
	t.Helper()
	var in strings.Builder
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false) // the prompt shows <h1> as the user wrote it
	require.NoError(t, enc.Encode(input))
	return fmt.Sprintf("say %s\ntool %s %s\nask %s %s\nsay %s", intro, tool, strings.TrimSpace(in.String()), action, question, outro)
}

// TestConsoleWholeFlow drives the console in headless Chromium through
// what a builder does, asserting on what the page shows: sign in (a bad
// token first), create an app from an uploaded zip, open a chat, send a
// mock script that streams text, patches a file and asks permission,
// allow it, read the tool row and the diff, restore a checkpoint and see
// its marker, start a second run, reload the page while it waits on its
// permission and see its timeline continue without gap or duplicate
// (held to the run's log from the API), cancel a third run from the
// composer, then runs, capabilities, files, sign out, a read-only token
// that gets no write controls, and another tenant's that sees nothing.
// No step may show an error or an unlabelled control, and the page may
// log no script or policy error. Screenshots of every step go to
// $TMPDIR/agenthost-console-shots/TestConsoleWholeFlow/ (the log says).
func TestConsoleWholeFlow(t *testing.T) {
	bctx := testenv.Browser(t)
	e := startEnvIn(t, "sqlite", testenv.PluginConfigDir(t, "mock", "local", "patch"))
	p := newConsolePage(t, bctx, e.srv.URL)

	// Sign in: a bad token is refused with the host's code.
	p.do(chromedp.Navigate(e.srv.URL + "/console/"))
	p.do(chromedp.WaitVisible(chromedp.ID("token")))
	p.step("sign-in")
	p.do(chromedp.SendKeys(chromedp.ID("token"), "not-a-token"), chromedp.Click(chromedp.CSS(`form.signin button[type=submit]`)))
	p.untilText(".signin .error", "UNAUTHENTICATED")
	p.shot("sign-in-refused")
	p.setValue("#token", "")
	p.do(chromedp.SendKeys(chromedp.ID("token"), e.tokenA+kb.Enter))
	p.untilText("#who", "default")
	assert.Contains(t, p.untilText("#who", "apps.write"), "Sign out")
	p.until(count(`#app-template option[value="static-site"]`), nil)
	p.step("apps")

	// Create an app from an uploaded zip.
	zipFile := filepath.Join(t.TempDir(), "hello.zip")
	require.NoError(t, os.WriteFile(zipFile, newZip(t, map[string]string{"index.html": "<h1>Hello</h1>\n", "README.md": "a demo\n"}), 0o644))
	p.do(chromedp.SendKeys(chromedp.ID("app-name"), "console demo"), chromedp.Click(chromedp.ID("src-archive")),
		chromedp.SetUploadFiles(chromedp.ID("app-archive"), []string{zipFile}), chromedp.Click(chromedp.CSS(`form.create-app button[type=submit]`)))
	p.untilText(".app-head h1", "console demo")
	var app string
	p.eval(`location.hash.split("/")[2]`, &app)
	require.True(t, strings.HasPrefix(app, "app_"), app)
	p.step("app-created")

	// A new chat.
	p.do(chromedp.SendKeys(chromedp.ID("new-chat-title"), "greeting"), chromedp.Click(chromedp.CSS(`form.new-chat button`)))
	p.untilText(".chat-head h2", "greeting")
	p.untilText(".chats [aria-current=page]", "greeting")
	p.until(count(`.composer select.engine option[value="mock"]`), nil)
	p.step("new-chat")

	// Run 1: text, a patch, a permission. Enter sends.
	p.setValue(".composer textarea", mockScript(t, "Making the greeting bigger.", "coding_agent_apply_patch",
		map[string]string{"patch": "--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>Hello</h1>\n+<h1>Hello, world</h1>\n"},
		"deploy", "Deploy the bigger greeting?", "Deployed."))
	p.do(chromedp.SendKeys(chromedp.CSS(".composer textarea"), kb.Enter))
	p.untilText(".run .card.perm .perm-title", "Deploy the bigger greeting?")
	var run1 string
	p.eval(`document.querySelector(".run").dataset.run`, &run1)
	assert.Equal(t, "Making the greeting bigger.", p.untilText(`[data-run="`+run1+`"] .ev.say .text`, "bigger."))
	assert.Contains(t, p.untilText(`[data-run="`+run1+`"] .ev.tool summary`, "completed"), "coding_agent_apply_patch")
	var sendDisabled, cancelDisabled bool
	p.eval(`document.querySelector(".composer .send").disabled`, &sendDisabled)
	p.eval(`document.querySelector(".composer .cancel").disabled`, &cancelDisabled)
	assert.True(t, sendDisabled, "Send waits for the active run")
	assert.False(t, cancelDisabled, "Cancel stops the active run")
	p.step("permission-card")

	// The tool row opens on its input and output.
	p.do(chromedp.Click(chromedp.CSS(`[data-run="` + run1 + `"] .ev.tool summary`)))
	assert.Contains(t, p.untilText(`[data-run="`+run1+`"] .ev.tool .tool-in`, "index.html"), "+<h1>Hello, world</h1>")
	assert.Contains(t, p.untilText(`[data-run="`+run1+`"] .ev.tool .tool-output`, `"applied": true`), `"path": "index.html"`)
	p.step("tool-row")

	// Allow: the run goes on and its result is applied.
	p.do(chromedp.Click(chromedp.CSS(`[data-run="` + run1 + `"] .card.perm button.allow`)))
	p.untilText(`[data-run="`+run1+`"] .card.perm .decision`, "Allowed")
	result := p.untilText(`[data-run="`+run1+`"] .result-row`, "applied")
	assert.Contains(t, result, "modified: index.html")
	assert.Equal(t, "Making the greeting bigger.Deployed.", p.joinedSay(run1))
	p.until(`!document.querySelector(".composer .send").disabled`, nil)
	p.step("run-applied")

	// Its diff against the revision it started from.
	p.do(chromedp.Click(chromedp.CSS(`[data-run="` + run1 + `"] .result-row a`)))
	assert.Equal(t, "-<h1>Hello</h1>", p.untilText("pre.diff .line.del", "Hello"))
	assert.Equal(t, "+<h1>Hello, world</h1>", p.untilText("pre.diff .line.add", "Hello, world"))
	assert.Contains(t, p.untilText(".change-detail .result-line", "applied"), "modified: index.html")
	p.step("diff")

	// Restore the app's first checkpoint: a new revision, and a marker in
	// the chat.
	p.do(chromedp.Click(chromedp.CSS(`tr[data-kind="created"] button`)))
	var restored string
	p.until(`(document.querySelector(".restored .new-revision") || {}).textContent`, &restored)
	var draft struct {
		DraftRevisionID string `json:"draft_revision_id"`
	}
	require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app, nil, &draft))
	assert.Equal(t, draft.DraftRevisionID, restored, "the page shows the new draft revision")
	p.step("restored")
	p.do(chromedp.Click(chromedp.CSS(`.restored a[href*="/chat/"]`)))
	assert.Contains(t, p.untilText(".marker.restore", restored), "Restored checkpoint cp_")
	p.step("restore-marker")

	// Run 2 renames the file and asks again; the page is reloaded while it
	// waits.
	p.setValue(".composer textarea", mockScript(t, "Renaming the page.", "coding_agent_rename_file",
		map[string]string{"from_path": "index.html", "to_path": "home.html"}, "publish", "Publish home.html?", "Published."))
	p.do(chromedp.SendKeys(chromedp.CSS(".composer textarea"), kb.Enter))
	p.until(count(".run")+` === 2 && ([...document.querySelectorAll(".run")].at(-1).querySelector(".perm-title") || {}).textContent === "Publish home.html?"`, nil)
	var run2 string
	p.eval(`[...document.querySelectorAll(".run")].at(-1).dataset.run`, &run2)
	// run.paused follows the question; after it nothing happens until a
	// decision, so the page and the log can be compared as they stand.
	p.untilText(`[data-run="`+run2+`"] .ev.paused`, "waiting for a decision")
	logged, _ := e.loggedEvents(app, run2)
	assert.Equal(t, logged, p.shownEvents(run2), "before the reload: every logged event once")
	p.step("before-reload")

	p.do(chromedp.Reload())
	p.untilText(`[data-run="`+run2+`"] .card.perm .perm-title`, "Publish home.html?")
	p.untilText(`[data-run="`+run2+`"] .ev.paused`, "waiting for a decision")
	p.until(`document.querySelector(".live").dataset.state === "live"`, nil)
	logged, _ = e.loggedEvents(app, run2)
	assert.Equal(t, logged, p.shownEvents(run2), "after the reload: the log read again, nothing twice")
	assert.Contains(t, p.untilText(".timeline", "Restored checkpoint"), "Making the greeting bigger.")
	p.step("after-reload")

	p.do(chromedp.Click(chromedp.CSS(`[data-run="` + run2 + `"] .card.perm button.allow`)))
	assert.Contains(t, p.untilText(`[data-run="`+run2+`"] .result-row`, "applied"), "home.html")
	for _, run := range []string{run1, run2} {
		logged, said := e.loggedEvents(app, run)
		assert.Equal(t, logged, p.shownEvents(run), "run %s: the timeline is the log, no gap, no duplicate", run)
		assert.Equal(t, said, p.joinedSay(run), "run %s: the text is the deltas, once each", run)
	}
	assert.Equal(t, "Renaming the page.Published.", p.joinedSay(run2))
	assert.Contains(t, p.untilText(`[data-run="`+run2+`"] .ev.tool summary`, "completed"), "coding_agent_rename_file")
	p.step("after-reload-finished")

	// Run 3 is cancelled from the composer while it sleeps.
	p.setValue(".composer textarea", "say Waiting a while.\nsleep 60s\nsay never")
	p.do(chromedp.Click(chromedp.CSS(".composer .send")))
	p.until(count(".run")+` === 3 && `+text(".run:last-of-type .ev.say .text")+` === "Waiting a while."`, nil)
	p.do(chromedp.Click(chromedp.CSS(".composer .cancel")))
	p.untilText(".run:last-of-type .result-row", "Cancelled")
	p.until(`!document.querySelector(".composer .send").disabled`, nil)
	p.step("cancelled")

	// Runs: both, with their timings and the raw log of one.
	p.do(chromedp.Click(chromedp.CSS(`nav.tabs a[href$="/runs"]`)))
	p.until(count("table.runs tbody tr[data-run]")+` === 3`, nil)
	row := p.untilText(`tr[data-run="`+run2+`"]`, "completed")
	assert.Contains(t, row, "mock")
	assert.Contains(t, row, "total")
	p.do(chromedp.Click(chromedp.CSS(`tr[data-run="` + run2 + `"] a`)))
	assert.Contains(t, p.untilText("pre.event-log", "permission.resolved"), `"event": "run.completed"`)
	p.step("runs")

	// Capabilities and plugin health.
	p.do(chromedp.Click(chromedp.CSS(`nav.tabs a[href$="/about"]`)))
	assert.Contains(t, p.untilText(`tr[data-engine="mock"]`, "healthy"), "yes")
	p.untilText(`tr[data-sandbox="local"]`, "healthy")
	p.untilText(`tr[data-plugin="patch"]`, "healthy")
	p.untilText("table.tools", "coding_agent_apply_patch")
	p.step("capabilities")

	// Files: the draft after the restore and the rename.
	p.do(chromedp.Click(chromedp.CSS(`nav.tabs a[href$="/files"]`)))
	p.untilText(".file-tree", "home.html")
	p.do(chromedp.Click(chromedp.CSS(`.file-tree a[href$="path=home.html"]`)))
	assert.Equal(t, "<h1>Hello</h1>\n", p.untilText("pre.file-text", "Hello"))
	p.step("files")

	// The token went into no URL: requests carried it in a header, the
	// streams a ticket.
	var urls []string
	p.eval(`performance.getEntriesByType("resource").map(e => e.name).concat([location.href])`, &urls)
	streams := 0
	for _, u := range urls {
		assert.NotContains(t, u, e.tokenA)
		if strings.Contains(u, "/stream?ticket=st_") {
			streams++
		}
	}
	assert.Positive(t, streams, "runs were followed with EventSource on stream tickets")

	// Sign out: the token leaves the tab.
	p.do(chromedp.Click(chromedp.CSS("button.signout")))
	p.do(chromedp.WaitVisible(chromedp.ID("token")))
	var kept int
	p.eval(`Object.keys(sessionStorage).filter(k => k.startsWith("agenthost.")).length`, &kept)
	assert.Zero(t, kept, "nothing of the session is left in sessionStorage")
	p.step("signed-out")

	// A read-only token sees the chat and gets no write controls.
	p.do(chromedp.SendKeys(chromedp.ID("token"), e.readA+kb.Enter))
	p.untilText("#who", "read-only")
	p.untilText(".apps", "console demo")
	assert.Zero(t, p.count("form.create-app"))
	p.do(chromedp.Click(chromedp.CSS(`a[href="#/apps/` + app + `"]`)))
	p.do(chromedp.Click(chromedp.CSS(`.chats a`)))
	p.until(`document.querySelectorAll(".result-row").length === 3`, nil)
	for _, sel := range []string{".composer", "form.new-chat", "button.allow", "button.deny", ".ev.checkpoint button"} {
		assert.Zero(t, p.count(sel), "a read-only token gets no %s", sel)
	}
	p.do(chromedp.Click(chromedp.CSS(`nav.tabs a[href$="/changes"]`)))
	p.untilText("table.checkpoints", "created")
	assert.Zero(t, p.count("table.checkpoints button"), "no Restore for a read-only token")
	p.step("read-only")

	// Another tenant's token sees none of it.
	p.do(chromedp.Click(chromedp.CSS("button.signout")))
	p.do(chromedp.SendKeys(chromedp.ID("token"), e.tokenB+kb.Enter))
	p.untilText("#who", "other")
	p.untilText(".apps tbody", "No apps yet.")
	p.step("other-tenant")

	assert.Empty(t, p.Problems(), "the page logged no script or policy error")
}

// joinedSay is the assistant text the page shows for a run.
func (p *consolePage) joinedSay(runID string) string {
	p.t.Helper()
	var s string
	p.eval(fmt.Sprintf(`[...document.querySelectorAll('[data-run=%s] .ev.say .text')].map(e => e.textContent).join("")`, js(runID)), &s)
	return s
}

// count is the number of elements matching sel now.
func (p *consolePage) count(sel string) int {
	p.t.Helper()
	var n int
	p.eval(count(sel), &n)
	return n
}

// TestConsoleFollowerDeliversEachEventOnce holds the console's follower
// (follow.js) to its promise in Chromium against a real host: a duplicate
// is dropped, a gap is refused and then filled from the log, and a live
// run followed from its start (the log first, then EventSource on a
// stream ticket) is delivered exactly as logged.
func TestConsoleFollowerDeliversEachEventOnce(t *testing.T) {
	bctx := testenv.Browser(t)
	e := startEnvIn(t, "sqlite", testenv.PluginConfigDir(t, "mock", "local", "patch"))
	p := newConsolePage(t, bctx, e.srv.URL)
	app := e.createApp(e.tokenA)
	finished := e.createRun(e.tokenA, app, "say one two three")
	e.waitRun(app, finished.ID)
	p.do(chromedp.Navigate(e.srv.URL + "/console/"))
	p.do(chromedp.WaitVisible(chromedp.ID("token")))
	p.eval(`sessionStorage.setItem("agenthost.console.token", `+js(e.tokenA)+`), true`, nil)

	seqs := func(logged []string) []int {
		out := make([]int, len(logged))
		for i := range logged {
			out[i] = i + 1
			require.True(t, strings.HasPrefix(logged[i], fmt.Sprintf("%d ", i+1)), "the log is gap-free: %v", logged)
		}
		return out
	}

	var got struct {
		Answers []bool
		Seen    []int
		Done    bool
	}
	p.await(fmt.Sprintf(`(async () => {
		const { Follower } = await import("/console/js/follow.js");
		const seen = [];
		const f = new Follower(%s, %s, { onEvent: (e) => seen.push(e.seq) });
		const answers = [f.deliver({ seq: 1, event: "run.accepted" }), f.deliver({ seq: 1, event: "run.accepted" }),
			f.deliver({ seq: 3, event: "run.status" })];
		await f.catchUp();
		return { answers, seen, done: f.done };
	})()`, js(app), js(finished.ID)), &got)
	logged, _ := e.loggedEvents(app, finished.ID)
	assert.Equal(t, []bool{true, true, false}, got.Answers, "next: taken; again: dropped; past a gap: refused")
	assert.Equal(t, seqs(logged), got.Seen, "the gap filled from the log, each event once")
	assert.True(t, got.Done)

	live := e.createRun(e.tokenA, app, "say start\nsleep 300ms\nsay middle\nsleep 300ms\nsay end")
	var followed struct {
		Seen   []int
		States []string
	}
	p.await(fmt.Sprintf(`(async () => {
		const { Follower } = await import("/console/js/follow.js");
		return await new Promise((resolve) => {
			const seen = [], states = [];
			const f = new Follower(%s, %s, {
				onEvent: (e) => seen.push(e.seq),
				onState: (s) => { states.push(s); if (s === "done") resolve({ seen, states }); },
			});
			f.start();
		});
	})()`, js(app), js(live.ID)), &followed)
	logged, _ = e.loggedEvents(app, live.ID)
	assert.Equal(t, seqs(logged), followed.Seen, "a live run, each event once, in order")
	assert.Contains(t, followed.States, "live", "the run was followed on its stream")
	assert.Empty(t, p.Problems())
}
