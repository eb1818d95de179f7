package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSkeleton(t *testing.T) {
	cases := []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{"run.status", "assistant.delta", "assistant.delta", "run.status", "assistant.delta", "run.completed"},
			[]string{"assistant.delta", "run.completed"}},
		{[]string{"assistant.delta", "tool.started", "tool.completed", "assistant.delta", "assistant.delta", "run.completed"},
			[]string{"assistant.delta", "tool.started", "tool.completed", "assistant.delta", "run.completed"}},
		// A status between two deltas does not keep them apart.
		{[]string{"assistant.delta", "run.status", "assistant.delta"}, []string{"assistant.delta"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Skeleton(tc.in), "%v", tc.in)
	}
}

func TestCanonicalSkeletonsAreValid(t *testing.T) {
	for _, s := range AllScenarios {
		c := Canonical(s)
		require.NotEmpty(t, c, s)
		assert.NoError(t, Validate(c), s)
		assert.Equal(t, c, Skeleton(c), "%s: a canonical skeleton is its own skeleton", s)
	}
	assert.Nil(t, Canonical("nope"))
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		timeline []string
		problem  string
	}{
		"ok":                 {[]string{"tool.started", "tool.failed", "run.completed"}, ""},
		"no terminal":        {[]string{"assistant.delta"}, "0 terminal events"},
		"two terminals":      {[]string{"run.failed", "run.completed"}, "not last"},
		"terminal not last":  {[]string{"run.completed", "assistant.delta"}, "not last"},
		"nested tool":        {[]string{"tool.started", "tool.started", "tool.completed", "run.completed"}, "before the previous call finished"},
		"finish unstarted":   {[]string{"tool.completed", "run.completed"}, "without a tool.started"},
		"tool never closed":  {[]string{"tool.started", "run.cancelled"}, "never finished"},
		"paused not a final": {[]string{"assistant.delta", "run.paused"}, "0 terminal events"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Validate(tc.timeline)
			if tc.problem == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.problem)
		})
	}
}

func TestRecorderTools(t *testing.T) {
	r := NewRecorder()
	ctx := context.Background()

	res, err := r.CallTool(ctx, "r", engine.ToolCall{CallID: "1", Tool: EchoTool, Input: []byte(`{"text":"ping"}`)})
	require.NoError(t, err)
	require.True(t, res.OK)
	assert.JSONEq(t, `{"echo":{"text":"ping"}}`, string(res.Output))

	res, err = r.CallTool(ctx, "r", engine.ToolCall{CallID: "2", Tool: FailTool, Input: []byte(`{}`)})
	require.NoError(t, err, "a failing tool is a result, not an error")
	assert.Equal(t, CodeToolFailed, res.Error.Code)

	res, err = r.CallTool(ctx, "r", engine.ToolCall{CallID: "3", Tool: "rm_rf", Input: []byte(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, CodeToolUnknown, res.Error.Code)

	assert.Equal(t, []string{"tool.started", "tool.completed", "tool.started", "tool.failed", "tool.started", "tool.failed"}, r.Timeline("r"))
	assert.Len(t, r.ToolCalls("r"), 3)
	assert.Empty(t, r.Timeline("other"), "timelines are per run")
}

func TestRecorderPermissionStateWorkspace(t *testing.T) {
	ctx := context.Background()
	r := NewRecorder()
	d, err := r.RequestPermission(ctx, "r", engine.PermissionRequest{Action: "deploy"})
	require.NoError(t, err)
	assert.True(t, d.Allow, "allowed by default")
	r.SetDecision(engine.PermissionDecision{Reason: "no"})
	d, _ = r.RequestPermission(ctx, "r", engine.PermissionRequest{Action: "deploy"})
	assert.Equal(t, engine.PermissionDecision{Reason: "no"}, d)
	d, _ = NewRecorder(WithDecision(engine.PermissionDecision{Reason: "never"})).RequestPermission(ctx, "x", engine.PermissionRequest{})
	assert.False(t, d.Allow)
	assert.Equal(t, Canonical(Permission)[:4], r.Timeline("r")[:4])

	require.NoError(t, r.SaveState(ctx, "r", []byte("s1")))
	assert.Equal(t, []byte("s1"), r.State("r"))
	assert.Len(t, r.Timeline("r"), 8, "saving state adds nothing to the timeline")

	_, err = r.Workspace(ctx, "ws")
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "got %v", err)
}

func TestRecorderEventsAndResults(t *testing.T) {
	r := NewRecorder()
	on := r.OnEvent("r")
	for _, ev := range []engine.Event{
		engine.Status("thinking", ""), {Kind: engine.KindReasoning, Text: "hmm"}, engine.Delta("a"),
		{Kind: engine.KindUsage, InputTokens: 3}, engine.Delta("b"),
	} {
		require.NoError(t, on(ev))
	}
	r.Finish("r", engine.Completed("ab"))
	assert.Equal(t, []string{"run.status", "assistant.delta", "assistant.delta", "run.completed"}, r.Timeline("r"),
		"reasoning and usage are not in the timeline")

	for status, want := range map[string]string{
		engine.StatusFailed: "run.failed", engine.StatusCancelled: "run.cancelled", engine.StatusPaused: "run.paused", "weird": "invalid-status:weird",
	} {
		r.Finish(status, engine.Result{Status: status})
		assert.Equal(t, []string{want}, r.Timeline(status))
	}
}

func TestRecorderIsSafeForConcurrentRuns(t *testing.T) {
	r := NewRecorder()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 16 {
		id := fmt.Sprintf("r%d", i)
		wg.Go(func() {
			for range 50 {
				_ = r.OnEvent(id)(engine.Delta("x"))
				_, _ = r.CallTool(ctx, id, engine.ToolCall{Tool: EchoTool, Input: json.RawMessage(`{}`)})
				_, _ = r.RequestPermission(ctx, id, engine.PermissionRequest{})
				_ = r.SaveState(ctx, id, []byte(id))
			}
			r.Finish(id, engine.Completed(""))
		})
	}
	wg.Wait()
	for i := range 16 {
		id := fmt.Sprintf("r%d", i)
		assert.Len(t, r.Timeline(id), 50*7+1)
		assert.NoError(t, Validate(r.Timeline(id)))
	}
}
