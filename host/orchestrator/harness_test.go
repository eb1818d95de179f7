package orchestrator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/orchestrator/orchestratortest"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/require"
)

// binDir holds the real plugin binaries, built once for the package.
var binDir string

func TestMain(m *testing.M) { testenv.Main(m, &binDir, testenv.DefaultPluginPackages()...) }

// host is a real plugin manager and orchestrator over in-memory storage
// (or a real store: storeHost in bench_test.go).
type host struct {
	mgr   *pluginmgr.Manager
	orch  *orchestrator.Orchestrator
	store *orchestratortest.Memory // nil over a real store
	// app is what start runs on: the app's ids and files.
	app orchestrator.StartRequest
	// sockets is the folder the plugins make their Unix sockets in.
	sockets string
}

// defaultConfigs are the plugins most tests run; the local sandbox's root
// is where its sandbox uids can reach it (the plugin runs as root in CI).
func defaultConfigs(t testing.TB) []pluginmgr.Config {
	return []pluginmgr.Config{
		{Name: "mock", Kind: plugin.KindEngine, Command: filepath.Join(binDir, "agenthost-engine-mock"), Enabled: true, Config: []byte("{}"), MaxProcs: testenv.DefaultMaxProcs["mock"]},
		{Name: "local", Kind: plugin.KindSandbox, Command: filepath.Join(binDir, "agenthost-sandbox-local"), Enabled: true, Config: testenv.LocalSandboxConfig(t), MaxProcs: testenv.DefaultMaxProcs["local"]},
		// The spine's tests write through the legacy whole-file tool, on
		// here explicitly (it is off by default); the patch tools have
		// their own end-to-end test.
		{Name: "patch", Kind: plugin.KindToolpack, Command: filepath.Join(binDir, "agenthost-toolpack-patch"), Enabled: true, Config: []byte(`{"legacy_write_file": true}`), MaxProcs: testenv.DefaultMaxProcs["patch"]},
	}
}

func newHost(t testing.TB, configs []pluginmgr.Config, opts orchestrator.Options) *host {
	t.Helper()
	store := orchestratortest.NewMemory()
	h := launchHost(t, configs, opts, store, store, store)
	h.store = store
	return h
}

// launchHost starts the plugins and an orchestrator over the given ports.
func launchHost(t testing.TB, configs []pluginmgr.Config, opts orchestrator.Options, runs orchestrator.RunStore, events orchestrator.EventSink, results orchestrator.ResultSink) *host {
	t.Helper()
	return launchHostRelaying(t, configs, opts, runs, events, results, nil)
}

// launchHostRelaying is launchHost whose toolpacks' workspace service
// resolves through relay(the orchestrator's resolver) when relay is set.
func launchHostRelaying(t testing.TB, configs []pluginmgr.Config, opts orchestrator.Options, runs orchestrator.RunStore, events orchestrator.EventSink, results orchestrator.ResultSink,
	relay func(workspace.Resolver) workspace.Resolver) *host {
	t.Helper()
	logger := testenv.Logger(t)
	// Short, unlike t.TempDir's: a Unix socket's path has at most 107 bytes.
	sockets, err := os.MkdirTemp("", "ahsock-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockets) }) // after mgr.Close: cleanups run last-in first-out
	mgr := pluginmgr.New(configs, pluginmgr.Options{
		PluginDir: binDir, DataDir: t.TempDir(), Logger: logger,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, SocketDir: sockets,
	})
	opts.Logger = logger
	orch := orchestrator.New(mgr, runs, events, results, opts)
	var resolve workspace.Resolver = orch.Workspace
	if relay != nil {
		resolve = relay(resolve)
	}
	mgr.SetCallbacks(orch, resolve)
	require.NoError(t, mgr.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		orch.Shutdown(ctx)
		mgr.Close()
	})
	return &host{mgr: mgr, orch: orch, app: orchestrator.StartRequest{AppID: "app_test", Files: demoFiles()}, sockets: sockets}
}

// demoFiles are the two files of the app runs start on.
func demoFiles() []sandbox.File {
	return []sandbox.File{{Path: "README.md", Data: []byte("# demo\n")}, {Path: "src/app.ts", Data: []byte("export const x = 1\n")}}
}

func (h *host) start(t testing.TB, prompt string) *core.Run {
	t.Helper()
	req := h.app
	req.Prompt, req.Engine, req.Sandbox = prompt, "mock", "local"
	run, err := h.orch.Start(context.Background(), req)
	require.NoError(t, err)
	return run
}

func (h *host) wait(t testing.TB, runID string) *core.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := h.orch.Wait(ctx, runID)
	require.NoError(t, err, "run %s did not finish", runID)
	return r
}

func (h *host) waitEvent(t testing.TB, runID string, typ core.EventType) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, h.store.WaitFor(ctx, runID, func(evs []core.Envelope) bool {
		for _, e := range evs {
			if e.Event == typ {
				return true
			}
		}
		return false
	}), "no %s event in run %s", typ, runID)
}

// waitHealthy waits for a plugin to be (re)launched and healthy.
func (h *host) waitHealthy(t testing.TB, name string) pluginmgr.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range h.mgr.Statuses() {
			if s.Name == name && s.State == pluginmgr.StateHealthy {
				return s
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("plugin %s did not become healthy: %+v", name, h.mgr.Statuses())
	return pluginmgr.Status{}
}

// waitRelaunched waits for a plugin that ran as process pid to be healthy
// again as another process.
func (h *host) waitRelaunched(t testing.TB, name string, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range h.mgr.Statuses() {
			if s.Name == name && s.State == pluginmgr.StateHealthy && s.PID != 0 && s.PID != pid {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the manager's view; it has no notification
	}
	t.Fatalf("plugin %s was not relaunched: %+v", name, h.mgr.Statuses())
}

func types(evs []core.Envelope) []core.EventType {
	out := make([]core.EventType, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

// requireWellFormed checks the invariants every finished run's log holds:
// seqs 1..n with no gap, exactly one terminal event and it is last, every
// tool.started closed by exactly one tool.completed/failed.
func requireWellFormed(t testing.TB, evs []core.Envelope) {
	t.Helper()
	require.NotEmpty(t, evs)
	open := map[string]bool{}
	terminals := 0
	for i, e := range evs {
		require.Equal(t, int64(i+1), e.Seq, "seq gap at index %d", i)
		if e.Event.Terminal() {
			terminals++
		}
		var p struct {
			ID string `json:"tool_call_id"`
		}
		_ = json.Unmarshal(e.Payload, &p)
		switch e.Event {
		case core.EventToolStarted:
			require.False(t, open[p.ID], "tool call %s started twice", p.ID)
			open[p.ID] = true
		case core.EventToolCompleted, core.EventToolFailed:
			require.True(t, open[p.ID], "tool call %s finished without starting (or twice)", p.ID)
			delete(open, p.ID)
		}
	}
	require.Equal(t, 1, terminals, "exactly one terminal event: %v", types(evs))
	require.True(t, evs[len(evs)-1].Event.Terminal(), "the terminal event is last: %v", types(evs))
	require.Empty(t, open, "tool calls never finished")
}
