package hostapp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostProc is a real `agenthost serve` process with its plugins, in a
// process group of its own so a crash can take them all at once.
type hostProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	url  string
	env  []string
	logs *bytes.Buffer
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

func startHostProc(t testing.TB, env []string) *hostProc {
	t.Helper()
	h := launchHostProc(t, env)
	h.awaitReady()
	return h
}

// launchHostProc starts the process without waiting for it (awaitReady).
func launchHostProc(t testing.TB, env []string) *hostProc {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "agenthost"), "serve")
	cmd.Env = append(append(os.Environ(), env...), "AGENTHOST_LISTEN="+addr)
	logs := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	h := &hostProc{t: t, cmd: cmd, url: "http://" + addr, env: env, logs: logs}
	t.Cleanup(h.kill)
	return h
}

// awaitReady waits until the host answers /readyz with 200.
func (h *hostProc) awaitReady() {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(h.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("the host did not become ready; its log:\n%s", h.logs.String())
}

// kill ends the host and every plugin it launched with SIGKILL, as a
// crash of the machine's host process tree would.
func (h *hostProc) kill() {
	if h.cmd.Process != nil {
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		_ = h.cmd.Wait()
	}
}

func (h *hostProc) do(method, path string, body, out any) int {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(h.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer kill-token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	if out != nil {
		require.NoError(h.t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
	return resp.StatusCode
}

type killRun struct {
	Status      string `json:"status"`
	PauseReason string `json:"pause_reason"`
	ErrorCode   string `json:"error_code"`
	OutputText  string `json:"output_text"`
	ResultRev   string `json:"result_revision_id"`
}

func (h *hostProc) waitRun(app, id string, done func(killRun) bool) killRun {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var r killRun
	for time.Now().Before(deadline) {
		h.do("GET", "/admin/apps/"+app+"/coding-agent/runs/"+id, nil, &r)
		if done(r) {
			return r
		}
		time.Sleep(30 * time.Millisecond)
	}
	h.t.Fatalf("run %s is still %s; host log:\n%s", id, r.Status, h.logs.String())
	return r
}

var killSeq atomic.Int64

// TestNativeRunSurvivesSIGKILL kills the host and its plugins with SIGKILL
// while the native engine waits on the model, after it has already edited a
// file. On SQLite the restarted host shows the run paused with reason
// "interrupted" and resume continues it; on PostgreSQL the new host takes
// the run over once the dead host's lease lapses and continues it itself.
// Either way it continues from the saved conversation, in a sandbox
// holding the edit made before the kill, and the result revision has it. No model turn
// or tool call that had completed is repeated.
func TestNativeRunSurvivesSIGKILL(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) { interruptAndResume(t, dialect, (*hostProc).kill) })
	}
}

// TestNativeRunSurvivesGracefulShutdown: SIGTERM makes the host shut down
// in order; a run with saved state is paused (not failed) on the way out
// and resumes on the next host like after a crash.
func TestNativeRunSurvivesGracefulShutdown(t *testing.T) {
	interruptAndResume(t, "sqlite", func(h *hostProc) {
		require.NoError(h.t, h.cmd.Process.Signal(syscall.SIGTERM))
		done := make(chan struct{})
		go func() { _ = h.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			h.t.Fatalf("the host did not stop on SIGTERM; log:\n%s", h.logs.String())
		}
		h.cmd.Process = nil
	})
}

func interruptAndResume(t *testing.T, dialect string, stop func(*hostProc)) {
	{
		{
			srv := fakellm.New()
			defer srv.Close()
			model := fmt.Sprintf("gpt-kill-%s-%d", dialect, killSeq.Add(1))
			patch, _ := json.Marshal(map[string]string{"patch": "--- a/index.html\n+++ b/index.html\n@@ -1 +1 @@\n-<h1>hi</h1>\n+<h1>edited before the crash</h1>\n"})
			srv.Script(model,
				fakellm.Turn{Text: []string{"Editing."}, Calls: []fakellm.Call{{Name: "coding_agent_apply_patch", Args: []string{string(patch)}}}},
				// The first attempt hangs (the host dies under it); the one
				// after the restart answers.
				fakellm.Turn{Text: []string{" Finished after the restart."}, Hang: true, HangTimes: 1},
			)

			dataDir := t.TempDir()
			dbURL := filepath.Join(dataDir, "agenthost.db")
			if dialect == "postgres" {
				dbURL = testenv.PostgresURL(t)
			}
			configDir := testenv.PluginConfigDir(t, "local", "patch")
			require.NoError(t, os.WriteFile(filepath.Join(configDir, "native.hcl"), []byte(`plugin "native" {
  kind    = "engine"
  command = "agenthost-engine-native"
  env     = ["KILL_TEST_LLM_KEY"]
}
`), 0o644))
			env := []string{"AGENTHOST_DATA_DIR=" + dataDir, "DATABASE_URL=" + dbURL, "AGENTHOST_PLUGIN_DIR=" + binDir,
				"AGENTHOST_PLUGIN_CONFIG_DIR=" + configDir, "AGENTHOST_BOOTSTRAP_TOKEN=kill-token",
				"APPS_CODING_AGENT_NATIVE_ENABLED=1", "KILL_TEST_LLM_KEY=sk-kill",
				"AGENTHOST_KEY_ENDPOINTS=KILL_TEST_LLM_KEY=" + srv.BaseURL()}
			h := startHostProc(t, env)

			var m, app, run struct{ ID string }
			require.Equal(t, http.StatusCreated, h.do("POST", "/admin/models", map[string]any{"name": model, "provider": "openai",
				"provider_model": model, "base_url": srv.BaseURL(), "api_key_env": "KILL_TEST_LLM_KEY", "scope": "global"}, &m))
			require.Equal(t, http.StatusCreated, h.do("POST", "/admin/apps", map[string]any{"name": "k", "files": map[string]string{"index.html": "<h1>hi</h1>\n"}}, &app))
			require.Equal(t, http.StatusCreated, h.do("POST", "/admin/apps/"+app.ID+"/coding-agent/runs",
				map[string]any{"engine": "native", "model_id": m.ID, "prompt": "edit the heading"}, &run))

			// The engine asks for turn 1 only after saving the state (and
			// the files) of iteration 1.
			deadline := time.Now().Add(60 * time.Second)
			for len(srv.RequestsFor(model)) < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			require.Len(t, srv.RequestsFor(model), 2, "host log:\n%s", h.logs.String())
			stop(h)

			h2 := startHostProc(t, env)
			finished := func(r killRun) bool {
				return r.Status == "completed" || r.Status == "failed" || r.Status == "cancelled"
			}
			var r killRun
			if dialect == "postgres" {
				// On the database hosts share, the new host takes the dead
				// one's run over once its lease lapses, and continues it
				// at once (run.paused host_lost, then run.resumed).
				r = h2.waitRun(app.ID, run.ID, finished)
				var events struct {
					Events []struct {
						Event   string          `json:"event"`
						Payload json.RawMessage `json:"payload"`
					} `json:"items"`
				}
				require.Equal(t, http.StatusOK, h2.do("GET", "/admin/apps/"+app.ID+"/coding-agent/runs/"+run.ID+"/events", nil, &events))
				var kinds []string
				for _, e := range events.Events {
					kinds = append(kinds, e.Event)
				}
				assert.Contains(t, strings.Join(kinds, " "), "run.paused run.resumed", "%v", kinds)
			} else {
				r = h2.waitRun(app.ID, run.ID, func(r killRun) bool { return r.Status != "running" && r.Status != "queued" })
				require.Equal(t, "paused", r.Status, "%+v", r)
				assert.Equal(t, "interrupted", r.PauseReason)

				require.Equal(t, http.StatusAccepted, h2.do("POST", "/admin/apps/"+app.ID+"/coding-agent/runs/"+run.ID+"/resume", map[string]any{}, nil))
				r = h2.waitRun(app.ID, run.ID, finished)
			}
			require.Equal(t, "completed", r.Status, "%+v\n%s", r, h2.logs.String())
			assert.Contains(t, r.OutputText, "Finished after the restart.")
			require.NotEmpty(t, r.ResultRev)

			req, _ := http.NewRequest("GET", h2.url+"/admin/apps/"+app.ID+"/revisions/"+r.ResultRev+"/files/index.html", nil)
			req.Header.Set("Authorization", "Bearer kill-token")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, "<h1>edited before the crash</h1>\n", string(body), "the edit made before the kill is in the result")

			reqs := srv.RequestsFor(model)
			turns := make([]int, len(reqs))
			for i, q := range reqs {
				turns[i] = q.Turn
			}
			assert.Equal(t, []int{0, 1, 1}, turns, "only the interrupted turn is asked again")

			var page struct {
				Items []struct {
					Event   string          `json:"event"`
					Payload json.RawMessage `json:"payload"`
				} `json:"items"`
			}
			h2.do("GET", "/admin/apps/"+app.ID+"/coding-agent/runs/"+run.ID+"/events?limit=500", nil, &page)
			var seq []string
			for _, it := range page.Items {
				seq = append(seq, it.Event)
			}
			joined := strings.Join(seq, ",")
			if !assert.Equal(t, 1, strings.Count(joined, "tool.started"), "the patch is applied once, and logged: %v", seq) {
				t.Logf("the first host's log:\n%s\nthe second host's log:\n%s", h.logs.String(), h2.logs.String())
			}
			assert.Contains(t, joined, "run.paused,run.resumed", "%v", seq)
			assert.True(t, strings.HasSuffix(joined, "revision.created,checkpoint.created,run.completed"), "%v", seq)
			assert.Equal(t, 1, strings.Count(joined, "run.completed"))
		}
	}
}
