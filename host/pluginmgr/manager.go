package pluginmgr

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// State is where a plugin instance is.
type State string

// Plugin states.
const (
	// StateStarting: being launched (first time or after a crash).
	StateStarting State = "starting"
	// StateHealthy: loaded and answering.
	StateHealthy State = "healthy"
	// StateUnhealthy: loaded, but it says it cannot serve (Reason says why).
	StateUnhealthy State = "unhealthy"
	// StateCrashed: the process died; a relaunch is scheduled.
	StateCrashed State = "crashed"
	// StateFailed: refused or could not be loaded; an operator must act.
	StateFailed State = "failed"
	// StateDisabled: `enabled = false` in its config.
	StateDisabled State = "disabled"
	// StateStopped: the manager is shut down.
	StateStopped State = "stopped"
)

// Status is what `agenthost plugins check` and /readyz show.
type Status struct {
	Name     string
	Kind     plugin.Kind
	Version  string
	State    State
	Reason   string
	Restarts int
	Tools    []string
	// PID of the current process (0 when none).
	PID int
	// Capabilities the binary reported in its Info (nil before it started).
	Capabilities map[string]string
}

// Options configure a Manager.
type Options struct {
	// PluginDir is where bare command names are looked up.
	PluginDir string
	// DataDir is passed to plugins as AGENTHOST_DATA_DIR.
	DataDir string
	Logger  hclog.Logger
	// EngineServices answers engine callbacks; Workspaces resolves the
	// workspace ids lent to toolpacks. Both are set before Start.
	EngineServices engine.HostServices
	Workspaces     workspace.Resolver
	// MinBackoff and MaxBackoff bound the relaunch delay after a crash.
	MinBackoff, MaxBackoff time.Duration
	// StartTimeout bounds one launch (handshake, Info, Configure, Tools).
	StartTimeout time.Duration
	// SocketDir is where plugins make their Unix sockets (go-plugin's
	// PLUGIN_UNIX_SOCKET_DIR); empty means the system's temporary folder.
	// agenthost serve gives it the host process's own temporary folder
	// (host/privtmp), so what a crash leaves is removed with that folder.
	SocketDir string
}

// CrashEvent tells listeners that a plugin process died.
type CrashEvent struct {
	Name string
	Kind plugin.Kind
	// Generation is the launch that died.
	Generation uint64
}

// Manager owns every plugin process of the host.
type Manager struct {
	opts Options
	log  hclog.Logger

	mu        sync.RWMutex
	plugins   map[string]*instance
	order     []string
	tools     map[string]ToolRoute
	listeners []func(CrashEvent)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ToolRoute says which toolpack serves a tool.
type ToolRoute struct {
	Toolpack string
	// Spec is the tool as the toolpack describes it.
	Spec plugin.ToolSpec
	// Permission is the one in force: the operator's override from the
	// toolpack's config, else the toolpack's default.
	Permission plugin.Permission
	// Timeout bounds one call; 0 means the host's default.
	Timeout time.Duration
}

// New builds a Manager for the given plugin configs; nothing is launched
// until Start.
func New(configs []Config, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.StartTimeout == 0 {
		// A cold start of a Go plugin takes well under a second; 30 s leaves
		// room for a loaded CI machine without hanging start-up forever.
		opts.StartTimeout = 30 * time.Second
	}
	m := &Manager{opts: opts, log: opts.Logger.Named("plugins"), plugins: map[string]*instance{}, tools: map[string]ToolRoute{}}
	for _, c := range configs {
		m.plugins[c.Name] = &instance{cfg: c, state: StateStarting}
		m.order = append(m.order, c.Name)
	}
	sort.Strings(m.order)
	return m
}

// SetCallbacks sets what answers engine callbacks and resolves the
// workspaces lent to toolpacks. Call it before Start; it exists because the
// orchestrator that answers them needs the manager first.
func (m *Manager) SetCallbacks(services engine.HostServices, workspaces workspace.Resolver) {
	m.opts.EngineServices, m.opts.Workspaces = services, workspaces
}

// OnCrash registers a listener for plugin crashes. Listeners run on the
// supervisor goroutine and must not block.
func (m *Manager) OnCrash(fn func(CrashEvent)) {
	m.mu.Lock()
	m.listeners = append(m.listeners, fn)
	m.mu.Unlock()
}

// Start launches every enabled plugin (in parallel) and supervises them. A
// plugin that fails to load is marked failed with a reason; Start itself
// fails only when ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	m.ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, name := range m.order {
		inst := m.plugins[name]
		if !inst.cfg.Enabled {
			m.setState(inst, StateDisabled, "enabled = false in "+inst.cfg.File)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.launch(ctx, inst); err != nil {
				m.setState(inst, StateFailed, err.Error())
				m.log.Error("plugin refused", "plugin", inst.cfg.Name, "error", err)
				return
			}
			m.wg.Add(1)
			go m.supervise(inst)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// Close stops every plugin and its process group, and waits for the
// supervisors.
func (m *Manager) Close() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.mu.RLock()
	insts := make([]*instance, 0, len(m.plugins))
	for _, inst := range m.plugins {
		insts = append(insts, inst)
	}
	m.mu.RUnlock()
	var wg sync.WaitGroup
	for _, inst := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst.kill()
			m.setState(inst, StateStopped, "")
		}()
	}
	wg.Wait()
	m.wg.Wait()
}

// Statuses reports every configured plugin, in name order.
func (m *Manager) Statuses() []Status {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Status, 0, len(m.order))
	for _, name := range m.order {
		inst := m.plugins[name]
		st := Status{Name: name, Kind: inst.cfg.Kind, Version: inst.info.Version, State: inst.state, Reason: inst.reason, Restarts: inst.restarts, PID: inst.pgid, Capabilities: inst.info.Capabilities}
		for _, t := range inst.tools {
			st.Tools = append(st.Tools, t.Name)
		}
		out = append(out, st)
	}
	return out
}

// ErrUnavailable is returned (wrapped) for a plugin that is not loaded,
// crashed, unhealthy or unknown.
var ErrUnavailable = errors.New("plugin unavailable")

// ErrRelaunching is returned (wrapped, with ErrUnavailable) for a plugin
// that crashed and is being relaunched: worth a short wait, unlike a plugin
// that failed to load.
var ErrRelaunching = errors.New("plugin is being relaunched")

// Handle pins one launch of a plugin: Exited is closed when that process
// dies, so a caller can tell a crash from an ordinary failure.
type Handle struct {
	Name       string
	Generation uint64
	Exited     <-chan struct{}
	// Capabilities are those the running binary reported in its Info; the
	// map is shared and must not be modified.
	Capabilities map[string]string
}

// Crashed reports whether the process behind h died, waiting up to grace for
// the supervisor to notice (an RPC fails the instant the process dies, a
// little before its exit is observed).
func (h Handle) Crashed(grace time.Duration) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-h.Exited:
		return true
	case <-t.C:
		return false
	}
}

func (m *Manager) usable(name string, kind plugin.Kind) (*instance, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	inst, ok := m.plugins[name]
	if !ok || inst.cfg.Kind != kind {
		return nil, fmt.Errorf("%w: no %s plugin named %q is configured", ErrUnavailable, kind, name)
	}
	if inst.state != StateHealthy {
		reason := inst.reason
		if reason == "" {
			reason = string(inst.state)
		}
		if inst.state == StateCrashed || inst.state == StateStarting {
			return nil, fmt.Errorf("%w: %w: %s plugin %q is %s: %s", ErrUnavailable, ErrRelaunching, kind, name, inst.state, reason)
		}
		return nil, fmt.Errorf("%w: %s plugin %q is %s: %s", ErrUnavailable, kind, name, inst.state, reason)
	}
	return inst, nil
}

// Engine returns the client of a healthy engine plugin.
func (m *Manager) Engine(name string) (*engine.Client, Handle, error) {
	inst, err := m.usable(name, plugin.KindEngine)
	if err != nil {
		return nil, Handle{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return inst.engine, inst.handle(), nil
}

// Sandbox returns the client of a healthy sandbox plugin.
func (m *Manager) Sandbox(name string) (*sandbox.Client, Handle, error) {
	inst, err := m.usable(name, plugin.KindSandbox)
	if err != nil {
		return nil, Handle{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return inst.sandbox, inst.handle(), nil
}

// Tool finds the toolpack that serves a tool and returns its client.
func (m *Manager) Tool(tool string) (*toolpack.Client, ToolRoute, Handle, error) {
	m.mu.RLock()
	route, ok := m.tools[tool]
	m.mu.RUnlock()
	if !ok {
		return nil, ToolRoute{}, Handle{}, fmt.Errorf("%w: no loaded toolpack offers tool %q", ErrUnavailable, tool)
	}
	inst, err := m.usable(route.Toolpack, plugin.KindToolpack)
	if err != nil {
		return nil, route, Handle{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return inst.toolpack, route, inst.handle(), nil
}

// Tools lists every routed tool, by name.
func (m *Manager) Tools() []ToolRoute {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]ToolRoute, 0, len(m.tools))
	for _, r := range m.tools {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Name < out[j].Spec.Name })
	return out
}

func (m *Manager) setState(inst *instance, s State, reason string) {
	m.mu.Lock()
	inst.state, inst.reason = s, reason
	m.mu.Unlock()
}

// registerTools routes a toolpack's tools. A tool name another toolpack
// already serves stays with the first one (plugins are loaded and routed in
// name order only when they start together, so the refusal is logged loudly).
func (m *Manager) registerTools(inst *instance) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, r := range m.tools {
		if r.Toolpack == inst.cfg.Name {
			delete(m.tools, name)
		}
	}
	served := map[string]bool{}
	for _, t := range inst.tools {
		served[t.Name] = true
		if r, taken := m.tools[t.Name]; taken && r.Toolpack != inst.cfg.Name {
			m.log.Error("tool name conflict: keeping the first toolpack's tool", "tool", t.Name, "kept", r.Toolpack, "refused", inst.cfg.Name)
			continue
		}
		perm := t.DefaultPermission
		if p, ok := inst.cfg.Permissions[t.Name]; ok {
			perm = p
		}
		if perm == "" {
			perm = plugin.PermissionAllow
		}
		m.tools[t.Name] = ToolRoute{Toolpack: inst.cfg.Name, Spec: t, Permission: perm, Timeout: inst.cfg.ToolTimeout}
	}
	for name := range inst.cfg.Permissions {
		if !served[name] {
			// Likely a typo: the operator meant to guard some tool and guards
			// nothing. Loud, but not fatal: the tool may come in a later version.
			m.log.Error("permissions names a tool this toolpack does not serve", "toolpack", inst.cfg.Name, "tool", name, "file", inst.cfg.File)
		}
	}
}

// supervise waits for the instance's process to die and relaunches it with
// capped exponential backoff until the manager closes.
func (m *Manager) supervise(inst *instance) {
	defer m.wg.Done()
	backoff := m.opts.MinBackoff
	for {
		m.mu.RLock()
		exited, gen, started := inst.exited, inst.gen, inst.startedAt
		m.mu.RUnlock()
		select {
		case <-m.ctx.Done():
			return
		case <-exited:
		}
		if m.ctx.Err() != nil {
			return
		}
		m.setState(inst, StateCrashed, "plugin process exited")
		m.log.Error("plugin process died; relaunching", "plugin", inst.cfg.Name, "generation", gen)
		m.mu.RLock()
		listeners := append([]func(CrashEvent){}, m.listeners...)
		m.mu.RUnlock()
		for _, fn := range listeners {
			fn(CrashEvent{Name: inst.cfg.Name, Kind: inst.cfg.Kind, Generation: gen})
		}
		// A process that stayed up a while earns a fresh backoff.
		if time.Since(started) > m.opts.MaxBackoff {
			backoff = m.opts.MinBackoff
		}
		for {
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, m.opts.MaxBackoff)
			err := m.launch(m.ctx, inst)
			if err == nil {
				m.mu.Lock()
				inst.restarts++
				m.mu.Unlock()
				break
			}
			m.setState(inst, StateCrashed, "relaunch failed: "+err.Error())
			m.log.Error("plugin relaunch failed", "plugin", inst.cfg.Name, "error", err, "next_try_in", backoff)
		}
	}
}

// pluginClient abstracts what launch needs from go-plugin's client.
type pluginClient interface {
	Client() (goplugin.ClientProtocol, error)
	Exited() bool
	Kill()
}
