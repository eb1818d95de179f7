// Package opencode is the OpenCode engine: it drives a real `opencode serve`
// (opencode-ai, pinned to Version) that runs inside the run's sandbox as a
// sandbox service, one per sandbox, reused by later runs of a chat-scoped
// sandbox. It maps OpenCode's event stream onto agenthost's timeline, puts
// OpenCode's permission asks to the user, and fails closed when a cancel or
// an edit cannot be confirmed. See README.md.
package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
)

// Result codes of this engine.
const (
	// CodeEngineUnavailable: the opencode binary is missing (the host
	// normally refuses the run first, from Health).
	CodeEngineUnavailable = "CODING_AGENT_ENGINE_UNAVAILABLE"
	// CodeModelUnavailable: the run's model has no usable OpenCode binding.
	CodeModelUnavailable = "CODING_AGENT_MODEL_UNAVAILABLE"
	// CodeUnsupportedSandbox: the sandbox cannot run services.
	CodeUnsupportedSandbox = "CODING_AGENT_ENGINE_UNSUPPORTED_RUNTIME"
	// CodeSeedFailed: the custom tools could not be written.
	CodeSeedFailed = "OPENCODE_SEED_FAILED"
	// CodeStartFailed: opencode would not start or answer.
	CodeStartFailed = "OPENCODE_START_FAILED"
	// CodeServerExited: opencode died during the run.
	CodeServerExited = "OPENCODE_SERVER_EXITED"
	// CodeStreamLost: the event stream broke while opencode still ran.
	CodeStreamLost = "OPENCODE_STREAM_LOST"
	// CodeAPIError: a call to opencode's API failed.
	CodeAPIError = "OPENCODE_API_ERROR"
	// CodeCancelUnconfirmed: the aborted session did not go idle in time.
	CodeCancelUnconfirmed = "CODING_AGENT_CANCEL_UNCONFIRMED"
)

// Engine is the OpenCode engine plugin.
type Engine struct {
	mu      sync.Mutex
	cfg     Config
	servers map[string]*server
	http    *http.Client
	bridge  bridge
	// zodSrc is the zod build read from zodPath (nil when it is missing).
	zodSrc  []byte
	zodPath string
	log     hclog.Logger
}

var (
	_ engine.Engine        = (*Engine)(nil)
	_ plugin.Configurer    = (*Engine)(nil)
	_ plugin.HealthChecker = (*Engine)(nil)
)

// New returns the engine with its defaults (Configure may change them).
func New() *Engine {
	cfg, _ := parseConfig(nil)
	return &Engine{cfg: cfg, servers: map[string]*server{}, log: plugin.Logger("opencode"), http: &http.Client{Transport: &http.Transport{
		// Loopback only: never a proxy.
		Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second, ResponseHeaderTimeout: 30 * time.Second,
	}}}
}

// Info identifies the engine: it needs a model, and a sandbox that runs
// services reachable on loopback.
func (e *Engine) Info() plugin.Info {
	return plugin.Info{Name: "opencode", Kind: plugin.KindEngine, Version: "0.1.0+opencode-" + Version, APIVersion: plugin.APIVersion,
		Description: "OpenCode (opencode-ai " + Version + ") driven through its server, one per sandbox",
		Capabilities: map[string]string{
			plugin.CapabilityNeedsModel: "true",
			plugin.CapabilityRequires:   plugin.FeatureExec + "," + plugin.FeatureLoopback + "," + plugin.FeatureServices,
		}}
}

// Configure reads the config block; unknown keys are refused.
func (e *Engine) Configure(_ context.Context, raw json.RawMessage) error {
	c, err := parseConfig(raw)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.cfg = c
	e.mu.Unlock()
	return nil
}

// Health is unhealthy while the opencode binary is missing, so the host
// answers CODING_AGENT_ENGINE_UNAVAILABLE instead of starting a run.
func (e *Engine) Health(context.Context) plugin.Health {
	if p := e.config().binaryProblem(); p != "" {
		return plugin.Health{Reason: p}
	}
	return plugin.Health{Healthy: true}
}

// zod is the zod build the seeded tools import, read once per path; nil
// (tools without arguments) when the file is missing, which is logged
// once.
func (e *Engine) zod(cfg Config) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.zodPath != cfg.ZodPath {
		e.zodPath = cfg.ZodPath
		b, err := os.ReadFile(cfg.ZodPath)
		if err != nil {
			e.log.Warn("no zod build (make installs it): the contract tools take no arguments", "path", cfg.ZodPath, "error", err)
			b = nil
		}
		e.zodSrc = b
	}
	return e.zodSrc
}

func (e *Engine) config() Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// Run does one run on the sandbox's OpenCode server.
func (e *Engine) Run(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error) {
	cfg := e.config()
	if p := cfg.binaryProblem(); p != "" {
		return engine.Failed(CodeEngineUnavailable, p), nil
	}
	ws := host.Workspace()
	svc, ok := ws.(workspace.Services) // false for a nil workspace too
	if !ok {
		return engine.Failed(CodeUnsupportedSandbox, "the run has no sandbox that can run opencode"), nil
	}
	providerID, modelID, provider, err := modelConfig(req.Model)
	if err != nil {
		return engine.Failed(CodeModelUnavailable, err.Error()), nil
	}
	config, err := serverConfig(cfg, providerID, modelID, provider)
	if err != nil {
		return engine.Failed(CodeStartFailed, err.Error()), nil
	}
	bridged, err := seed(ctx, ws, req.Tools, e.zod(cfg), cfg.BridgeTools)
	if err != nil {
		if ctx.Err() != nil {
			return engine.Cancelled(), nil
		}
		return engine.Failed(CodeSeedFailed, "could not seed the sandbox for opencode: "+err.Error()), nil
	}
	if err := e.bridge.start(); err != nil {
		return engine.Failed(CodeStartFailed, "tool bridge: "+err.Error()), nil
	}
	connect, err := connectList(cfg, req.Model, providerID, e.bridge.url)
	if err != nil {
		return engine.Failed(CodeModelUnavailable, err.Error()), nil
	}
	srv, err := e.ensureServer(ctx, cfg, svc, config, e.bridge.env(), connect)
	if err != nil {
		if ctx.Err() != nil {
			return engine.Cancelled(), nil
		}
		return startFailure(err), nil
	}
	// The first event: the host's engine_start timing ends here.
	if err := host.Emit(engine.Status("engine_ready", "opencode "+Version+" is ready")); err != nil {
		return engine.Result{}, err
	}
	r := &run{e: e, cfg: cfg, req: req, host: host, svc: svc, srv: srv, bridged: bridged, providerID: providerID, modelID: modelID}
	return r.do(ctx)
}

// run is one Run's state.
type run struct {
	e                   *Engine
	cfg                 Config
	req                 engine.RunRequest
	host                engine.Host
	svc                 workspace.Services
	srv                 *server
	bridged             map[string]bool
	providerID, modelID string
	session             string
	events              <-chan event
	streamErr           *error
	m                   *mapper
}

func (r *run) do(ctx context.Context) (engine.Result, error) {
	c := r.srv.client
	fresh, err := r.openSession(ctx)
	if err != nil {
		return r.apiFailure(ctx, "open a session", err), nil
	}
	// The stream outlives a cancel: after an abort the run waits for the
	// session to go idle on it.
	streamCtx, stopStream := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStream()
	r.events, r.streamErr, err = c.subscribe(streamCtx)
	if err != nil {
		return r.apiFailure(ctx, "subscribe to events", err), nil
	}
	if err := r.awaitConnected(ctx); err != nil {
		return r.apiFailure(ctx, "subscribe to events", err), nil
	}
	r.m = newMapper(r.session, r.bridged)
	defer r.e.bridge.attach(ctx, r.session, r.host)()

	system, history := renderHistory(r.req.History)
	text := r.req.Prompt
	if fresh && history != "" {
		text = history + "\n\n---\n\n" + r.req.Prompt
	}
	body := promptBody{
		Parts: []promptPart{{Type: "text", Text: text}}, System: system,
		Model: &promptModel{ProviderID: r.providerID, ModelID: r.modelID},
		// The question tool would wait for an answer nobody can give.
		Tools: map[string]bool{"question": false},
	}
	r.m.since = time.Now().UnixMilli()
	if err := c.promptAsync(ctx, r.session, body); err != nil {
		return r.apiFailure(ctx, "send the prompt", err), nil
	}

	// OpenCode retries a failing model forever: the run gives up after
	// retry_max retries, or retry_deadline_s into a streak of retries.
	var streak retryStreak
	defer streak.stop()
	for !r.m.idle {
		select {
		case <-ctx.Done():
			return r.cancel(), nil
		case <-streak.expired():
			return r.retriesSpent(fmt.Sprintf("OpenCode was still retrying %s after the first retry (retry_deadline_s)", r.cfg.retryDeadline())), nil
		case ev, ok := <-r.events:
			if !ok {
				return r.streamEnded(), nil
			}
			evs, ask := r.m.feed(ev)
			if err := r.emit(evs); err != nil {
				return engine.Result{}, err
			}
			if r.m.retries > r.cfg.RetryMax {
				return r.retriesSpent(fmt.Sprintf("OpenCode used up the %s retry_max allows", plural(r.cfg.RetryMax, "retry", "retries"))), nil
			}
			streak.track(r.m.retrying, r.cfg.retryDeadline())
			if ask != nil {
				if err := r.permission(ctx, ask); err != nil {
					if ctx.Err() != nil {
						return r.cancel(), nil
					}
					return r.apiFailure(ctx, "answer a permission", err), nil
				}
			}
		}
	}
	return r.finish(), nil
}

// openSession finds the chat's OpenCode session on this server, or makes
// one (fresh: it has none of the chat's history).
func (r *run) openSession(ctx context.Context) (fresh bool, err error) {
	chat := r.req.ChatSessionID
	if chat == "" {
		chat = "run-" + r.req.RunID
	}
	r.e.mu.Lock()
	id := r.srv.sessions[chat]
	r.e.mu.Unlock()
	if id != "" {
		ok, err := r.srv.client.sessionExists(ctx, id)
		if err != nil {
			return false, err
		}
		if ok {
			r.session = id
			return false, nil
		}
	}
	id, err = r.srv.client.createSession(ctx, "agenthost "+chat)
	if err != nil {
		return false, err
	}
	r.e.mu.Lock()
	r.srv.sessions[chat] = id
	r.e.mu.Unlock()
	r.session = id
	return true, nil
}

// awaitConnected waits for server.connected: events before it are not
// delivered, so the prompt must not go first.
func (r *run) awaitConnected(ctx context.Context) error {
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-r.events:
			if !ok {
				return fmt.Errorf("the event stream closed: %v", *r.streamErr)
			}
			if ev.Type == "server.connected" {
				return nil
			}
		case <-timer.C:
			return errors.New("no server.connected within 15s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *run) emit(evs []engine.Event) error {
	for _, ev := range evs {
		if err := r.host.Emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// permission puts OpenCode's ask to the user (the run pauses until the
// resume brings a decision) and replies once or reject.
func (r *run) permission(ctx context.Context, ask *permissionProps) error {
	details, _ := json.Marshal(map[string]any{"permission": ask.Permission, "patterns": ask.Patterns, "metadata": orNull(ask.Metadata), "tool_call_id": ask.Tool.CallID})
	title := "Allow " + ask.Permission + "?"
	if len(ask.Patterns) > 0 {
		title = fmt.Sprintf("Allow %s: %s?", ask.Permission, capText(ask.Patterns[0], 200))
	}
	d, err := r.host.RequestPermission(ctx, engine.PermissionRequest{PermissionID: ask.ID, Action: ask.Permission, Title: title, Details: details})
	if err != nil {
		return err
	}
	reply := "reject"
	if d.Allow {
		reply = "once"
	}
	return r.srv.client.replyPermission(ctx, ask.ID, reply)
}

// cancel aborts the session and confirms the cancel only when OpenCode
// goes idle in time (fail-closed).
func (r *run) cancel() engine.Result {
	if why := r.abort(); why != "" {
		return engine.Failed(CodeCancelUnconfirmed, why)
	}
	return engine.Cancelled()
}

// abort aborts the session and waits for it to go idle; it returns why
// that was not confirmed, or "".
func (r *run) abort() string {
	timeout := r.cfg.cancelTimeout()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if err := r.srv.client.abort(context.Background(), r.session, timeout); err != nil {
		return "opencode did not take the abort: " + err.Error()
	}
	for !r.m.idle {
		select {
		case ev, ok := <-r.events:
			if !ok {
				return "the event stream ended before opencode confirmed the abort"
			}
			evs, _ := r.m.feed(ev)
			// An aborted run still shows what happened until it stopped.
			_ = r.emit(evs)
		case <-deadline.C:
			return fmt.Sprintf("opencode did not go idle within %s of the abort", timeout)
		}
	}
	return ""
}

// streamEnded names why the event stream broke: opencode died (the next
// run starts a new one), or the connection alone was lost.
func (r *run) streamEnded() engine.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		info, err := r.svc.ServiceStatus(ctx, serviceName)
		if err == nil && !info.Running {
			r.e.forget(r.srv)
			res := engine.Failed(CodeServerExited, fmt.Sprintf("opencode exited during the run (exit %d %s); the next run starts a new server", info.ExitCode, info.Signal))
			res.Diagnostics, _ = json.Marshal(map[string]any{"exit_code": info.ExitCode, "signal": info.Signal, "output_tail": tailText(info.OutputTail)})
			return res
		}
		select {
		case <-ctx.Done():
			return engine.Failed(CodeStreamLost, fmt.Sprintf("the opencode event stream ended: %v", *r.streamErr))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// apiFailure fails the run on a broken API call, naming a dead server as
// such.
func (r *run) apiFailure(ctx context.Context, what string, err error) engine.Result {
	if ctx.Err() != nil {
		return engine.Cancelled()
	}
	if info, serr := r.svc.ServiceStatus(context.WithoutCancel(ctx), serviceName); serr == nil && !info.Running {
		r.e.forget(r.srv)
		return engine.Failed(CodeServerExited, fmt.Sprintf("opencode exited (exit %d %s) while the engine tried to %s", info.ExitCode, info.Signal, what))
	}
	return engine.Failed(CodeAPIError, fmt.Sprintf("could not %s: %v", what, err))
}

// finish turns an idle session into the run's result.
func (r *run) finish() engine.Result {
	if se := r.m.sessErr; se != nil {
		diag, _ := json.Marshal(map[string]any{"opencode_error": se.Name, "status": se.Status, "message": se.Message})
		res := engine.Failed(CodeSessionError, fmt.Sprintf("opencode failed: %s: %s", se.Name, se.Message))
		if se.Name == "APIError" {
			res = engine.Failed(CodeModelProviderError, fmt.Sprintf("the model provider answered HTTP %d: %s", se.Status, se.Message))
		}
		res.Diagnostics = diag
		return res
	}
	if *r.cfg.FailOnUnrecoveredEdit && len(r.m.editFails) > 0 {
		f := r.m.editFails[0]
		diag, _ := json.Marshal(map[string]any{"unrecovered_edit_failures": r.m.editFails, "setting": "APPS_CODING_AGENT_OPENCODE_FAIL_ON_UNRECOVERED_APPLY_PATCH"})
		res := engine.Failed(CodeUnrecoveredEdit, fmt.Sprintf("%d edit(s) failed and no later edit recovered them; first: %s on %q: %s", len(r.m.editFails), f.Tool, f.File, capText(f.Message, 500)))
		res.Diagnostics = diag
		return res
	}
	return engine.Completed(r.m.output())
}
