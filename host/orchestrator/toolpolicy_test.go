package orchestrator_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolOutcome is one finished tool call as the run's events tell it.
type toolOutcome struct {
	Tool        string
	OK          bool
	Code, Field string
	Diagnostics json.RawMessage
}

func toolOutcomes(t *testing.T, evs []core.Envelope) []toolOutcome {
	t.Helper()
	var out []toolOutcome
	for _, e := range evs {
		if e.Event != core.EventToolCompleted && e.Event != core.EventToolFailed {
			continue
		}
		var p struct {
			Tool  string `json:"tool"`
			Code  string `json:"error_code"`
			Field string `json:"field"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		out = append(out, toolOutcome{Tool: p.Tool, OK: e.Event == core.EventToolCompleted, Code: p.Code, Field: p.Field, Diagnostics: e.Diagnostics})
	}
	return out
}

// TestToolInputIsNormalisedThenValidated drives the real mock, patch and
// local plugins: shapes models really send are repaired before the toolpack
// sees them, and input the schema refuses never reaches the toolpack.
func TestToolInputIsNormalisedThenValidated(t *testing.T) {
	h := newHost(t, defaultConfigs(t), orchestrator.Options{})
	run := h.start(t, `tool coding_agent_write_file {"arguments":"{\"filePath\":\"a.txt\",\"content\":\"hello\"}"}
tool coding_agent_read_file {"file_path":"a.txt"}
tool coding_agent_read_file {"path":"a.txt","colour":"red"}
tool coding_agent_read_file {"start_line":"3"}
say done`)
	final := h.wait(t, run.ID)
	require.Equal(t, core.RunCompleted, final.Status)
	evs := h.store.Events(run.ID)
	requireWellFormed(t, evs)
	got := toolOutcomes(t, evs)
	require.Len(t, got, 4)
	assert.True(t, got[0].OK, "string-encoded, nested, camelCase input is repaired: %+v", got[0])
	assert.True(t, got[1].OK, "file_path is path: %+v", got[1])
	assert.Equal(t, toolOutcome{Tool: "coding_agent_read_file", Code: "TOOL_INPUT_VALIDATION_FAILED", Field: "colour", Diagnostics: got[2].Diagnostics}, got[2])
	assert.Equal(t, "TOOL_INPUT_VALIDATION_FAILED", got[3].Code)
	var diag struct {
		Problems []struct{ Field, Message string } `json:"problems"`
	}
	require.NoError(t, json.Unmarshal(got[3].Diagnostics, &diag))
	fields := []string{}
	for _, p := range diag.Problems {
		fields = append(fields, p.Field)
	}
	assert.ElementsMatch(t, []string{"path", "start_line"}, fields, "every bad field is named: %+v", diag.Problems)

	// The read saw what the repaired write wrote.
	var reads []string
	for _, e := range evs {
		if e.Event == core.EventToolCompleted {
			var p struct {
				Tool   string `json:"tool"`
				Output struct {
					Content string `json:"content"`
				} `json:"output"`
			}
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			if p.Tool == "coding_agent_read_file" {
				reads = append(reads, p.Output.Content)
			}
		}
	}
	assert.Equal(t, []string{"hello"}, reads)
}

// TestOperatorPermissionOverrides: a toolpack's config block turns a tool to
// deny (the engine is not offered it and a call fails) or to ask (the run
// pauses for the user) whatever the toolpack's default.
func TestOperatorPermissionOverrides(t *testing.T) {
	configs := defaultConfigs(t)
	configs[2].Permissions = map[string]plugin.Permission{
		"coding_agent_write_file": plugin.PermissionDeny,
		"coding_agent_read_file":  plugin.PermissionAsk,
	}
	h := newHost(t, configs, orchestrator.Options{})
	st := h.waitHealthy(t, "patch")
	require.Contains(t, st.Tools, "coding_agent_write_file")

	run := h.start(t, "tool coding_agent_write_file {\"path\":\"a.txt\",\"content\":\"x\"}\ntool coding_agent_read_file {\"path\":\"a.txt\"}\nsay done")
	h.waitEvent(t, run.ID, core.EventRunPaused)
	require.NoError(t, h.orch.Resume(context.Background(), run.ID, engine.PermissionDecision{Allow: true}))
	final := h.wait(t, run.ID)
	require.Equal(t, core.RunCompleted, final.Status)
	evs := h.store.Events(run.ID)
	requireWellFormed(t, evs)
	got := toolOutcomes(t, evs)
	require.Len(t, got, 2)
	assert.Equal(t, core.CodeToolPermissionDenied, got[0].Code)
	assert.Equal(t, "FILE_NOT_FOUND", got[1].Code, "the read was allowed by the user and ran; the denied write never happened")
	assert.Subset(t, types(evs), []core.EventType{core.EventPermissionRequest, core.EventPermissionResolved})
}

// TestDeniedWithoutReason: a user's deny with no reason says so plainly
// (it used to end in a stray ": "); with a reason, the reason follows.
func TestDeniedWithoutReason(t *testing.T) {
	configs := defaultConfigs(t)
	configs[2].Permissions = map[string]plugin.Permission{"coding_agent_read_file": plugin.PermissionAsk}
	h := newHost(t, configs, orchestrator.Options{})
	h.waitHealthy(t, "patch")
	for reason, want := range map[string]string{
		"":            "the user denied coding_agent_read_file",
		"  not now  ": "the user denied coding_agent_read_file: not now",
	} {
		run := h.start(t, "tool coding_agent_read_file {\"path\":\"a.txt\"}\nsay done")
		h.waitEvent(t, run.ID, core.EventRunPaused)
		require.NoError(t, h.orch.Resume(context.Background(), run.ID, engine.PermissionDecision{Allow: false, Reason: reason}))
		h.wait(t, run.ID)
		var msgs []string
		for _, e := range h.store.Events(run.ID) {
			if e.Event == core.EventToolFailed {
				var p struct {
					Message string `json:"error_message"`
				}
				require.NoError(t, json.Unmarshal(e.Payload, &p))
				msgs = append(msgs, p.Message)
			}
		}
		assert.Equal(t, []string{want}, msgs)
	}
}
