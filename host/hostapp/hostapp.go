// Package hostapp assembles the host from its parts — store, plugin manager,
// orchestrator — in the order they depend on each other, and takes them down
// in reverse: runs reach a safe point, then plugins stop, then the database
// closes.
package hostapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/api"
	"github.com/agenthost/agenthost/host/apply"
	"github.com/agenthost/agenthost/host/cluster"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/endpoints"
	"github.com/agenthost/agenthost/host/internal/heapfloor"
	"github.com/agenthost/agenthost/host/metrics"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/store"
	"github.com/hashicorp/go-hclog"
)

// Host is a running host.
type Host struct {
	Store   *store.Store
	Plugins *pluginmgr.Manager
	Orch    *orchestrator.Orchestrator
	// Member is this host's place among the hosts sharing its database.
	Member *cluster.Member
	// Handler serves the HTTP API.
	Handler http.Handler
	log     hclog.Logger
	// unlock releases the SQLite database's host lock (nil on PostgreSQL).
	unlock func()
	// releaseHeapFloor gives up this host's hold on the process's heap
	// floor (heapfloor.Hold).
	releaseHeapFloor func()
}

// Start opens the database (migrating it), repairs runs a previous process
// left unfinished, launches the plugins, builds the orchestrator and joins
// the hosts sharing the database. On SQLite this host is the only one: it
// locks the database for itself, and settles at once every run it finds
// active. On PostgreSQL it settles only runs whose owner lost its lease,
// and goes on taking over lost hosts' runs while it lives.
func Start(ctx context.Context, cfg config.Host, log hclog.Logger) (*Host, error) {
	if err := privateDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	policy, err := endpointPolicy(cfg)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	st.SetMaxConns(cfg.DatabaseMaxConns)
	st.SetOutageWindow(time.Duration(cfg.StoreOutageWindowMS) * time.Millisecond)
	h := &Host{Store: st, log: log, releaseHeapFloor: heapfloor.Hold(heapFloorBytes(cfg.GCHeapFloorMB))}
	fail := func(err error) (*Host, error) {
		h.releaseHeapFloor()
		if h.Plugins != nil {
			h.Plugins.Close()
		}
		st.Close()
		if h.unlock != nil {
			h.unlock()
		}
		return nil, err
	}
	if st.Dialect() == store.SQLite {
		if h.unlock, err = lockSQLite(st.SQLitePath()); err != nil {
			return fail(err)
		}
		if err := RecoverInterrupted(ctx, st, log); err != nil {
			return fail(err)
		}
	}
	if err := SeedModelsFromEnv(ctx, st, policy, log); err != nil {
		return fail(fmt.Errorf("seed models: %w", err))
	}
	configs, err := pluginmgr.LoadConfigDir(cfg.PluginConfigDir, cfg.PluginDir)
	if err != nil {
		return fail(err)
	}
	// The temporary folder is the host process's own under agenthost
	// serve (host/privtmp): the plugins' sockets go with it.
	mgr := pluginmgr.New(configs, pluginmgr.Options{PluginDir: cfg.PluginDir, DataDir: cfg.DataDir, Logger: log, SocketDir: os.TempDir()})
	met := metrics.New()
	orch := orchestrator.New(mgr, st, st, apply.NewWithLimits(st, cfg.FileLimits()), orchestrator.Options{Limits: cfg.FileLimits(), Logger: log, ToolTimeout: time.Duration(cfg.ToolTimeoutS) * time.Second,
		SandboxReuse: cfg.SandboxReuse == nil || *cfg.SandboxReuse, SandboxTTL: time.Duration(cfg.SandboxTTLS) * time.Second,
		WarmServersMax: warmServersMax(cfg.WarmServersMax), WarmServersMemory: warmServersMemory(cfg.WarmServersMemoryMB),
		OnWarmServerEvicted: met.ObserveWarmServerEvicted, OnSnapshot: met.ObserveSnapshot, AssistantTurn: api.AssistantTurn, OnFinished: func(_ context.Context, run *core.Run) {
			met.ObserveRun(run)
		}})
	met.WatchWarmPool(orch.WarmStats)
	mgr.SetCallbacks(orch, orch.Workspace)
	h.Plugins, h.Orch = mgr, orch
	if err := mgr.Start(ctx); err != nil {
		return fail(err)
	}
	if err := ensureBootstrapToken(ctx, st, os.Getenv("AGENTHOST_BOOTSTRAP_TOKEN")); err != nil {
		return fail(err)
	}
	hub := api.NewHub()
	st.OnAppend(hub.Publish)
	deps := api.Deps{
		Store: st, Runs: orch, Plugins: mgr, Hub: hub, Logger: log, Metrics: met.Handler(), Limits: cfg.FileLimits(),
		DefaultEngine: envOr("APPS_CODING_AGENT_DEFAULT_ENGINE", "mock"), DefaultSandbox: envOr("AGENTHOST_DEFAULT_SANDBOX", "local"),
		Endpoints: policy, CORSOrigins: cfg.CORSOrigins,
	}
	srv := api.NewServer(deps)
	member, err := cluster.Join(ctx, st, cluster.Options{
		HostID: cfg.HostID, LeaseTTL: time.Duration(cfg.LeaseTTLMS) * time.Millisecond, Logger: log,
		TakeOver: func(ctx context.Context, runs []*core.Run) { settleTakenOver(ctx, st, srv, runs, met, log) },
		Execute: func(ctx context.Context, cmd store.RunCommand) (int, []byte) {
			status, body := srv.ExecuteCommand(ctx, cmd)
			met.ObserveCommandServed(cmd.Kind, status)
			return status, body
		},
		Events: hub.Notify, Resync: hub.Resync,
		Lost: func() {
			met.ObserveLeaseLost()
			orch.Relinquish()
		},
	})
	if err != nil {
		return fail(err)
	}
	if st.Dialect() == store.Postgres {
		srv.SetCluster(member)
	}
	srv.SetHost(member.HostID(), member.LeaseKey())
	h.Member = member
	h.Handler = srv.Router()
	log.Info("host joined", "host_id", member.HostID(), "lease", member.LeaseKey(), "lease_ttl", member.LeaseTTL())
	return h, nil
}

// privateDataDir makes the data dir passable but not listable or readable
// by other users (0711): sandbox uids must reach their workspaces under
// it, and must not read anything else there.
func privateDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o066 != 0 {
		return os.Chmod(dir, mode&^0o066)
	}
	return nil
}

// endpointPolicy builds the key-to-endpoint policy from the config's
// provider blocks.
func endpointPolicy(cfg config.Host) (*endpoints.Policy, error) {
	bindings := make([]endpoints.Binding, len(cfg.Providers))
	for i, p := range cfg.Providers {
		bindings[i] = endpoints.Binding{Name: p.Name, KeyEnv: p.KeyEnv, BaseURLs: p.BaseURLs}
	}
	policy, err := endpoints.New(bindings)
	if err != nil {
		return nil, fmt.Errorf("host config: %w", err)
	}
	return policy, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// pauseInterrupted keeps a run with saved engine state resumable: paused,
// its sandbox recorded as gone, and a run.paused event unless its log
// already ends paused for a reason that still holds (its token budget).
func pauseInterrupted(ctx context.Context, st *store.Store, r *core.Run, last *core.Envelope) error {
	// The chat's assistant turn is written when a run ends; a paused run
	// has none yet, so there is nothing to repair there.
	reason := orchestrator.PauseInterrupted
	if r.Status == core.RunPaused && r.PauseReason == "token_budget" {
		reason = r.PauseReason
	}
	return pauseFor(ctx, st, r, last, reason, "the host stopped while the run was active; resume continues it from its last saved step")
}

// pauseFor records a run as paused for reason, its sandbox gone, with a
// run.paused event saying message unless its log already ends paused for
// that reason.
func pauseFor(ctx context.Context, st *store.Store, r *core.Run, last *core.Envelope, reason, message string) error {
	var lastReason struct {
		Reason string `json:"reason"`
	}
	if last != nil && last.Event == core.EventRunPaused {
		_ = json.Unmarshal(last.Payload, &lastReason)
	}
	if last == nil || last.Event != core.EventRunPaused || lastReason.Reason != reason {
		payload, _ := json.Marshal(map[string]any{"reason": reason, "message": message})
		if _, err := st.Append(ctx, r, core.EventInput{Type: core.EventRunPaused, Payload: payload}); err != nil {
			return err
		}
	}
	_, err := st.UpdateRun(ctx, r.ID, func(run *core.Run) error {
		if run.Status == core.RunQueued {
			// It ran far enough to save state, whatever its row says.
			run.Status = core.RunRunning
		}
		if err := core.CheckTransition(run.Status, core.RunPaused); err != nil && run.Status != core.RunPaused {
			return err
		}
		run.Status, run.PauseReason, run.UpdatedAt = core.RunPaused, reason, time.Now().UTC()
		if run.SandboxID != "" {
			run.SandboxStatus = "stopped"
		}
		return nil
	})
	return err
}

// DefaultTenant is the tenant the bootstrap token belongs to.
const DefaultTenant = "default"

// ensureBootstrapToken makes sure an admin token with the given secret
// exists for the default tenant (for scripts and the quick start).
func ensureBootstrapToken(ctx context.Context, st *store.Store, secret string) error {
	if secret == "" {
		return nil
	}
	if _, err := st.Authenticate(ctx, secret); err == nil {
		return nil
	}
	if err := st.EnsureTenant(ctx, DefaultTenant, "Default"); err != nil {
		return err
	}
	user, err := st.EnsureUser(ctx, DefaultTenant, "usr_admin", "admin@localhost")
	if err != nil {
		return err
	}
	_, err = st.CreateToken(ctx, DefaultTenant, user, "bootstrap", secret, []string{"admin", "apps.read", "apps.write", store.ScopePlatformAdmin})
	if errors.Is(err, store.ErrConflict) {
		// Another host starting at the same moment made it first.
		if _, aerr := st.Authenticate(ctx, secret); aerr == nil {
			return nil
		}
	}
	return err
}

// Close stops the host: runs first, then its lease (so that what it left
// paused goes to a live host at once), then plugins, then the database.
func (h *Host) Close(ctx context.Context) {
	h.Orch.Shutdown(ctx)
	if h.Member != nil {
		h.Member.Leave(ctx)
	}
	h.Plugins.Close()
	if err := h.Store.Close(); err != nil {
		h.log.Error("close database", "error", err)
	}
	if h.unlock != nil {
		h.unlock()
	}
	h.releaseHeapFloor()
}

// heapFloorBytes is the configured heap floor (config.Host.GCHeapFloorMB)
// in bytes; unset is the default.
func heapFloorBytes(mb *int) uint64 {
	if mb == nil {
		return config.DefaultGCHeapFloorMB << 20
	}
	return uint64(max(*mb, 0)) << 20
}

// CodeHostInterrupted fails runs a host was executing when it died.
const CodeHostInterrupted = "HOST_INTERRUPTED"

// RecoverInterrupted settles runs that a previous host process left
// unfinished (it crashed, was killed or shut down). A run whose log already
// holds its terminal event only gets its status repaired from that event. A
// run whose engine saved its state stays resumable: it is (or stays) paused,
// with reason "interrupted" unless it was paused for its token budget, and
// POST …/resume continues it from that state. Any other run gets run.failed
// with HOST_INTERRUPTED, so no client waits on it forever.
func RecoverInterrupted(ctx context.Context, st *store.Store, log hclog.Logger) error {
	runs, err := st.ListRunsByStatus(ctx, core.RunQueued, core.RunRunning, core.RunPaused)
	if err != nil {
		return fmt.Errorf("find interrupted runs: %w", err)
	}
	for _, r := range runs {
		last, err := st.LastEvent(ctx, r.ID, r.AppID)
		if err != nil {
			return err
		}
		status, code, msg := core.RunFailed, CodeHostInterrupted, "the host stopped while the run was active"
		if last == nil || !last.Event.Terminal() {
			state, err := st.LoadEngineState(ctx, r.ID)
			if err != nil {
				return err
			}
			if len(state) > 0 {
				if err := pauseInterrupted(ctx, st, r, last); err != nil {
					return fmt.Errorf("pause run %s: %w", r.ID, err)
				}
				log.Warn("a run the previous host left unfinished is paused; resume continues it from its saved state", "run", r.ID)
				continue
			}
		}
		if last != nil && last.Event.Terminal() {
			var p struct {
				Status  core.RunStatus `json:"status"`
				Code    string         `json:"error_code"`
				Message string         `json:"error_message"`
			}
			_ = json.Unmarshal(last.Payload, &p)
			status, code, msg = p.Status, p.Code, p.Message
			if !status.Terminal() {
				status = core.RunFailed
			}
		} else {
			payload, _ := json.Marshal(map[string]any{"status": status, "error_code": code, "error_message": msg})
			if _, err := st.Append(ctx, r, core.EventInput{Type: core.EventRunFailed, Payload: payload}); err != nil {
				return fmt.Errorf("settle run %s: %w", r.ID, err)
			}
		}
		now := time.Now().UTC()
		if _, err := st.UpdateRun(ctx, r.ID, func(run *core.Run) error {
			run.Status, run.ErrorCode, run.ErrorMessage, run.FinishedAt, run.UpdatedAt = status, code, msg, &now, now
			return nil
		}); err != nil {
			return fmt.Errorf("settle run %s: %w", r.ID, err)
		}
		log.Warn("settled a run the previous host left unfinished", "run", r.ID, "status", status, "code", code)
	}
	return nil
}

// warmServersMax is the orchestrator's form of the config's cap (nil: the
// default): there 0 means the default, and keeping none is negative.
func warmServersMax(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return -1
	}
	return *n
}

// warmServersMemory is the config's budget in bytes (nil: the default; 0:
// none).
func warmServersMemory(mb *int) int64 {
	if mb == nil {
		return config.DefaultWarmServersMemoryMB << 20
	}
	return int64(*mb) << 20
}
