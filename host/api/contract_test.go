package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeOfARunNotPausedIs409: whatever the body, a run that is not
// paused answers RUN_NOT_PAUSED (the body used to be checked first).
func TestResumeOfARunNotPausedIs409(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		base := "/admin/apps/" + app + "/coding-agent/runs/"
		done := e.createRun(e.tokenA, app, "say done")
		require.Equal(t, "completed", e.waitRun(app, done.ID).Status)
		running := e.createRun(e.tokenA, app, "say working\nsleep 60s")
		resp := e.openStream(e.tokenA, app, running.ID, "")
		readSSE(t, resp, func(f frame) bool { return f.Event == "assistant.delta" })
		resp.Body.Close()
		for _, id := range []string{done.ID, running.ID} {
			for _, body := range []any{map[string]any{}, map[string]string{"decision": "maybe"}, map[string]string{"decision": "allow"}, "{not json"} {
				var er apiError
				// Bodies that break the spec too, on purpose: the state is
				// judged first.
				assert.Equal(t, http.StatusConflict, e.doInvalid(e.tokenA, "POST", base+id+"/resume", body, &er), "%s %v", id, body)
				assert.Equal(t, "RUN_NOT_PAUSED", er.Detail.Code)
			}
		}
		require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+running.ID+"/cancel", nil, nil))
		assert.Equal(t, "cancelled", e.waitRun(app, running.ID).Status)
	})
}

// TestRacingPermissionDecisions: an allow and a deny sent at once to each
// of 50 paused runs: exactly one wins (202), the other is 409, and the
// run's permission.resolved says what the winner said.
func TestRacingPermissionDecisions(t *testing.T) {
	const pairs = 50
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		base := "/admin/apps/" + app + "/coding-agent/runs/"
		ids := make([]string, pairs)
		for i := range ids {
			ids[i] = e.createRun(e.tokenA, app, "ask deploy Deploy?\nsay after").ID
		}
		for _, id := range ids {
			resp := e.openStream(e.tokenA, app, id, "")
			readSSE(t, resp, func(f frame) bool { return f.Event == "permission.requested" })
			resp.Body.Close()
		}
		type answer struct {
			decision string
			code     int
		}
		answers := make([][2]answer, pairs)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, id := range ids {
			for j, d := range []string{"allow", "deny"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					answers[i][j] = answer{d, e.do(e.tokenA, "POST", base+id+"/resume", map[string]string{"decision": d}, nil)}
				}()
			}
		}
		close(start)
		wg.Wait()
		for i, id := range ids {
			var winners []string
			for _, a := range answers[i] {
				switch a.code {
				case http.StatusAccepted:
					winners = append(winners, a.decision)
				case http.StatusConflict:
				default:
					t.Errorf("run %s: %s answered %d", id, a.decision, a.code)
				}
			}
			require.Len(t, winners, 1, "run %s: exactly one decision wins: %+v", id, answers[i])
			e.waitRun(app, id)
			resolved := e.payloads(app, id, "permission.resolved")
			require.Len(t, resolved, 1, "run %s", id)
			var p struct {
				Allow bool `json:"allow"`
			}
			require.NoError(t, json.Unmarshal([]byte(resolved[0]), &p))
			assert.Equal(t, winners[0] == "allow", p.Allow, "run %s: the winner's decision is the one applied", id)
		}
	})
}

// TestStreamResumedAtTheTerminalEventEnds: a client resuming at the
// terminal event's seq (as a browser's EventSource does after the server
// closed a finished stream) gets 204 at once, and polling from there says
// done.
func TestStreamResumedAtTheTerminalEventEnds(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		run := e.createRun(e.tokenA, app, "say done")
		e.waitRun(app, run.ID)
		var page struct {
			Items []struct {
				Seq int64 `json:"seq"`
			} `json:"items"`
			Done bool `json:"done"`
		}
		path := "/admin/apps/" + app + "/coding-agent/runs/" + run.ID
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", path+"/events", nil, &page))
		require.True(t, page.Done)
		lastSeq := page.Items[len(page.Items)-1].Seq
		last := strconv.FormatInt(lastSeq, 10)

		// A bounded client: before the fix this request hung until it gave up.
		client := &http.Client{Timeout: 20 * time.Second}
		for _, resume := range []func(*http.Request){
			func(r *http.Request) { r.Header.Set("Last-Event-ID", last) },
			func(r *http.Request) { r.URL.RawQuery = "after_seq=" + last },
		} {
			req, err := http.NewRequest("GET", e.srv.URL+path+"/stream", nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+e.tokenA)
			resume(req)
			resp, err := client.Do(req)
			require.NoError(t, err, "the stream must end, not wait")
			resp.Body.Close()
			assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		}

		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", path+"/events?after_seq="+last, nil, &page))
		assert.Empty(t, page.Items)
		assert.True(t, page.Done, "nothing follows the terminal event")

		// One before the end still streams the terminal event, then closes.
		before := strconv.FormatInt(lastSeq-1, 10)
		frames, ended := readSSE(t, e.openStream(e.tokenA, app, run.ID, before), nil)
		assert.True(t, ended)
		require.Len(t, frames, 1)
		assert.Equal(t, "run.completed", frames[0].Event)
	})
}

// TestRunReadWhenItsStreamEndsIsFinal: a client that reads the run as soon
// as its stream delivered the terminal event sees the final status (the
// row used to lag the event by a few ms).
func TestRunReadWhenItsStreamEndsIsFinal(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		for i := range 40 {
			run := e.createRun(e.tokenA, app, "say try "+strconv.Itoa(i))
			frames, _ := readSSE(t, e.openStream(e.tokenA, app, run.ID, ""), nil)
			require.NotEmpty(t, frames)
			require.Equal(t, "run.completed", frames[len(frames)-1].Event)
			var r runOut
			require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+run.ID, nil, &r))
			require.Equal(t, "completed", r.Status, "try %d", i)
			assert.Equal(t, "try "+strconv.Itoa(i), r.OutputText)
		}
	})
}

// TestCapabilitiesSeedFields: the seed's payload has default_engine,
// native_enabled and the native tool list at the top level, and the
// OpenCode custom-tools policy metadata when OpenCode runs with the
// contract tools seeded as project-local custom tools.
func TestCapabilitiesSeedFields(t *testing.T) {
	type caps struct {
		DefaultEngine   string `json:"default_engine"`
		NativeEnabled   bool   `json:"native_enabled"`
		NativeToolCount int    `json:"native_tool_count"`
		NativeTools     []struct {
			Name, Slug   string
			FunctionName string `json:"function_name"`
		} `json:"native_tools"`
		OpenCode struct {
			Configured bool   `json:"engine_configured"`
			Allowlist  bool   `json:"repo_tool_allowlist_configured"`
			Model      string `json:"workspace_permission_model"`
		} `json:"opencode_policy"`
	}
	t.Run("default plugins", func(t *testing.T) {
		t.Setenv("APPS_CODING_AGENT_NATIVE_ENABLED", "1")
		e := startEnv(t, "sqlite")
		app := e.createApp(e.tokenA)
		var c caps
		require.Equal(t, http.StatusOK, e.do(e.readA, "GET", "/admin/apps/"+app+"/coding-agent/capabilities", nil, &c))
		assert.Equal(t, "mock", c.DefaultEngine)
		assert.True(t, c.NativeEnabled)
		require.NotEmpty(t, c.NativeTools)
		assert.Equal(t, len(c.NativeTools), c.NativeToolCount)
		for _, tl := range c.NativeTools {
			assert.NotEqual(t, "coding_agent_write_file", tl.Name, "a deny tool is not offered")
			assert.Equal(t, tl.Name, tl.FunctionName)
		}
		assert.False(t, c.OpenCode.Configured)
		assert.False(t, c.OpenCode.Allowlist)
	})
	t.Run("opencode with contract tools", func(t *testing.T) {
		dir := testenv.PluginConfigDir(t, "mock", "local", "contract")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "opencode.hcl"), []byte(fmt.Sprintf(`plugin "opencode" {
  kind    = "engine"
  command = %q
}
`, pluginBinary(t, "agenthost-engine-opencode"))), 0o644))
		e := startEnvIn(t, "sqlite", dir)
		app := e.createApp(e.tokenA)
		var c caps
		require.Equal(t, http.StatusOK, e.do(e.readA, "GET", "/admin/apps/"+app+"/coding-agent/capabilities", nil, &c))
		assert.True(t, c.OpenCode.Configured)
		assert.True(t, c.OpenCode.Allowlist)
		assert.Equal(t, "project_local_custom_tools_and_context_file", c.OpenCode.Model)
	})
}

// TestCreateRunAnswersSandboxMetadata: the 201 of create-run carries the
// sandbox allocated for the run and that it is starting (seed 000); create
// does not wait for provisioning; once it ran, the run names the same
// sandbox, running or stopped, with its start time. A chat's next run is
// told the warm sandbox it will reuse.
func TestCreateRunAnswersSandboxMetadata(t *testing.T) {
	eachDialect(t, func(e *env) {
		app := e.createApp(e.tokenA)
		type sb struct {
			ID        string     `json:"id"`
			Chat      string     `json:"chat_session_id"`
			SandboxID string     `json:"sandbox_id"`
			Status    string     `json:"sandbox_status"`
			StartedAt *time.Time `json:"sandbox_started_at"`
			Run       string     `json:"status"`
		}
		var created sb
		raw := map[string]any{}
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs", map[string]any{"prompt": "say one"}, &raw))
		js, _ := json.Marshal(raw)
		require.NoError(t, json.Unmarshal(js, &created))
		for _, k := range []string{"sandbox_id", "sandbox_status", "sandbox_started_at"} {
			assert.Contains(t, raw, k, "the 201 has %s", k)
		}
		require.NotEmpty(t, created.SandboxID)
		assert.Equal(t, "starting", created.Status)
		e.waitRun(app, created.ID)
		var after sb
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+created.ID, nil, &after))
		assert.Equal(t, created.SandboxID, after.SandboxID, "the sandbox it was told is the one it got")
		assert.NotEqual(t, "starting", after.Status)
		assert.NotNil(t, after.StartedAt)

		// The chat's next run: its warm sandbox, named in the 201.
		var next sb
		require.Equal(t, http.StatusCreated, e.do(e.tokenA, "POST", "/admin/apps/"+app+"/coding-agent/runs",
			map[string]any{"prompt": "say two", "chat_session_id": created.Chat}, &next))
		assert.Equal(t, created.SandboxID, next.SandboxID)
		assert.Equal(t, "starting", next.Status)
		e.waitRun(app, next.ID)
		require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/coding-agent/runs/"+next.ID, nil, &after))
		assert.Equal(t, created.SandboxID, after.SandboxID)
	})
}
