// Package toolpacktest is the toolpack conformance kit. Run drives a
// toolpack through its real host-side client against in-memory workspaces
// the kit lends, and checks what every toolpack owes the host: a sound
// identity and tool list, refusals as results rather than errors, prompt
// answers to cancelled calls, the author's example calls, and the same
// answers when those calls run concurrently.
package toolpacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Case is one example call the toolpack's author provides. Every tool needs
// at least one case that succeeds.
type Case struct {
	// Name identifies the case in test output; unique within a Run.
	Name string
	Tool string
	// Input is the call's input JSON. For a case that succeeds it must also
	// fit the tool's input schema, since the host checks that first.
	Input json.RawMessage
	// Files is the workspace the call starts with (path → content); each
	// run of the case gets a fresh copy.
	Files map[string]string
	// WantOK expects success; otherwise WantCode is the expected error code
	// and WantField, when set, the expected error field.
	WantOK    bool
	WantCode  string
	WantField string
	// Check, when set, inspects the result and the workspace afterwards. It
	// runs for the concurrent copies of the case too, so it must only look
	// at its own arguments.
	Check func(t *testing.T, res plugin.ToolResult, ws workspace.Workspace)
	// Exec, when set, answers the commands the tool runs in this case's
	// workspace (the kit's in-memory workspace runs none itself and refuses
	// Exec with UNSUPPORTED otherwise). Like any workspace it must also
	// write the output to req.Stdout and req.Stderr when they are set (the
	// workspace service streams through them). It may be called concurrently.
	Exec func(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error)
}

// Timing bounds. callTimeout keeps a hung tool from stalling the suite until
// go test's own timeout; cancelGrace is how long a call whose context is
// already cancelled may take to answer (the in-process gRPC hop needs
// microseconds; the rest is slack for loaded CI machines).
const (
	callTimeout = 30 * time.Second
	cancelGrace = 5 * time.Second
)

// concurrentCopies is how many copies of every case run at once in the
// concurrency check: enough to overlap every case with itself and the others.
const concurrentCopies = 4

// malformedInputs are inputs no tool may accept: broken JSON, and JSON that
// is not the object every input schema declares. An empty input is left out
// on purpose: a tool without parameters may read it as {}.
var malformedInputs = []string{`{`, `{"a":`, `not json`, `{"a":1}}`, `[]`, `"text"`, `42`}

// Run checks the toolpack behind newClient, which gets the kit's workspace
// resolver to configure the client with, e.g.
// plugintest.Toolpack(t, impl, cfg, resolver), or a client of a real binary.
func Run(t *testing.T, newClient func(t *testing.T, ws workspace.Resolver) *toolpack.Client, cases []Case) {
	t.Helper()
	k := &kit{spaces: newSpaces()}
	k.client = newClient(t, k.spaces.resolve)
	require.NotNil(t, k.client, "newClient returned no client")

	t.Run("info", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
		defer cancel()
		info, err := k.client.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, plugin.KindToolpack, info.Kind)
		assert.NotEmpty(t, info.Name, "name")
		assert.NotEmpty(t, info.Version, "version")
		assert.Equal(t, plugin.APIVersion, info.APIVersion)
	})

	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	tools, err := k.client.Tools(ctx)
	cancel()
	require.NoError(t, err, "list tools")
	t.Run("tools", func(t *testing.T) { reportAll(t, specProblems(tools)) })
	t.Run("cases", func(t *testing.T) { reportAll(t, caseProblems(tools, cases)) })
	schemas := map[string]json.RawMessage{}
	for _, tl := range tools {
		schemas[tl.Name] = tl.OutputSchema
	}

	t.Run("unknown tool", func(t *testing.T) {
		res, err := k.call(t.Context(), Case{Name: "unknown", Tool: "toolpacktest_no_such_tool", Input: json.RawMessage(`{}`)})
		require.NoError(t, err, "an unknown tool is a failed result, not an error")
		require.False(t, res.OK, "a call to a tool the pack lacks succeeded")
		require.NotNil(t, res.Error)
		assert.Equal(t, toolpack.CodeUnknownTool, res.Error.Code, res.Error.Message)
	})

	t.Run("malformed input", func(t *testing.T) {
		for _, tl := range tools {
			for _, bad := range malformedInputs {
				res, err := k.call(t.Context(), Case{Name: "malformed", Tool: tl.Name, Input: json.RawMessage(bad)})
				if !assert.NoError(t, err, "%s with input %s: bad input is a failed result, not an error", tl.Name, bad) {
					continue
				}
				if assert.False(t, res.OK, "%s accepted input %s", tl.Name, bad) && assert.NotNil(t, res.Error, tl.Name) {
					assert.NotEmpty(t, res.Error.Code, "%s with input %s: failure without a code", tl.Name, bad)
				}
			}
		}
	})

	t.Run("cancelled context", func(t *testing.T) {
		for _, tl := range tools {
			cs, ok := exampleFor(cases, tl.Name)
			if !ok {
				continue // reported under "cases"
			}
			cctx, cancel := context.WithCancel(t.Context())
			cancel()
			type answer struct {
				res plugin.ToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := k.call(cctx, cs)
				done <- answer{res, err}
			}()
			select {
			case a := <-done:
				assert.True(t, a.err != nil || !a.res.OK, "%s succeeded although its context was cancelled", tl.Name)
			case <-time.After(cancelGrace):
				t.Errorf("%s: a call with a cancelled context did not return within %s", tl.Name, cancelGrace)
			}
		}
	})

	// baseline holds each case's answer when run alone, nil where the call
	// itself failed (already reported).
	baseline := make([]*plugin.ToolResult, len(cases))
	t.Run("examples", func(t *testing.T) {
		for i, cs := range cases {
			t.Run(cs.Name, func(t *testing.T) {
				ws := k.lend(t, cs)
				res, err := k.callIn(t.Context(), cs, ws)
				require.NoError(t, err, "the call returned an error; a refusal must be a failed result")
				baseline[i] = &res
				k.verify(t, cs, schemas[cs.Tool], res, ws.ws)
			})
		}
	})

	t.Run("concurrent", func(t *testing.T) { k.concurrent(t, cases, schemas, baseline) })
}

// kit is the state of one Run.
type kit struct {
	spaces *spaces
	client *toolpack.Client
}

// lent is a workspace the kit lent, with its id.
type lent struct {
	id string
	ws *memWorkspace
}

func (k *kit) lend(t *testing.T, cs Case) lent {
	t.Helper()
	id, ws, err := k.spaces.lend(cs.Files)
	require.NoError(t, err, "the case's Files are not a valid workspace")
	ws.exec = cs.Exec
	return lent{id, ws}
}

// call runs cs in a fresh workspace.
func (k *kit) call(ctx context.Context, cs Case) (plugin.ToolResult, error) {
	id, ws, err := k.spaces.lend(cs.Files)
	if err != nil {
		return plugin.ToolResult{}, fmt.Errorf("lend workspace: %w", err)
	}
	ws.exec = cs.Exec
	return k.callIn(ctx, cs, lent{id: id})
}

func (k *kit) callIn(ctx context.Context, cs Case, ws lent) (plugin.ToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return k.client.Call(ctx, toolpack.Call{RunID: "toolpacktest-run", CallID: cs.Name, Tool: cs.Tool, Input: cs.Input}, ws.id)
}

// verify asserts a case's expectations on res, then runs its Check.
func (k *kit) verify(t *testing.T, cs Case, outputSchema json.RawMessage, res plugin.ToolResult, ws workspace.Workspace) {
	t.Helper()
	if cs.WantOK {
		if assert.True(t, res.OK, "want success, got %+v", res.Error) && assert.True(t, json.Valid(res.Output), "output is not JSON: %q", res.Output) {
			for _, p := range schemaProblems(outputSchema, res.Output) {
				t.Errorf("output does not match the tool's output schema: %s", p)
			}
		}
	} else if assert.False(t, res.OK, "want %s, got success: %s", cs.WantCode, res.Output) && assert.NotNil(t, res.Error, "failed result without an error") {
		assert.Equal(t, cs.WantCode, res.Error.Code, "message: %s", res.Error.Message)
		if cs.WantField != "" {
			assert.Equal(t, cs.WantField, res.Error.Field, "message: %s", res.Error.Message)
		}
	}
	if cs.Check != nil {
		cs.Check(t, res, ws)
	}
}

// concurrent runs concurrentCopies of every case at once, each in its own
// workspace, and checks that each answers as the case did alone. Calls run
// in plain goroutines released together (parallel subtests would serialise
// under -parallel 1); assertions happen afterwards in subtests, because
// testing's FailNow may not be called from other goroutines.
func (k *kit) concurrent(t *testing.T, cases []Case, schemas map[string]json.RawMessage, baseline []*plugin.ToolResult) {
	type run struct {
		caseIdx, copy int
		ws            lent
		res           plugin.ToolResult
		err           error
	}
	var runs []*run
	for c := range concurrentCopies {
		for i, cs := range cases {
			runs = append(runs, &run{caseIdx: i, copy: c, ws: k.lend(t, cs)})
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			<-start
			r.res, r.err = k.callIn(t.Context(), cases[r.caseIdx], r.ws)
		})
	}
	close(start)
	wg.Wait()

	for _, r := range runs {
		cs := cases[r.caseIdx]
		t.Run(fmt.Sprintf("%s/copy%d", cs.Name, r.copy), func(t *testing.T) {
			require.NoError(t, r.err)
			// Outcomes must agree with the case run alone; outputs are left
			// to Check, since they may carry timestamps or durations.
			if want := baseline[r.caseIdx]; want != nil {
				assert.Equal(t, want.OK, r.res.OK, "alone: %+v, concurrently: %+v", want.Error, r.res.Error)
				if want.Error != nil && r.res.Error != nil {
					assert.Equal(t, want.Error.Code, r.res.Error.Code)
					assert.Equal(t, want.Error.Field, r.res.Error.Field)
				}
			}
			k.verify(t, cs, schemas[cs.Tool], r.res, r.ws.ws)
		})
	}
}

// exampleFor returns the first case of tool that succeeds, else its first
// case: the call most likely to do real work if cancellation were ignored.
func exampleFor(cases []Case, tool string) (Case, bool) {
	var first *Case
	for i := range cases {
		if cases[i].Tool != tool {
			continue
		}
		if cases[i].WantOK {
			return cases[i], true
		}
		if first == nil {
			first = &cases[i]
		}
	}
	if first == nil {
		return Case{}, false
	}
	return *first, true
}

func reportAll(t *testing.T, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}
