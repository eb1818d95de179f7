package enginetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenario is one task every engine must be able to perform.
type Scenario string

// The scenarios.
const (
	// Text: stream some text and complete.
	Text Scenario = "text"
	// Tool: call EchoTool with {"text":"ping"}, then stream text.
	Tool Scenario = "tool"
	// ToolFailure: call FailTool, keep going, stream text.
	ToolFailure Scenario = "tool_failure"
	// Permission: ask permission (allowed), then stream text.
	Permission Scenario = "permission"
	// Fail: fail with a non-empty error code.
	Fail Scenario = "fail"
	// Cancel: stream some text, then keep working until cancelled.
	Cancel Scenario = "cancel"
	// State: save non-empty state, then stream text.
	State Scenario = "state"
)

// AllScenarios lists every scenario in the order the kit runs them.
var AllScenarios = []Scenario{Text, Tool, ToolFailure, Permission, Fail, Cancel, State}

// Canonical is the skeleton the mock engine produces for a scenario.
func Canonical(s Scenario) []string {
	switch s {
	case Text, State:
		return []string{"assistant.delta", "run.completed"}
	case Tool:
		return []string{"tool.started", "tool.completed", "assistant.delta", "run.completed"}
	case ToolFailure:
		return []string{"tool.started", "tool.failed", "assistant.delta", "run.completed"}
	case Permission:
		return []string{"permission.requested", "run.paused", "permission.resolved", "run.resumed", "assistant.delta", "run.completed"}
	case Fail:
		return []string{"run.failed"}
	case Cancel:
		return []string{"assistant.delta", "run.cancelled"}
	}
	return nil
}

// Skeleton drops run.status and collapses runs of assistant.delta: what is
// left must be the same for every engine doing the same task.
func Skeleton(timeline []string) []string {
	var out []string
	for _, e := range timeline {
		if e == "run.status" {
			continue
		}
		if e == "assistant.delta" && len(out) > 0 && out[len(out)-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

func isTerminal(e string) bool {
	return e == "run.completed" || e == "run.failed" || e == "run.cancelled"
}

// CheckTimeline asserts the invariants of any finished run's timeline:
// exactly one terminal event, last, and every tool.started closed before the
// next one.
func CheckTimeline(t testing.TB, timeline []string) {
	t.Helper()
	terminals, open := 0, false
	for i, e := range timeline {
		switch {
		case isTerminal(e):
			terminals++
			assert.Equal(t, len(timeline)-1, i, "terminal event %s is not last: %v", e, timeline)
		case e == "tool.started":
			assert.False(t, open, "tool.started before the previous call finished: %v", timeline)
			open = true
		case e == "tool.completed" || e == "tool.failed":
			assert.True(t, open, "%s without tool.started: %v", e, timeline)
			open = false
		}
	}
	assert.Equal(t, 1, terminals, "exactly one terminal event: %v", timeline)
	assert.False(t, open, "a tool call never finished: %v", timeline)
}

// Prepare returns the request that makes the engine perform a scenario, or
// false when the engine cannot (the scenario is then skipped, loudly).
type Prepare func(s Scenario) (engine.RunRequest, bool)

// Connect builds a client of the engine under test whose callbacks go to
// services (for example plugintest.Engine(t, impl, cfg, services)).
type Connect func(t *testing.T, services engine.HostServices) *engine.Client

var runCounter atomic.Int64

// Run runs every scenario, then a concurrency check.
func Run(t *testing.T, connect Connect, prepare Prepare) {
	rec := NewRecorder()
	client := connect(t, rec)

	t.Run("info", func(t *testing.T) {
		info, err := client.Info(context.Background())
		require.NoError(t, err)
		assert.Equal(t, plugin.KindEngine, info.Kind)
		assert.NotEmpty(t, info.Name)
		assert.NotEmpty(t, info.Version)
		assert.Equal(t, plugin.APIVersion, info.APIVersion)
	})
	for _, s := range AllScenarios {
		t.Run(string(s), func(t *testing.T) {
			req, ok := prepare(s)
			if !ok {
				t.Skipf("the engine declares scenario %q unsupported", s)
			}
			runScenario(t, client, rec, s, req)
		})
	}
	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			for _, s := range []Scenario{Text, Tool} {
				req, ok := prepare(s)
				if !ok {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					runScenario(t, client, rec, s, req)
				}()
			}
		}
		wg.Wait()
	})
}

func runScenario(t *testing.T, client *engine.Client, rec *Recorder, s Scenario, req engine.RunRequest) {
	if req.RunID == "" {
		req.RunID = fmt.Sprintf("conformance-%s-%d", s, runCounter.Add(1))
	}
	// Generous: the kit checks behaviour, not speed, on shared machines.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type outcome struct {
		res engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := client.Run(ctx, req, rec.OnEvent(req.RunID))
		done <- outcome{res, err}
	}()
	var o outcome
	if s == Cancel {
		if !assert.NoError(t, rec.WaitFor(ctx, req.RunID, "assistant.delta"), "the engine streamed nothing before the cancel") {
			return
		}
		found, err := client.Cancel(ctx, req.RunID, "conformance")
		assert.NoError(t, err)
		assert.True(t, found, "Cancel did not find the running run")
		select {
		case o = <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("the engine did not return within 15s of a cancel")
			return
		}
	} else {
		o = <-done
	}
	checkOutcome(t, client, rec, s, req, o.res, o.err)
}

func checkOutcome(t *testing.T, client *engine.Client, rec *Recorder, s Scenario, req engine.RunRequest, res engine.Result, err error) {
	if !assert.NoError(t, err, "Run broke instead of returning a result") {
		return
	}
	rec.Finish(req.RunID, res)
	timeline := rec.Timeline(req.RunID)
	CheckTimeline(t, timeline)
	assert.Equal(t, Canonical(s), Skeleton(timeline), "skeleton of %s differs from the mock engine's\nfull timeline: %v", s, timeline)
	if res.Status == engine.StatusFailed {
		assert.NotEmpty(t, res.ErrorCode, "a failed run must carry an error code")
	}
	if s == State {
		assert.NotEmpty(t, rec.State(req.RunID), "the engine saved no state")
	}
	found, err := client.Cancel(context.Background(), req.RunID, "after the end")
	assert.NoError(t, err)
	assert.False(t, found, "Cancel still finds a run that has returned")
}
