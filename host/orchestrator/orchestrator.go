package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/toolinput"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/hashicorp/go-hclog"
)

// Options tune the orchestrator.
type Options struct {
	// CancelGrace is how long an engine has to confirm a cancel before the
	// run fails closed.
	CancelGrace time.Duration
	// ToolTimeout bounds one tool call (tool_timeout_s).
	ToolTimeout time.Duration
	// CrashGrace is how long to wait for a plugin's exit to be observed after
	// a call to it failed, to tell a crash from another failure.
	CrashGrace time.Duration
	Logger     hclog.Logger
	// OnFinished, when set, is called with a run's final state after its
	// terminal event (metrics; without a RunFinisher, the chat records the
	// assistant's turn here).
	OnFinished func(ctx context.Context, run *core.Run)
	// AssistantTurn, when set, is the chat's assistant turn for a
	// finished run (nil for none); it is recorded with the run's end in
	// one transaction when the event log is a RunFinisher.
	AssistantTurn func(run *core.Run) *core.ChatTurn
	// SandboxReuse keeps a chat session's sandbox between its runs
	// (refreshed from the run's base files each time) instead of one
	// sandbox per run; SandboxTTL is how long an idle one is kept
	// (DefaultSandboxTTL when 0). Failed runs' sandboxes are never kept.
	SandboxReuse bool
	SandboxTTL   time.Duration
	// WarmServersMax caps the idle kept sandboxes that hold an agent
	// server (their engine runs one as a sandbox service, as OpenCode
	// does: hundreds of MB each); past it the least recently used is
	// stopped, and its chat's next run starts a new server and re-seeds
	// the chat's history. 0 means DefaultWarmServersMax; negative, none
	// kept. OnWarmServerEvicted, when set, counts each one stopped.
	WarmServersMax      int
	OnWarmServerEvicted func()
	// OnSnapshot, when set, counts each snapshot of a sandbox's files by
	// kind (SnapshotSkipped, SnapshotChanges, SnapshotWhole).
	OnSnapshot func(kind string)
	// WarmServersMemory is the most memory, in bytes, the services of idle
	// kept sandboxes holding an agent server may hold together, as their
	// backend reports it; past it the least recently used are stopped.
	// 0 sets no budget.
	WarmServersMemory int64
	// Limits are the host's file limits: the per-file one goes to the
	// sandbox at create, base files over it are kept out of the sandbox,
	// and results are held to them all (defaults when zero).
	Limits core.FileLimits
}

// Orchestrator runs coding-agent runs.
type Orchestrator struct {
	plugins Plugins
	runs    RunStore
	events  EventSink
	results ResultSink
	opts    Options
	log     hclog.Logger

	mu     sync.Mutex
	active map[string]*activeRun
	leases map[string]lease
	// guard normalises and validates every tool input before dispatch.
	guard *toolinput.Guard
	// pool keeps chat sessions' sandboxes warm (Options.SandboxReuse).
	pool     sandboxPool
	stopReap chan struct{}
	wg       sync.WaitGroup
	closed   bool
}

// New builds an Orchestrator and subscribes it to plugin crashes.
func New(plugins Plugins, runs RunStore, events EventSink, results ResultSink, opts Options) *Orchestrator {
	if opts.CancelGrace == 0 {
		opts.CancelGrace = 10 * time.Second
	}
	if opts.ToolTimeout == 0 {
		opts.ToolTimeout = 120 * time.Second // the seed's tool_timeout_s default
	}
	if opts.CrashGrace == 0 {
		opts.CrashGrace = 3 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	opts.Limits = opts.Limits.WithDefaults()
	o := &Orchestrator{
		plugins: plugins, runs: runs, events: events, results: results, opts: opts,
		log: opts.Logger.Named("orchestrator"), active: map[string]*activeRun{}, leases: map[string]lease{},
		guard: toolinput.NewGuard(),
	}
	o.pool.byKey = map[string]*warmSandbox{}
	o.stopReap = make(chan struct{})
	if opts.SandboxReuse {
		if o.opts.SandboxTTL <= 0 {
			o.opts.SandboxTTL = DefaultSandboxTTL
		}
		if o.opts.WarmServersMax == 0 {
			o.opts.WarmServersMax = DefaultWarmServersMax
		}
		go o.reapLoop(o.stopReap)
	}
	plugins.OnCrash(o.onCrash)
	return o
}

// StartRequest is a run to start.
type StartRequest struct {
	// RunID may be set by the caller (it must be unique); empty means new.
	RunID         string
	TenantID      string
	AppID         string
	UserID        string
	ChatSessionID string
	// BaseRevisionID is the app revision the run's sandbox starts from.
	BaseRevisionID string
	Prompt         string
	History        []engine.Message
	Engine         string
	Sandbox        string
	Files          []sandbox.File
	// LoadFiles, when set, reads the run's base files instead of Files,
	// only when the run's sandbox needs them: a chat's warm sandbox that
	// already holds the base revision does not, and its turn then costs no
	// read of the app's files.
	LoadFiles func(ctx context.Context) ([]sandbox.File, error)
	Model     engine.Model
	Context   json.RawMessage
	Limits    engine.Limits
	// IdempotencyKey and IdempotencyHash are recorded on the run; the store
	// refuses a second run with the same key for the tenant.
	IdempotencyKey, IdempotencyHash string
	// RequestedModelID is the model the request named ("" for auto); the
	// pinned one is Model.ID.
	RequestedModelID string
	// APIStartedAt is when the API request began (for create_run_api).
	APIStartedAt time.Time
	// Turn, when set, is the user's chat turn the run answers (and its new
	// chat session), recorded with the run or not at all.
	Turn *core.ChatTurn
}

// relaunchWait bounds how long a run waits for a plugin that has just
// crashed to be relaunched (detection ≤ 50 ms, first backoff 200 ms, start-up
// well under a second; 15 s covers a loaded machine).
const relaunchWait = 15 * time.Second

// awaitPlugin gets a plugin's client, waiting while it is being relaunched
// or while the process behind the client has died but its death is not yet
// noticed, so a run started in that gap is not failed for nothing.
func awaitPlugin[T any](ctx context.Context, get func() (T, pluginmgr.Handle, error)) (T, pluginmgr.Handle, error) {
	deadline := time.Now().Add(relaunchWait)
	for {
		c, h, err := get()
		retry := errors.Is(err, pluginmgr.ErrRelaunching) || (err == nil && h.Crashed(0))
		if !retry || time.Now().After(deadline) {
			if err == nil && retry {
				err = fmt.Errorf("%w: plugin %q crashed and was not relaunched within %s", pluginmgr.ErrUnavailable, h.Name, relaunchWait)
			}
			return c, h, err
		}
		select {
		case <-ctx.Done():
			return c, h, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Ready reports whether a run on this engine and sandbox backend could
// start now; callers check it before writing anything for a run. A plugin
// being relaunched after a crash counts as ready: the run waits for it
// (awaitPlugin) rather than failing in the gap.
func (o *Orchestrator) Ready(engineName, sandboxName string) error {
	_, eh, eerr := o.plugins.Engine(engineName)
	if eerr != nil && !errors.Is(eerr, pluginmgr.ErrRelaunching) {
		return core.Errf(core.CodeEngineUnavailable, "engine", "%v", eerr)
	}
	_, sh, serr := o.plugins.Sandbox(sandboxName)
	if serr != nil && !errors.Is(serr, pluginmgr.ErrRelaunching) {
		// Every run executes in a sandbox; with none usable the request
		// cannot be served (the seed's sandbox-required contract).
		return core.Errf(core.CodeSandboxRequired, "sandbox", "runs need a sandbox and backend %q cannot provide one: %v", sandboxName, serr)
	}
	// A plugin being relaunched has no Info to compare yet; its run waits
	// for it and the engine reports what it cannot do itself.
	if eerr == nil && serr == nil {
		if missing := plugin.MissingFeatures(eh.Capabilities[plugin.CapabilityRequires], sh.Capabilities[plugin.CapabilityProvides]); missing != nil {
			return core.Errf(core.CodeEngineUnsupportedRuntime, "engine",
				"engine %q needs sandbox features the %q backend does not offer: %s", engineName, sandboxName, strings.Join(missing, ", "))
		}
	}
	return nil
}

// Start records a queued run, emits run.accepted and executes it in the
// background. It fails fast, before recording anything, when the engine or
// sandbox plugin is not usable.
func (o *Orchestrator) Start(ctx context.Context, req StartRequest) (*core.Run, error) {
	if err := o.Ready(req.Engine, req.Sandbox); err != nil {
		return nil, err
	}
	startedAt := time.Now()
	now := startedAt.UTC()
	run := &core.Run{
		ID: req.RunID, TenantID: req.TenantID, AppID: req.AppID, UserID: req.UserID,
		ChatSessionID: req.ChatSessionID, BaseRevisionID: req.BaseRevisionID, Prompt: req.Prompt, Status: core.RunQueued,
		Engine: req.Engine, SandboxBackend: req.Sandbox, CreatedAt: now, UpdatedAt: now,
		IdempotencyKey: req.IdempotencyKey, IdempotencyHash: req.IdempotencyHash,
		RequestedModelID: req.RequestedModelID, ResolvedModelID: req.Model.ID, Context: req.Context,
	}
	if run.ID == "" {
		run.ID = core.NewID("run")
	}
	// The sandbox is allocated now and provisioned after the answer: the
	// run says which one and that it is starting from its creation on.
	run.SandboxID, run.SandboxStatus = o.plannedSandboxID(run), SandboxStarting
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, core.Errf(core.CodeHostShutdown, "", "the host is shutting down")
	}
	o.mu.Unlock()
	accepted, _ := json.Marshal(map[string]any{"run_id": run.ID, "engine": run.Engine, "sandbox_backend": run.SandboxBackend})
	starter, oneStep := o.runs.(RunStarter)
	if oneStep {
		// The run, its turn and run.accepted are one transaction: a run
		// is never seen without its first event, nor a turn without its
		// run.
		if _, err := starter.StartRun(ctx, run, req.Turn, NewEvent{Type: core.EventRunAccepted, Payload: accepted}); err != nil {
			return nil, fmt.Errorf("record run: %w", err)
		}
	} else {
		if req.Turn != nil {
			return nil, fmt.Errorf("record run: the run store cannot record chat turns")
		}
		if err := o.runs.CreateRun(ctx, run); err != nil {
			return nil, fmt.Errorf("record run: %w", err)
		}
	}
	ar := newActiveRun(run, req)
	ar.noSavedState = true
	o.mu.Lock()
	o.active[run.ID] = ar
	o.wg.Add(1)
	o.mu.Unlock()
	if !oneStep {
		if err := o.emitWith(ctx, ar, NewEvent{Type: core.EventRunAccepted, Payload: accepted}, nil); err != nil {
			o.log.Error("emit run.accepted", "run", run.ID, "error", err)
		}
	}
	ar.mark("create_run", time.Since(startedAt))
	if !req.APIStartedAt.IsZero() {
		ar.mark("create_run_api", time.Since(req.APIStartedAt))
	}
	go o.execute(ar)
	return run, nil
}

// SandboxStarting is a run's sandbox_status from its creation until its
// sandbox is provisioned.
const SandboxStarting = "starting"

// Wait blocks until the run is finished or paused-and-idle, or ctx ends, and
// returns its stored state.
func (o *Orchestrator) Wait(ctx context.Context, runID string) (*core.Run, error) {
	o.mu.Lock()
	ar := o.active[runID]
	o.mu.Unlock()
	if ar != nil {
		ar.mu.Lock()
		done := ar.done
		ar.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return o.runs.GetRun(ctx, runID)
}

// Shutdown stops accepting runs, fails the runs still active (their engines
// cannot outlive the host's plugins) and waits for them to record it.
func (o *Orchestrator) Shutdown(ctx context.Context) {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	runs := o.activeRuns()
	for _, ar := range runs {
		ar.mu.Lock()
		idle := ar.idle
		ar.mu.Unlock()
		if idle {
			// Nothing runs; the run stays paused and resumable (its engine
			// state is saved).
			continue
		}
		ar.abort(core.CodeHostShutdown, "the host shut down while the run was active")
	}
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if o.opts.SandboxReuse {
		close(o.stopReap)
		o.stopAllWarm()
	}
}

// activeRun is the in-memory side of a run that is executing.
type activeRun struct {
	req StartRequest
	// keptOut are base files kept out of the sandbox (over the limits);
	// set once before the sandbox is made.
	keptOut []LeftOut
	// ctx is the engine stream's context: cancelling it abandons the run
	// at once (crash, shutdown, unconfirmed cancel).
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// done is closed when the run finishes or pauses idle; a resumed idle
	// run gets a new one.
	done chan struct{}
	// idle: paused by the engine itself, with no engine call running.
	idle            bool
	run             *core.Run
	finished        bool
	cancelRequested bool
	// cancelled is done once a cancel is requested (markCancelled), so
	// waits (permission, tools) stop even when an engine ignores its
	// context.
	cancelled     context.Context
	markCancelled context.CancelFunc
	failCode      string
	failMsg       string
	engineH       pluginmgr.Handle
	sandboxH      pluginmgr.Handle
	toolpacks     map[string]int // toolpack name → calls in flight
	pending       *pendingPermission
	// filesReady: req.Files holds the run's base files (LoadFiles was
	// called), with those over the limits kept out.
	filesReady bool
	// queued are the run's events on their way to the log.
	queued *pendingEvents
	// held is a tool.started not yet queued (see holdToolStarted), and
	// heldTimer the timer that queues it if the call runs long.
	held      *NewEvent
	heldTimer *time.Timer
	streamed  bool
	output    []byte
	// timings are the run's timing_metrics_ms; engineCalled is when the
	// engine's Run was called (engine_start runs until its first answer).
	timings map[string]int64
	// warmKey and warm are the kept sandbox the run uses, when reuse is on.
	warmKey string
	warm    *warmSandbox
	// resultRevision and result are what the result sink made of the
	// run's files.
	resultRevision string
	result         json.RawMessage
	engineCalled   time.Time
	// openCalls are tool calls started and not yet finished (id → tool).
	openCalls map[string]string
	// engineCalls are the states of tool calls the engine runs itself
	// (see onEngineTool).
	engineCalls map[string]int
	// touched: the engine has sent an event or a callback for the run.
	touched bool
	// Token usage reported by the engine.
	inputTokens, outputTokens int64
	ref                       *sandboxRef
	// filesDirty: a tool ran since the engine last saved its state, so the
	// next save snapshots the sandbox with it.
	filesDirty bool
	// unpersisted is the run's end while the database has not taken it
	// (persistEnd).
	unpersisted *core.Run
	// noSavedState: the run was created by this Start and its engine has
	// not saved state since, so there is none to load (a read saved on
	// every fresh run).
	noSavedState bool
}

func (ar *activeRun) sandboxRefLocked() *sandboxRef { return ar.ref }

type pendingPermission struct {
	id       string
	decision chan engine.PermissionDecision
	// decided is set (under the run's mu) by the first Resume that answers:
	// a second decision racing it is refused rather than silently dropped.
	decided bool
}

func newActiveRun(run *core.Run, req StartRequest) *activeRun {
	ctx, cancel := context.WithCancel(context.Background())
	cancelled, markCancelled := context.WithCancel(context.Background())
	return &activeRun{
		req: req, run: run, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		cancelled: cancelled, markCancelled: markCancelled, toolpacks: map[string]int{}, openCalls: map[string]string{}, engineCalls: map[string]int{}, timings: map[string]int64{},
		queued: newPendingEvents(),
	}
}

// abort fails the run with code (first cause wins) and abandons the engine.
func (ar *activeRun) abort(code, msg string) {
	ar.mu.Lock()
	if ar.failCode == "" || code == core.CodeLeaseLost {
		// A lost lease overrides: nothing more may be written for the run.
		ar.failCode, ar.failMsg = code, msg
	}
	ar.mu.Unlock()
	ar.cancel()
}

// touch records that the engine did something for the run (an event or a
// callback), after which a crash can no longer be retried safely.
func (ar *activeRun) touch() {
	ar.mu.Lock()
	ar.touched = true
	ar.mu.Unlock()
}

// mark records a timing once (the first measurement of a phase wins).
func (ar *activeRun) mark(name string, d time.Duration) {
	ar.mu.Lock()
	if _, done := ar.timings[name]; !done {
		ar.timings[name] = d.Milliseconds()
	}
	ar.mu.Unlock()
}

// withTimings returns ctxJSON with timing_metrics_ms set to the run's
// timings (and result to what became of its files, once known), keeping
// every other key of the run context.
// runUsage is the model tokens a run has used, as its context shows them.
type runUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

func (ar *activeRun) withTimings(ctxJSON json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(ctxJSON) > 0 {
		_ = json.Unmarshal(ctxJSON, &m)
	}
	ar.mu.Lock()
	t, _ := json.Marshal(ar.timings)
	result := ar.result
	inTok, outTok := ar.inputTokens, ar.outputTokens
	ar.mu.Unlock()
	m["timing_metrics_ms"] = t
	if inTok > 0 || outTok > 0 {
		m["usage"], _ = json.Marshal(runUsage{InputTokens: inTok, OutputTokens: outTok})
	}
	if len(result) > 0 {
		m["result"] = result
	}
	out, _ := json.Marshal(m)
	return out
}

func (ar *activeRun) engineTouched() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.touched
}

func (ar *activeRun) failure() (string, string) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.failCode, ar.failMsg
}

func (o *Orchestrator) lookup(runID string) (*activeRun, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ar := o.active[runID]
	if ar == nil {
		return nil, core.Errf(core.CodeNotFound, "run_id", "run %s is not active", runID)
	}
	return ar, nil
}

// onCrash fails every active run that depends on the plugin that died.
func (o *Orchestrator) onCrash(ev pluginmgr.CrashEvent) {
	runs := o.activeRuns()
	for _, ar := range runs {
		ar.mu.Lock()
		var code string
		switch {
		case ev.Kind == "engine" && ar.engineH.Name == ev.Name && ar.engineH.Generation == ev.Generation && ar.touched:
			// A run the engine had not begun is retried on the relaunch
			// (runEngine); its broken stream is enough to notice.
			code = core.CodeEngineCrashed
		case ev.Kind == "sandbox" && ar.sandboxH.Name == ev.Name && ar.sandboxH.Generation == ev.Generation:
			code = core.CodeSandboxCrashed
		case ev.Kind == "toolpack" && ar.toolpacks[ev.Name] > 0:
			code = core.CodeToolpackCrashed
		}
		ar.mu.Unlock()
		if code != "" {
			ar.abort(code, fmt.Sprintf("%s plugin %q crashed while serving the run", ev.Kind, ev.Name))
		}
	}
}

// emit appends one event unless the run already has its terminal event.
func (o *Orchestrator) emit(ctx context.Context, ar *activeRun, typ core.EventType, payload any) error {
	return o.emitWith(ctx, ar, NewEvent{Type: typ}, payload)
}

func (o *Orchestrator) emitWith(ctx context.Context, ar *activeRun, ev NewEvent, payload any) error {
	return o.emitClosing(ctx, ar, ev, payload, "")
}

// emitToolStarted appends a tool call's tool.started and opens the call:
// the run's end closes it with a tool.failed unless its own closing event
// (emitClosing) comes first.
// input must be valid JSON (toolStartedPayload).
func (o *Orchestrator) emitToolStarted(ctx context.Context, ar *activeRun, callID, tool string, input json.RawMessage) error {
	return o.emitMarked(ctx, ar, NewEvent{Type: core.EventToolStarted, Payload: toolStartedPayload(callID, tool, input)}, nil, callMark{opens: callID, tool: tool})
}

// emitClosing appends an event; when closesCall is set the event finishes
// that open tool call, and is skipped if something (the run's end) already
// finished it: every tool.started gets exactly one closing event.
func (o *Orchestrator) emitClosing(ctx context.Context, ar *activeRun, ev NewEvent, payload any, closesCall string) error {
	return o.emitMarked(ctx, ar, ev, payload, callMark{closes: closesCall})
}

// callMark says which tool call an event opens (with its tool) or closes.
type callMark struct{ opens, tool, closes string }

// emitMarked appends an event that may open or close a tool call (mark).
// The call's id and tool come with the event rather than from its payload:
// reading them back out of tool.started's payload parsed the call's whole
// input again, on every call.
func (o *Orchestrator) emitMarked(ctx context.Context, ar *activeRun, ev NewEvent, payload any, mark callMark) error {
	if ev.Type == core.EventToolStarted && mark.opens == "" {
		return fmt.Errorf("tool.started must open its call (emitToolStarted)")
	}
	if ev.Payload == nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		ev.Payload = b
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.finished {
		return core.Errf(core.CodeRunFinished, "", "run %s has finished; %s dropped", ar.run.ID, ev.Type)
	}
	if mark.closes != "" {
		if _, open := ar.openCalls[mark.closes]; !open {
			return nil
		}
		delete(ar.openCalls, mark.closes)
	}
	if mark.opens != "" {
		ar.openCalls[mark.opens] = mark.tool
	}
	if ev.Type.Terminal() {
		ar.finished = true
	}
	// Appends hold the run's lock so that concurrent emitters (the event
	// stream and tool callbacks) get seqs in the order they decided, and no
	// event can slip in after the terminal one.
	return o.appendLocked(ctx, ar, ev)
}
