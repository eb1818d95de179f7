package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
)

const (
	// runTimeout bounds one scenario. It is generous because the kit checks
	// behaviour, not speed, and CI machines are shared and slow.
	runTimeout = 60 * time.Second
	// cancelTimeout is how long an engine may take to end a run after a
	// Cancel; an engine that needs longer is indistinguishable from one that
	// ignores cancels.
	cancelTimeout = 15 * time.Second
	// concurrentRounds is how many copies of each concurrent scenario run at
	// once: enough to interleave callbacks of different runs on one
	// connection, few enough for a real model-backed engine.
	concurrentRounds = 4
)

// Connect builds a client of the engine under test whose callbacks go to
// services, for example plugintest.Engine(t, impl, config, services), or a
// client of the real plugin binary configured with services.
type Connect func(t *testing.T, services engine.HostServices) *engine.Client

// Prepare returns the request that makes the engine perform a scenario, or
// false when the engine does not support it. Only an Optional scenario may
// be declined (it is then skipped, and the kit's report names it);
// declining any other fails the kit. Leave RunID empty and the kit picks a
// unique one.
type Prepare func(s Scenario) (engine.RunRequest, bool)

// Run checks an engine against every scenario, then runs the text and tool
// scenarios concurrently on one connection. opts configure the kit's
// Recorder (WithWorkspaces for an engine that needs a workspace).
func Run(t *testing.T, connect Connect, prepare Prepare, opts ...Option) {
	t.Helper()
	k := &kit{rec: NewRecorder(opts...), used: map[string]bool{}}
	k.client = connect(t, k.rec)

	t.Run("info", func(t *testing.T) { k.checkInfo(t) })
	var declined []string
	for _, s := range AllScenarios {
		t.Run(string(s), func(t *testing.T) {
			req, ok := prepare(s)
			if !ok && Optional(s) {
				declined = append(declined, string(s))
				t.Skipf("the engine declares the optional scenario %q unsupported", s)
			}
			if !ok {
				t.Fatalf("the engine declines scenario %q, which every engine must pass: %s", s, mandatoryWhy[s])
			}
			if req.RunID == "" {
				req.RunID = k.newRunID(s)
			}
			if !k.claim(req.RunID) {
				t.Fatalf("prepare returned run id %q more than once; leave RunID empty and the kit picks unique ids", req.RunID)
			}
			k.runScenario(t, s, req)
		})
	}
	t.Run("concurrent", func(t *testing.T) { k.concurrent(t, prepare) })
	if len(declined) > 0 {
		t.Logf("enginetest: optional scenarios declined, so not checked: %v", declined)
	}
}

// mandatoryWhy says what each mandatory scenario asks of an engine.
var mandatoryWhy = map[Scenario]string{
	Text:        "stream assistant text and complete",
	Tool:        "call " + EchoTool + ` with {"text":"ping"}, then stream text`,
	ToolFailure: "call " + FailTool + ", carry on after its failure and stream text",
	Permission:  "ask a permission (RequestPermission) or call " + GuardedTool + ", then stream text",
	Fail:        "fail with an error code",
	Cancel:      "stream text, keep working, and end the run cancelled within " + cancelTimeout.String() + " of a Cancel",
}

// kit is the state of one Run: a client, the Recorder behind it and the run
// ids used so far (timelines are keyed by run id, so ids must not repeat).
type kit struct {
	client *engine.Client
	rec    *Recorder

	mu   sync.Mutex
	used map[string]bool
	seq  atomic.Int64
}

func (k *kit) newRunID(s Scenario) string {
	return fmt.Sprintf("conformance-%s-%d", s, k.seq.Add(1))
}

// claim marks a run id used and reports whether it was free.
func (k *kit) claim(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.used[id] {
		return false
	}
	k.used[id] = true
	return true
}

func (k *kit) checkInfo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	info, err := k.client.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Kind != plugin.KindEngine {
		t.Errorf("Info().Kind = %q, want %q", info.Kind, plugin.KindEngine)
	}
	if info.Name == "" || info.Version == "" {
		t.Errorf("Info() needs a name and a version, got name %q version %q", info.Name, info.Version)
	}
	if info.APIVersion != plugin.APIVersion {
		t.Errorf("Info().APIVersion = %d, want %d", info.APIVersion, plugin.APIVersion)
	}
}

// concurrent runs the text and tool scenarios concurrentRounds times each,
// all at once on the same client, and checks every run on its own.
func (k *kit) concurrent(t *testing.T, prepare Prepare) {
	var wg sync.WaitGroup
	started := 0
	for i := range concurrentRounds {
		for _, s := range []Scenario{Text, Tool} {
			req, ok := prepare(s)
			if !ok {
				// Reported by its own scenario: both are mandatory.
				continue
			}
			if req.RunID == "" {
				req.RunID = k.newRunID(s)
			} else {
				// The author's fixed id, made unique per copy.
				req.RunID = fmt.Sprintf("%s-concurrent-%d", req.RunID, i)
			}
			if !k.claim(req.RunID) {
				t.Errorf("run id %q is already used", req.RunID)
				continue
			}
			started++
			wg.Add(1)
			go func() {
				defer wg.Done()
				// t.Errorf is safe from several goroutines; t.Fatal is
				// not, and runScenario never calls it.
				k.runScenario(t, s, req)
			}()
		}
	}
	wg.Wait()
	if started == 0 {
		t.Skip("the engine declares both the text and tool scenarios unsupported")
	}
}

type outcome struct {
	res engine.Result
	err error
}

// runScenario runs one prepared request and checks what it produced. It
// reports failures with t.Errorf only, so it may run on any goroutine.
func (k *kit) runScenario(t *testing.T, s Scenario, req engine.RunRequest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()

	done := make(chan outcome, 1)
	go func() {
		res, err := k.client.Run(ctx, req, k.rec.OnEvent(req.RunID))
		done <- outcome{res, err}
	}()
	var o outcome
	if s == Cancel {
		var ok bool
		if o, ok = k.cancelMidway(ctx, t, req.RunID, done, cancel); !ok {
			return
		}
	} else {
		o = <-done
	}
	k.check(t, s, req.RunID, o)
}

// cancelMidway waits for the run's first delta, cancels it and waits for its
// result. ok is false when it has already reported why there is none to
// check; the run's goroutine has ended either way.
func (k *kit) cancelMidway(ctx context.Context, t *testing.T, runID string, done <-chan outcome, abandon context.CancelFunc) (o outcome, ok bool) {
	t.Helper()
	waitCtx, stopWaiting := context.WithCancel(ctx)
	streamed := make(chan error, 1)
	go func() { streamed <- k.rec.WaitFor(waitCtx, runID, EventAssistantDelta) }()
	select {
	case o = <-done:
		stopWaiting()
		<-streamed
		t.Errorf("the run ended before the kit could cancel it (status %q, error %v, timeline %v); "+
			"in the cancel scenario the engine must stream text, then keep working until cancelled",
			o.res.Status, o.err, k.rec.Timeline(runID))
		return o, false
	case err := <-streamed:
		stopWaiting()
		if err != nil {
			abandon()
			<-done
			t.Errorf("the engine streamed no assistant.delta within %s, so there was nothing to cancel midway", runTimeout)
			return o, false
		}
	}

	found, err := k.client.Cancel(ctx, runID, "enginetest: cancel scenario")
	if err != nil {
		t.Errorf("Cancel: %v", err)
	} else if !found {
		t.Errorf("Cancel answered found=false for a run that is still running")
	}
	timer := time.NewTimer(cancelTimeout)
	defer timer.Stop()
	select {
	case o = <-done:
		return o, true
	case <-timer.C:
		// Abandon the stream so the run's goroutine ends; the engine may
		// keep running on its side, which is exactly the failure reported.
		abandon()
		<-done
		t.Errorf("the engine did not end the run within %s of a cancel (the host fails such runs: cancel unconfirmed)", cancelTimeout)
		return o, false
	}
}

// check holds one finished run to the rules.
func (k *kit) check(t *testing.T, s Scenario, runID string, o outcome) {
	t.Helper()
	if o.err != nil {
		t.Errorf("Run returned an error instead of a result (a broken stream, or no result within %s): %v\ntimeline so far: %v",
			runTimeout, o.err, k.rec.Timeline(runID))
		return
	}
	res := o.res
	k.rec.Finish(runID, res)
	timeline := k.rec.Timeline(runID)

	if err := Validate(timeline); err != nil {
		t.Error(err)
	}
	if got := Skeleton(timeline); !acceptedSkeleton(s, got) {
		t.Errorf("skeleton of scenario %q (run %s) differs from the mock engine's\nwant: %v\n got: %v\nfull timeline: %v\nresult: status %q code %q message %q",
			s, runID, Accepted(s), got, timeline, res.Status, res.ErrorCode, res.ErrorMessage)
	}
	if res.Status == engine.StatusFailed && res.ErrorCode == "" {
		t.Errorf("a failed run must carry an error code (message %q)", res.ErrorMessage)
	}
	k.checkScenario(t, s, runID)

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	found, err := k.client.Cancel(ctx, runID, "enginetest: after the end")
	if err != nil {
		t.Errorf("Cancel after the end: %v", err)
	} else if found {
		t.Errorf("Cancel still finds run %s after its Run returned", runID)
	}
}

func acceptedSkeleton(s Scenario, got []string) bool {
	for _, want := range Accepted(s) {
		if reflect.DeepEqual(want, got) {
			return true
		}
	}
	return false
}

// checkScenario checks what a skeleton cannot show: which tool was called
// with what, and whether state was saved.
func (k *kit) checkScenario(t *testing.T, s Scenario, runID string) {
	t.Helper()
	calls := k.rec.ToolCalls(runID)
	switch s {
	case Tool:
		if len(calls) != 1 || calls[0].Tool != EchoTool {
			t.Errorf("the tool scenario must call %s once, got %v", EchoTool, toolNames(calls))
			return
		}
		var got, want any
		_ = json.Unmarshal([]byte(`{"text":"ping"}`), &want)
		if err := json.Unmarshal(calls[0].Input, &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf(`the tool scenario must call %s with {"text":"ping"}, got %s`, EchoTool, calls[0].Input)
		}
	case ToolFailure:
		if len(calls) != 1 || calls[0].Tool != FailTool {
			t.Errorf("the tool_failure scenario must call %s once, got %v", FailTool, toolNames(calls))
		}
	case Permission:
		if len(calls) > 0 && (len(calls) != 1 || calls[0].Tool != GuardedTool) {
			t.Errorf("the permission scenario calls no tool but %s, once; got %v", GuardedTool, toolNames(calls))
		}
	case State:
		if len(k.rec.State(runID)) == 0 {
			t.Errorf("the state scenario must save non-empty state; the engine saved none")
		}
	}
}

func toolNames(calls []engine.ToolCall) []string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Tool
	}
	return names
}
