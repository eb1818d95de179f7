package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEngine runs RunF.
type fakeEngine struct {
	RunF func(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error)
}

func (fakeEngine) Info() plugin.Info {
	return plugin.Info{Name: "fake", Kind: plugin.KindEngine, Version: "0", APIVersion: plugin.APIVersion}
}

func (f fakeEngine) Run(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error) {
	return f.RunF(ctx, req, host)
}

func connect(t *testing.T, f func(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error)) (*engine.Client, *enginetest.Recorder) {
	rec := enginetest.NewRecorder()
	return plugintest.Engine(t, fakeEngine{RunF: f}, nil, rec), rec
}

// A run the host has seen end must be gone: the engine forgets it before it
// sends the result, so no Cancel can race the cleanup.
func TestCancelAfterRunReturnsIsNotFound(t *testing.T) {
	c, rec := connect(t, func(context.Context, engine.RunRequest, engine.Host) (engine.Result, error) {
		return engine.Completed(""), nil
	})
	ctx := context.Background()
	// Many rounds, because before the fix this failed only when the
	// server's cleanup lost the race.
	for i := range 200 {
		id := fmt.Sprintf("r%d", i)
		_, err := rec.Run(ctx, c, engine.RunRequest{RunID: id})
		require.NoError(t, err)
		found, err := c.Cancel(ctx, id, "late")
		require.NoError(t, err)
		require.False(t, found, "round %d", i)
	}
}

// A second Run with the id of a running run is refused without cutting the
// running one off from its callbacks.
func TestDuplicateRunIDLeavesTheRunningRunIntact(t *testing.T) {
	release := make(chan struct{})
	c, rec := connect(t, func(ctx context.Context, _ engine.RunRequest, host engine.Host) (engine.Result, error) {
		if err := host.Emit(engine.Delta("up")); err != nil {
			return engine.Result{}, err
		}
		<-release
		res, err := host.CallTool(ctx, engine.ToolCall{CallID: "c1", Tool: enginetest.EchoTool, Input: []byte(`{}`)})
		if err != nil {
			return engine.Failed("CALLBACK_LOST", err.Error()), nil
		}
		if !res.OK {
			return engine.Failed("TOOL", res.Error.Message), nil
		}
		return engine.Completed("ok"), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan engine.Result, 1)
	go func() {
		res, err := rec.Run(ctx, c, engine.RunRequest{RunID: "dup"})
		assert.NoError(t, err)
		done <- res
	}()
	require.NoError(t, rec.WaitFor(ctx, "dup", enginetest.EventAssistantDelta))

	_, err := c.Run(ctx, engine.RunRequest{RunID: "dup"}, func(engine.Event) error { return nil })
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "got %v", err)

	close(release)
	res := <-done
	assert.Equal(t, engine.StatusCompleted, res.Status, "%s: %s", res.ErrorCode, res.ErrorMessage)
}

func TestRunOutcomes(t *testing.T) {
	cases := []struct {
		name   string
		run    func(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error)
		cancel bool
		status string
		code   string
	}{
		{"panic is a failed run", func(context.Context, engine.RunRequest, engine.Host) (engine.Result, error) {
			panic("boom")
		}, false, engine.StatusFailed, engine.CodeEngineError},
		{"error is a failed run", func(context.Context, engine.RunRequest, engine.Host) (engine.Result, error) {
			return engine.Result{}, errors.New("model unreachable")
		}, false, engine.StatusFailed, engine.CodeEngineError},
		{"empty status is a failed run", func(context.Context, engine.RunRequest, engine.Host) (engine.Result, error) {
			return engine.Result{OutputText: "x"}, nil
		}, false, engine.StatusFailed, engine.CodeEngineError},
		{"ctx error after Cancel confirms it", func(ctx context.Context, _ engine.RunRequest, host engine.Host) (engine.Result, error) {
			_ = host.Emit(engine.Delta("waiting"))
			<-ctx.Done()
			return engine.Result{}, ctx.Err()
		}, true, engine.StatusCancelled, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, rec := connect(t, tc.run)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan engine.Result, 1)
			go func() {
				res, err := rec.Run(ctx, c, engine.RunRequest{RunID: "r"})
				assert.NoError(t, err)
				done <- res
			}()
			if tc.cancel {
				require.NoError(t, rec.WaitFor(ctx, "r", enginetest.EventAssistantDelta))
				found, err := c.Cancel(ctx, "r", "test")
				require.NoError(t, err)
				require.True(t, found)
			}
			res := <-done
			assert.Equal(t, tc.status, res.Status)
			assert.Equal(t, tc.code, res.ErrorCode)
			assert.NoError(t, enginetest.Validate(rec.Timeline("r")))
		})
	}
}

// An engine goroutine that outlives its run cannot add to the timeline.
func TestEmitAfterReturnFails(t *testing.T) {
	hosts := make(chan engine.Host, 1)
	c, rec := connect(t, func(_ context.Context, _ engine.RunRequest, host engine.Host) (engine.Result, error) {
		hosts <- host
		return engine.Completed(""), nil
	})
	_, err := rec.Run(context.Background(), c, engine.RunRequest{RunID: "r"})
	require.NoError(t, err)
	assert.Error(t, (<-hosts).Emit(engine.Delta("late")))
	assert.Equal(t, []string{enginetest.EventRunCompleted}, rec.Timeline("r"))
}

// Tool calls an engine runs itself cross the wire with every field.
func TestEngineToolEventsRoundTrip(t *testing.T) {
	c, _ := connect(t, func(_ context.Context, _ engine.RunRequest, host engine.Host) (engine.Result, error) {
		for _, ev := range []engine.Event{
			engine.ToolStarted("c1", "bash", []byte(`{"command":"ls"}`)),
			engine.ToolCompleted("c1", "bash", []byte(`{"output":"a\n"}`)),
			engine.ToolFailed("c2", "edit", "EDIT_FAILED", "no match", []byte(`{"file":"a.ts"}`)),
		} {
			if err := host.Emit(ev); err != nil {
				return engine.Result{}, err
			}
		}
		return engine.Completed(""), nil
	})
	var got []engine.Event
	res, err := c.Run(context.Background(), engine.RunRequest{RunID: "tools"}, func(ev engine.Event) error {
		got = append(got, ev)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, engine.StatusCompleted, res.Status)
	require.Len(t, got, 3)
	assert.Equal(t, engine.Event{Kind: engine.KindToolStarted, CallID: "c1", Tool: "bash", Input: []byte(`{"command":"ls"}`)}, got[0])
	assert.Equal(t, engine.Event{Kind: engine.KindToolFinished, CallID: "c1", Tool: "bash", OK: true, Output: []byte(`{"output":"a\n"}`)}, got[1])
	assert.Equal(t, engine.Event{Kind: engine.KindToolFinished, CallID: "c2", Tool: "edit", ErrorCode: "EDIT_FAILED",
		ErrorMessage: "no match", Diagnostics: []byte(`{"file":"a.ts"}`)}, got[2])
}
