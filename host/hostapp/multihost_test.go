package hostapp_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunsStreamFromAnyHost: runs created round-robin on three hosts, each
// streamed live from another host than its creator and replayed from the
// third: both logs are the same, gap-free and complete; then a load of
// 3 hosts × 50 concurrent runs × 500 events goes through with no error.
func TestRunsStreamFromAnyHost(t *testing.T) {
	// The production default lease, not the tests' short one: nothing
	// here is taken over, and under the load below on a machine busy
	// with other test packages a host once missed its renewals for a
	// second, lost its runs to the others and failed them HOST_LOST.
	hosts, appID := startClusterLease(t, 3, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for _, err := range streamLoad(ctx, t, hosts, appID, 9, 50, true) {
		t.Error(err)
	}
	// The load: 150 runs at once, 50 created on each host.
	for _, err := range streamLoad(ctx, t, hosts, appID, 150, 500, false) {
		t.Error(err)
	}
}

// TestDeadHostsRunsAreTakenOver: a host is killed (SIGKILL, plugins and
// all) while 20 of its runs are active, half of them with saved engine
// state. Their clients, streaming from the dead host, reconnect to the
// others with Last-Event-ID. Every run is taken over within 10 s: the
// resumable ones continue from their checkpoint and complete, the others
// fail with HOST_LOST; every client sees every event exactly once.
func TestDeadHostsRunsAreTakenOver(t *testing.T) {
	hosts, appID := startCluster(t, 3)
	victim := hosts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const runs = 20
	var all []*tracked
	for i := range runs {
		tr := &tracked{resumable: i%2 == 0, f: &follower{}}
		script := "say before\nsleep 60s\nsay never"
		if tr.resumable {
			script = "say before\ncheckpoint\nsleep 3s\nsay after"
		}
		tr.id = createRun(t, victim, appID, script)
		all = append(all, tr)
	}
	// Wait until every run has said "before" (and saved its state).
	var wg sync.WaitGroup
	for _, tr := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, tr.f.follow(ctx, []*hostProc{victim, hosts[1], hosts[2]}, appID, tr.id))
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, tr := range all {
		for !tr.sawBefore() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		require.True(t, tr.sawBefore(), "run %s never said before", tr.id)
	}
	time.Sleep(200 * time.Millisecond) // the checkpoints are saved right after
	for _, tr := range all {
		tr.f.mu.Lock()
		tr.f.markSeq = tr.f.events[len(tr.f.events)-1].Seq
		tr.f.mu.Unlock()
	}
	killedAt := time.Now()
	victim.kill()
	wg.Wait()
	var slowest time.Duration
	for _, tr := range all {
		slowest = max(slowest, tr.f.markedAt.Sub(killedAt))
	}
	t.Logf("takeover: the last of %d runs had its new owner's first event %s after the kill (lease %s)", runs, slowest, multiLease)

	// The survivors count what they took over.
	taken := map[string]int{}
	for _, h := range hosts[1:] {
		resp, err := http.Get(h.url + "/metrics")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if rest, ok := strings.CutPrefix(line, `agenthost_runs_taken_over_total{outcome="`); ok {
				outcome, value, _ := strings.Cut(rest, `"} `)
				n, _ := strconv.Atoi(value)
				taken[outcome] += n
			}
		}
	}
	assert.Equal(t, map[string]int{"resumed": runs / 2, "failed": runs / 2}, taken)
	for _, tr := range all {
		term := checkLog(t, tr.id, tr.f.events)
		took := tr.f.markedAt.Sub(killedAt)
		assert.Less(t, took, 10*time.Second, "run %s: first event of the new owner %s after the kill", tr.id, took)
		var p struct {
			Code   string `json:"error_code"`
			Output string `json:"output_text"`
		}
		_ = json.Unmarshal(term.Payload, &p)
		if tr.resumable {
			assert.Equal(t, "run.completed", term.Type, "run %s: %s", tr.id, term.Payload)
			assert.Contains(t, p.Output, "after")
			assert.True(t, hasEvent(tr.f.events, "run.resumed"), "run %s was resumed", tr.id)
		} else {
			assert.Equal(t, "run.failed", term.Type, "run %s", tr.id)
			assert.Equal(t, "HOST_LOST", p.Code)
		}
	}
}

// TestCommandsReachTheOwner: cancel and permission answers sent to hosts
// that do not own the run reach its owner and answer as the owner would;
// the first decision wins on every host.
func TestCommandsReachTheOwner(t *testing.T) {
	hosts, appID := startCluster(t, 3)
	owner, other, third := hosts[0], hosts[1], hosts[2]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	asking := createRun(t, owner, appID, "say hi\nask write_file may I?\nsay done")
	var f follower
	done := make(chan error, 1)
	go func() { done <- f.follow(ctx, []*hostProc{third}, appID, asking) }()
	for !hasEvent(f.snapshot(), "permission.requested") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	var body map[string]any
	status, hdr := other.post("/admin/apps/"+appID+"/coding-agent/runs/"+asking+"/resume", `{"decision":"allow"}`, &body)
	require.Equal(t, http.StatusAccepted, status)
	assert.Equal(t, "resuming", body["status"])
	assert.True(t, strings.HasPrefix(hdr.Get("X-Agenthost-Run-Owner"), "h0/"), "the owner answered: %v", hdr)
	var refused struct {
		Detail struct{ Code string } `json:"detail"`
	}
	require.Equal(t, http.StatusConflict, third.do("POST", "/admin/apps/"+appID+"/coding-agent/runs/"+asking+"/resume", map[string]any{"decision": "deny"}, &refused))
	assert.Equal(t, "RUN_NOT_PAUSED", refused.Detail.Code)
	require.NoError(t, <-done)
	term := checkLog(t, asking, f.events)
	assert.Equal(t, "run.completed", term.Type)
	assert.True(t, hasEvent(f.events, "permission.resolved"))

	sleeping := createRun(t, owner, appID, "say hi\nsleep 60s\nsay never")
	var g follower
	go func() { done <- g.follow(ctx, []*hostProc{other}, appID, sleeping) }()
	for len(g.snapshot()) < 3 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	status, hdr = third.post("/admin/apps/"+appID+"/coding-agent/runs/"+sleeping+"/cancel", "", &body)
	require.Equal(t, http.StatusAccepted, status)
	assert.True(t, strings.HasPrefix(hdr.Get("X-Agenthost-Run-Owner"), "h0/"), "the owner answered: %v", hdr)
	require.NoError(t, <-done)
	assert.Equal(t, "run.cancelled", checkLog(t, sleeping, g.events).Type)
	require.Equal(t, http.StatusConflict, other.do("POST", "/admin/apps/"+appID+"/coding-agent/runs/"+sleeping+"/cancel", nil, &refused))
	assert.Equal(t, "RUN_FINISHED", refused.Detail.Code)
}

// TestPausedHostIsFenced: a host stopped with SIGSTOP past its lease loses
// its run to another host; when it is continued, nothing it tries to write
// for the run gets into the log or the run's row.
func TestPausedHostIsFenced(t *testing.T) {
	hosts, appID := startCluster(t, 2)
	stale, taker := hosts[0], hosts[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runID := createRun(t, stale, appID, "say before\nsleep 2s\ndeltas 300\nsay stale end")
	var f follower
	done := make(chan error, 1)
	go func() { done <- f.follow(ctx, []*hostProc{taker}, appID, runID) }()
	for len(f.snapshot()) < 3 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, syscall.Kill(stale.cmd.Process.Pid, syscall.SIGSTOP))
	require.NoError(t, <-done, "the taker settles the run while the owner is stopped")
	term := checkLog(t, runID, f.events)
	require.Equal(t, "run.failed", term.Type)
	assert.Contains(t, string(term.Payload), "HOST_LOST")
	before := len(f.events)

	require.NoError(t, syscall.Kill(stale.cmd.Process.Pid, syscall.SIGCONT))
	// The stale host wakes past its sleep and tries to write 300 deltas
	// and the end; it learns at its first write that the run is gone.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stale.logs.String(), "another host took this run over") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Contains(t, stale.logs.String(), "another host took this run over", "the stale host noticed")
	var replay follower
	require.NoError(t, replay.follow(ctx, []*hostProc{stale}, appID, runID))
	assert.Len(t, replay.events, before, "nothing of the stale host reached the log")
	var r killRun
	stale.do("GET", "/admin/apps/"+appID+"/coding-agent/runs/"+runID, nil, &r)
	assert.Equal(t, "failed", r.Status)
	assert.Equal(t, "HOST_LOST", r.ErrorCode)
}

// TestSecondHostOnSQLiteRefused: SQLite serves one host; a second process
// on the same database file refuses to start and says why.
func TestSecondHostOnSQLiteRefused(t *testing.T) {
	dataDir := t.TempDir()
	env := []string{"AGENTHOST_DATA_DIR=" + dataDir, "AGENTHOST_PLUGIN_DIR=" + binDir,
		"AGENTHOST_PLUGIN_CONFIG_DIR=" + testenv.PluginConfigDir(t, "mock", "local"), "AGENTHOST_BOOTSTRAP_TOKEN=kill-token"}
	first := startHostProc(t, env)
	second := exec.Command(filepath.Join(binDir, "agenthost"), "serve")
	second.Env = append(append(os.Environ(), env...), "AGENTHOST_LISTEN="+freeAddr(t))
	out, err := second.CombinedOutput()
	require.Error(t, err, "the second host must not start")
	assert.Contains(t, string(out), fmt.Sprintf("another agenthost process (pid %d) already serves the SQLite database", first.cmd.Process.Pid))
	assert.Contains(t, string(out), "run several hosts on PostgreSQL")
	// The first one is unharmed.
	var apps map[string]any
	assert.Equal(t, http.StatusOK, first.do("GET", "/admin/apps", nil, &apps))
}

// TestChatRunsFollowTheirSandbox: a chat's warm sandbox lives on the host
// that ran the chat's last run. The chat's next run, sent to another host,
// is created on that host and reuses the sandbox; an Idempotency-Key used
// through one host replays through another. Once that host is gone, the
// chat's next run starts where it was sent, in a fresh sandbox.
func TestChatRunsFollowTheirSandbox(t *testing.T) {
	hosts, appID := startCluster(t, 2)
	h0, h1 := hosts[0], hosts[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runs := "/admin/apps/" + appID + "/coding-agent/runs"
	type runOut struct {
		ID            string `json:"id"`
		ChatSessionID string `json:"chat_session_id"`
		SandboxID     string `json:"sandbox_id"`
		Status        string `json:"status"`
	}
	finish := func(h *hostProc, id string) runOut {
		var f follower
		require.NoError(t, f.follow(ctx, []*hostProc{h}, appID, id))
		require.Equal(t, "run.completed", checkLog(t, id, f.events).Type)
		var r runOut
		require.Equal(t, http.StatusOK, h.do("GET", runs+"/"+id, nil, &r))
		return r
	}

	var first runOut
	require.Equal(t, http.StatusCreated, h0.do("POST", runs, map[string]any{"engine": "mock", "prompt": "say one"}, &first))
	first = finish(h0, first.ID)
	require.NotEmpty(t, first.ChatSessionID)

	var second runOut
	status, hdr := h1.post(runs, fmt.Sprintf(`{"engine":"mock","prompt":"say two","chat_session_id":%q}`, first.ChatSessionID), &second)
	require.Equal(t, http.StatusCreated, status)
	assert.True(t, strings.HasPrefix(hdr.Get("X-Agenthost-Run-Owner"), "h0/"), "created on the chat's host: %v", hdr)
	second = finish(h1, second.ID)
	assert.Equal(t, first.SandboxID, second.SandboxID, "the chat's warm sandbox was reused")

	// An Idempotency-Key sent through h1 (created on h0) replays on h0.
	body := fmt.Sprintf(`{"engine":"mock","prompt":"say three","chat_session_id":%q}`, first.ChatSessionID)
	req, _ := http.NewRequest("POST", h1.url+runs, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer kill-token")
	req.Header.Set("Idempotency-Key", "multi-host-key")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var third runOut
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&third))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	finish(h1, third.ID)
	req, _ = http.NewRequest("POST", h0.url+runs, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer kill-token")
	req.Header.Set("Idempotency-Key", "multi-host-key")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	var replay runOut
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&replay))
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, third.ID, replay.ID)

	// The chat's host dies: its next run starts on h1, in a new sandbox,
	// even before the dead host's lease lapses.
	h0.kill()
	var fourth runOut
	status, hdr = h1.post(runs, fmt.Sprintf(`{"engine":"mock","prompt":"say four","chat_session_id":%q}`, first.ChatSessionID), &fourth)
	require.Equal(t, http.StatusCreated, status)
	assert.Empty(t, hdr.Get("X-Agenthost-Run-Owner"), "created where it was sent")
	fourth = finish(h1, fourth.ID)
	assert.NotEqual(t, first.SandboxID, fourth.SandboxID)
}

// TestHostsStartTogether: three hosts started at the same moment on an
// empty database all come up: one migrates while the others wait on the
// migration lock, and the bootstrap token and seeded rows are made once.
func TestHostsStartTogether(t *testing.T) {
	dbURL := testenv.PostgresURL(t)
	configDir := testenv.PluginConfigDir(t, "mock", "local")
	hosts := make([]*hostProc, 3)
	for i := range hosts {
		hosts[i] = launchHostProc(t, []string{"AGENTHOST_DATA_DIR=" + t.TempDir(), "DATABASE_URL=" + dbURL, "AGENTHOST_PLUGIN_DIR=" + binDir,
			"AGENTHOST_PLUGIN_CONFIG_DIR=" + configDir, "AGENTHOST_BOOTSTRAP_TOKEN=kill-token", "AGENTHOST_LEASE_TTL_MS=1000",
			"AGENTHOST_DATABASE_MAX_CONNS=8"})
	}
	for _, h := range hosts {
		h.awaitReady()
	}
	var app struct{ ID string }
	require.Equal(t, http.StatusCreated, hosts[1].do("POST", "/admin/apps", map[string]any{"name": "together", "files": map[string]string{"a.txt": "a"}}, &app))
	for _, h := range hosts {
		var ready struct {
			Host struct {
				ID    string `json:"id"`
				Lease string `json:"lease"`
			} `json:"host"`
		}
		require.Equal(t, http.StatusOK, h.do("GET", "/readyz", nil, &ready))
		assert.NotEmpty(t, ready.Host.ID)
		assert.True(t, strings.HasPrefix(ready.Host.Lease, ready.Host.ID+"/"), "%+v", ready.Host)
		runID := createRun(t, h, app.ID, "say hello")
		var f follower
		require.NoError(t, f.follow(context.Background(), []*hostProc{h}, app.ID, runID))
		assert.Equal(t, "run.completed", checkLog(t, runID, f.events).Type)
	}
}

// TestStoppedHostsPausedRunsContinueElsewhere: a host stopped with SIGTERM
// pauses its run that saved state and leaves; another host takes the run
// over at once and finishes it.
func TestStoppedHostsPausedRunsContinueElsewhere(t *testing.T) {
	hosts, appID := startCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runID := createRun(t, hosts[0], appID, "say before\ncheckpoint\nsleep 60s\nsay never")
	var f follower
	done := make(chan error, 1)
	go func() { done <- f.follow(ctx, []*hostProc{hosts[1]}, appID, runID) }()
	for !hasEvent(f.snapshot(), "assistant.delta") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the checkpoint is saved right after
	require.NoError(t, hosts[0].cmd.Process.Signal(syscall.SIGTERM))
	_ = hosts[0].cmd.Wait()
	hosts[0].cmd.Process = nil
	// The run sleeps 60 s wherever it runs; the taker's resumption is what
	// this waits for.
	for !hasEvent(f.snapshot(), "run.resumed") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	require.True(t, hasEvent(f.snapshot(), "run.resumed"), "the other host continued the run")
	var body map[string]any
	require.Equal(t, http.StatusAccepted, hosts[1].do("POST", "/admin/apps/"+appID+"/coding-agent/runs/"+runID+"/cancel", nil, &body))
	require.NoError(t, <-done)
	assert.Equal(t, "run.cancelled", checkLog(t, runID, f.events).Type)
}

// TestStreamsSurviveALostListener: the connection on which a host listens
// for other hosts' commits is killed (pg_terminate_backend) while it
// streams a run another host executes. It is re-established, the host's
// streams read the log, and the client still sees every event once.
func TestStreamsSurviveALostListener(t *testing.T) {
	dbURL := testenv.PostgresURL(t)
	hosts, appID := startClusterOn(t, dbURL, 2, multiLease)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runID := createRun(t, hosts[0], appID, testenv.PacedStamps(150))
	var f follower
	done := make(chan error, 1)
	go func() { done <- f.follow(ctx, []*hostProc{hosts[1]}, appID, runID) }()
	for len(f.snapshot()) < 30 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	admin, err := sql.Open("postgres", dbURL)
	require.NoError(t, err)
	defer admin.Close()
	var killed int
	require.NoError(t, admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE datname = current_database() AND query LIKE 'LISTEN %agenthost_%' AND pid <> pg_backend_pid()`).Scan(&killed))
	require.Positive(t, killed, "no listening connection found")
	require.NoError(t, <-done)
	term := checkLog(t, runID, f.events)
	assert.Equal(t, "run.completed", term.Type)
	// run.accepted, three stages, 150 deltas, applying, run.completed.
	assert.Equal(t, 150+6, len(f.events), "every event once")
}
