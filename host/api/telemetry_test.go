package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimingMetricsAndPrometheus(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, `say hi`+"\n"+`tool coding_agent_write_file {"path":"a.txt","content":"a"}`)
		require.Equal(t, "completed", e.waitRun(app, run.ID).Status)

		var got struct {
			Context struct {
				Timings map[string]int64 `json:"timing_metrics_ms"`
			} `json:"context"`
		}
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID, nil, &got))
		for _, phase := range []string{"create_run", "create_run_api", "sandbox_start", "engine_start", "first_token", "apply", "total"} {
			v, ok := got.Context.Timings[phase]
			assert.True(t, ok, "timing_metrics_ms lacks %s: %v", phase, got.Context.Timings)
			assert.GreaterOrEqual(t, v, int64(0))
		}
		assert.GreaterOrEqual(t, got.Context.Timings["total"], got.Context.Timings["first_token"])

		// The run is observed once its end is recorded, which a client can
		// see a moment before: wait for it to be counted (ObserveRun counts
		// it last, so its phases are in by then).
		const counted = `agenthost_runs_total{engine="mock",error_code="",outcome="completed"} 1`
		var text string
		for deadline := time.Now().Add(10 * time.Second); ; {
			resp, err := http.Get(e.srv.URL + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			if text = string(body); strings.Contains(text, counted) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		assert.Contains(t, text, counted)
		assert.Contains(t, text, `agenthost_run_phase_seconds_count{engine="mock",phase="first_token"} 1`)
	})
}

// TestSnapshotsAreCounted: /metrics counts the snapshots of sandboxes'
// files by kind: a chat's first turn (an app with no files) takes its new
// sandbox's whole; its next turn, which only talked, is skipped when the
// backend vouched that nothing ran in the sandbox (the local one does as
// root, where each sandbox's commands run as a uid of its own), else asks
// for what changed.
func TestSnapshotsAreCounted(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	first := e.mockTurn(app, "", "say hi")
	e.mockTurn(app, first.chatID, "say hi again")
	resp, err := http.Get(e.srv.URL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var counted []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "agenthost_sandbox_snapshots_total{") {
			counted = append(counted, line)
		}
	}
	second := `agenthost_sandbox_snapshots_total{kind="changes"} 1`
	if testenv.AsRoot(t) {
		second = `agenthost_sandbox_snapshots_total{kind="skipped"} 1`
	}
	assert.ElementsMatch(t, []string{second, `agenthost_sandbox_snapshots_total{kind="whole"} 1`}, counted)
}
