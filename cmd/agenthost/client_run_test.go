package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helloApp creates an app whose index.html says Hello and returns its id.
func helloApp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]appFile{"index.html": {"<h1>Hello</h1>\n", 0o644}})
	id, _, _ := createApp(t, "hello", "--from", dir)
	return id
}

// patchScript is a mock script: say, patch index.html, say.
const patchScript = `say Making the greeting bigger.
tool coding_agent_apply_patch {"patch":"--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>Hello</h1>\n+<h1>Hello, world</h1>\n"}
say Done.`

// transcriptOf is what run prints for patchScript, its ids and times
// captured.
var transcriptOf = regexp.MustCompile(`^-- run (run_\w+) accepted \(engine mock\)
-- starting a sandbox \(local\)
-- sandbox ready
-- starting engine mock
Making the greeting bigger\.
-- tool coding_agent_apply_patch index\.html: completed in (?:<1ms|\d+ms|[\d.]+s)
Done\.
-- applying the result
-- revision (rev_\w+) \(applied\): 1 modified
-- checkpoint (cp_\w+)
-- completed: revision (rev_\w+) is the draft \(checkpoint (cp_\w+)\)
   modified index\.html
$`)

type runRecord struct {
	Status           string `json:"status"`
	ResultRevisionID string `json:"result_revision_id"`
	ChatSessionID    string `json:"chat_session_id"`
}

// TestClientRunFollow: run follows a run to its end, printing the text as
// it comes, one line per tool call with its outcome and duration, the
// stages, and the result (the revision, its checkpoint, the changed
// files); it exits 0. The other commands show what the run made: diff,
// runs list and get, checkpoints (and restore), chats.
func TestClientRunFollow(t *testing.T) {
	h := startHost(t)
	app := helloApp(t)

	code, out, errOut := runClient(t, "", "run", "hello", patchScript)
	require.Equal(t, 0, code, errOut)
	m := transcriptOf.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	run, rev, cp := m[1], m[2], m[3]
	assert.Equal(t, rev, m[4])
	assert.Equal(t, cp, m[5])
	var r runRecord
	h.api("GET", "/admin/apps/"+app+"/coding-agent/runs/"+run, &r)
	assert.Equal(t, "completed", r.Status)
	assert.Equal(t, rev, r.ResultRevisionID)

	code, out, errOut = runClient(t, "", "diff", app)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>Hello</h1>\n+<h1>Hello, world</h1>\n", out)

	code, out, errOut = runClient(t, "", "runs", "list", "hello")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^`+run+`\s+completed\s+mock\s+\S+ \S+\s+`+rev+`\s+-$`, out)
	code, out, errOut = runClient(t, "", "runs", "get", app, run)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^status\s+completed$`, out)
	assert.Regexp(t, `(?m)^result\s+`+rev+`$`, out)
	assert.Contains(t, out, "output:\nMaking the greeting bigger.Done.\n")

	code, out, errOut = runClient(t, "", "checkpoints", "list", app)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^`+cp+`\s+run\s+`+rev+`\s+\*\s+`, out)
	created := regexp.MustCompile(`(?m)^(cp_\w+)\s+created\s+rev_\w+\s+\d`).FindStringSubmatch(out)
	require.NotNil(t, created, out)
	code, out, errOut = runClient(t, "", "checkpoints", "restore", app, created[1])
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^restored `+created[1]+`: the draft is revision rev_\w+ \(checkpoint cp_\w+\)\n$`, out)
	code, out, _ = runClient(t, "", "apps", "download", app, "-o", "-")
	require.Equal(t, 0, code)
	assert.Equal(t, map[string]appFile{"index.html": {"<h1>Hello</h1>\n", 0o644}}, unzipFiles(t, []byte(out)))

	code, out, errOut = runClient(t, "", "chats", "list", app)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, r.ChatSessionID)
	code, out, errOut = runClient(t, "", "chats", "get", app, r.ChatSessionID)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "-- user")
	assert.Contains(t, out, "-- assistant ("+run+")")
	assert.Contains(t, out, "Making the greeting bigger.Done.")

	code, out, errOut = runClient(t, "", "models", "list")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `^ID\s+NAME\s+PROVIDER\s+MODEL\s+SCOPE\s+DEFAULT\s+ENDPOINT\n`, out)
}

// TestClientRunOutcomes: the exit code is the run's outcome: 1 for a
// failed run (the transcript says why; with --json, stderr does), 3 for a
// cancelled one; --no-follow prints the run's id and returns at once.
func TestClientRunOutcomes(t *testing.T) {
	startHost(t)
	app := helloApp(t)
	fail := "say Trying.\nfail BUILD_BROKEN the build does not compile"

	code, out, _ := runClient(t, "", "run", app, fail)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasSuffix(out, "Trying.\n-- failed: BUILD_BROKEN: the build does not compile\n"), out)

	code, out, errOut := runClient(t, "", "run", app, fail, "--json")
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Contains(t, lines[len(lines)-1], `"event":"run.failed"`)
	assert.Regexp(t, `^agenthost: run run_\w+ failed: BUILD_BROKEN: the build does not compile\n$`, errOut)

	code, out, errOut = runClient(t, "", "run", app, "say working\nsleep 60s\nsay never", "--no-follow")
	require.Equal(t, 0, code, errOut)
	run := strings.TrimSpace(out)
	require.Regexp(t, `^run_\w+$`, run)
	code, out, errOut = runClient(t, "", "runs", "cancel", app, run)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "cancelling run "+run+"\n", out)
	code, out, _ = runClient(t, "", "runs", "follow", app, run)
	assert.Equal(t, 3, code)
	assert.True(t, strings.HasSuffix(out, "-- cancelled\n"), out)
	code, _, errOut = runClient(t, "", "runs", "cancel", app, run)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "agenthost: RUN_FINISHED: ")
}

const askScript = "ask deploy Deploy to staging?\nsay deployed"

// TestClientPermission: a permission question is answered on stdin when
// it is a terminal (or with --interactive: here a pipe), y allowing and
// anything else denying, or by --approve-all / --deny-all; then the run
// goes on to its end. Nobody to answer (stdin not a terminal, or ended)
// leaves the run paused: exit 4 and the command that answers, which
// then follows the run from where it paused.
func TestClientPermission(t *testing.T) {
	startHost(t)
	app := helloApp(t)
	for _, tc := range []struct {
		name, stdin, verdict, said string
		flags                      []string
	}{
		{"y on stdin", "y\n", "allowed", "deployed", []string{"--interactive"}},
		{"n on stdin", "n\n", "denied", "permission denieddeployed", []string{"--interactive"}},
		{"approve all", "", "allowed", "deployed", []string{"--approve-all"}},
		{"deny all", "y\n", "denied", "permission denieddeployed", []string{"--deny-all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runClient(t, tc.stdin, append([]string{"run", app, askScript}, tc.flags...)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "-- permission asked: deploy: Deploy to staging\n-- paused (permission)\n-- permission "+tc.verdict+"\n-- resumed\n"+tc.said+"\n")
			if tc.flags[0] == "--interactive" {
				assert.Equal(t, "Allow deploy: Deploy to staging? [y/N] \n", errOut)
			} else {
				assert.Empty(t, errOut)
			}
		})
	}

	t.Run("a tool's question", func(t *testing.T) {
		code, out, errOut := runClient(t, "yes\n", "run", app, `tool coding_agent_run_command {"command":"echo hi > hi.txt"}`, "--interactive")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, "Allow coding_agent_run_command? [y/N] \n", errOut)
		assert.Contains(t, out, "-- permission asked: coding_agent_run_command\n   {\"command\":\"echo hi > hi.txt\"}\n")
		assert.Regexp(t, `-- tool coding_agent_run_command echo hi > hi\.txt: completed in \S+\n`, out)
		assert.Contains(t, out, "   added    hi.txt\n")
	})

	for _, tc := range []struct {
		name, stdin string
		flags       []string
	}{
		{"stdin is no terminal", "y\n", nil},
		{"stdin ended", "", []string{"--interactive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runClient(t, tc.stdin, append([]string{"run", app, askScript}, tc.flags...)...)
			require.Equal(t, 4, code, errOut)
			assert.True(t, strings.HasSuffix(out, "-- permission asked: deploy: Deploy to staging\n-- paused (permission)\n"), out)
			m := regexp.MustCompile(`agenthost: run (run_\w+) is waiting for permission: deploy: Deploy to staging; resume it with:\n  agenthost runs resume (app_\w+) (run_\w+) --allow\|--deny --follow\n$`).FindStringSubmatch(errOut)
			require.NotNil(t, m, errOut)
			assert.Equal(t, app, m[2])
			assert.Equal(t, m[1], m[3])

			code, out, errOut = runClient(t, "", "runs", "resume", app, m[1], "--allow", "--follow")
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, "-- permission allowed\n-- resumed\ndeployed\n-- applying the result\n-- completed: no files changed\n", out,
				"the events from the resume on, once")
		})
	}
}

// TestClientJSON: --json prints each event once, in order, as the API's
// envelope on a line of its own: the run's log exactly; with --no-follow,
// the created run.
func TestClientJSON(t *testing.T) {
	h := startHost(t)
	app := helloApp(t)
	code, out, errOut := runClient(t, "", "run", app, patchScript, "--json")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var first struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	log := h.events(app, first.RunID)
	require.Len(t, lines, len(log))
	for i, l := range lines {
		var ev struct {
			Event string `json:"event"`
			Seq   int64  `json:"seq"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		assert.Equal(t, int64(i+1), ev.Seq)
		assert.JSONEq(t, string(log[i]), l)
	}
	assert.Contains(t, lines[len(lines)-1], `"event":"run.completed"`)

	code, out, errOut = runClient(t, "", "run", app, "say hi", "--json", "--no-follow")
	require.Equal(t, 0, code, errOut)
	var r struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Regexp(t, `^run_\w+$`, r.ID)
}

// TestClientErrors: the API's code and message on stderr and exit 1 (a
// bad token, an unknown app or run, a refused request); no token at all
// and a host that does not answer said plainly.
func TestClientErrors(t *testing.T) {
	h := startHost(t)
	app := helloApp(t)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"bad token", []string{"apps", "list", "--token", "nope"}, 1, "agenthost: UNAUTHENTICATED: the token is unknown, expired or revoked\n"},
		{"bad token on run", []string{"run", app, "say hi", "--token", "nope"}, 1, "agenthost: UNAUTHENTICATED: the token is unknown, expired or revoked\n"},
		{"unknown app", []string{"apps", "get", "app_000000000000000000000000"}, 1, "agenthost: NOT_FOUND: app app_000000000000000000000000 not found\n"},
		{"unknown app name", []string{"run", "nosuch", "say hi"}, 1, "agenthost: no app is named \"nosuch\" (give its id, app_…: agenthost apps list)\n"},
		{"unknown run", []string{"runs", "get", app, "run_000000000000000000000000"}, 1, "agenthost: NOT_FOUND: run run_000000000000000000000000 not found\n"},
		{"empty prompt", []string{"run", app, " "}, 1, "agenthost: INVALID_REQUEST: prompt is required (field prompt)\n"},
		{"not paused", []string{"runs", "resume", app, "run_000000000000000000000000", "--allow"}, 1, "agenthost: NOT_FOUND: run run_000000000000000000000000 not found\n"},
		{"no token", []string{"apps", "list", "--token", ""}, 2, "agenthost: no API token: set AGENTHOST_TOKEN or pass --token (an operator makes one with: agenthost tokens create --tenant default --scopes apps.read,apps.write)\n"},
		{"no host", []string{"apps", "list", "--url", "http://127.0.0.1:1"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runClient(t, "", tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Empty(t, out)
			if tc.stderr != "" {
				assert.Equal(t, tc.stderr, errOut)
			}
		})
	}
	_, _, errOut := runClient(t, "", "apps", "list", "--url", "http://127.0.0.1:1")
	assert.Regexp(t, `^agenthost: cannot reach the host at http://127\.0\.0\.1:1: .*connection refused \(is agenthost serve running there\? set AGENTHOST_URL or pass --url\)\n$`, errOut)

	// A run that is not paused cannot be resumed.
	code, out, _ := runClient(t, "", "run", app, "say hi", "--no-follow")
	require.Equal(t, 0, code)
	run := strings.TrimSpace(out)
	code, _, _ = runClient(t, "", "runs", "follow", app, run)
	require.Equal(t, 0, code)
	code, _, errOut = runClient(t, "", "runs", "resume", app, run, "--allow")
	assert.Equal(t, 1, code)
	assert.Equal(t, fmt.Sprintf("agenthost: RUN_NOT_PAUSED: run %s is completed, not paused\n", run), errOut)
	_ = h
}
