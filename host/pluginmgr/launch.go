package pluginmgr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// exitPoll is how often a plugin's liveness is checked. go-plugin records a
// process exit but offers no notification; 50 ms keeps crash detection well
// under the time any run takes while costing nothing measurable.
const exitPoll = 50 * time.Millisecond

// instance is one configured plugin and its current launch.
type instance struct {
	cfg Config

	// Guarded by Manager.mu.
	state     State
	reason    string
	restarts  int
	info      plugin.Info
	tools     []plugin.ToolSpec
	gen       uint64
	startedAt time.Time
	exited    chan struct{}
	client    pluginClient
	pgid      int
	engine    *engine.Client
	sandbox   *sandbox.Client
	toolpack  *toolpack.Client
}

func (inst *instance) handle() Handle {
	return Handle{Name: inst.cfg.Name, Generation: inst.gen, Exited: inst.exited, Capabilities: inst.info.Capabilities}
}

// killGrace bounds a plugin's graceful stop. go-plugin asks the plugin to
// shut down over its connection and waits for the answer without a
// deadline: a plugin that hangs (stopped, wedged) would hold the host's
// shutdown, or a relaunch, forever.
const killGrace = 5 * time.Second

// kill ends the current process and everything left in its process group
// (plugins also put their own children in groups of their own and tie them
// to their lifetime). A plugin that has not stopped within killGrace is
// killed outright, which ends go-plugin's wait.
func (inst *instance) kill() {
	c, pgid := inst.client, inst.pgid
	if c == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		c.Kill()
		close(done)
	}()
	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		if pgid <= 0 {
			return // nothing to kill it with; go-plugin's wait goes on alone
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	if pgid > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// fileSHA256 hashes a binary for the pre-launch checksum check.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// env builds the plugin's environment: only the variables its config lists,
// plus the host's data dir, where to make its socket and its max_procs.
// Nothing else of the host's environment leaks.
func (m *Manager) env(c Config) []string {
	out := []string{"AGENTHOST_DATA_DIR=" + m.opts.DataDir}
	if m.opts.SocketDir != "" {
		out = append(out, goplugin.EnvUnixSocketDir+"="+m.opts.SocketDir)
	}
	if c.MaxProcs > 0 {
		out = append(out, "GOMAXPROCS="+strconv.Itoa(c.MaxProcs))
	}
	for _, name := range c.Env {
		if v, ok := os.LookupEnv(name); ok {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// launch starts one process for inst, checks it and configures it. On success
// the instance is healthy (or unhealthy, if it says so) and a watcher closes
// inst.exited when the process dies.
func (m *Manager) launch(ctx context.Context, inst *instance) error {
	c := inst.cfg
	path, err := resolveCommand(c, m.opts.PluginDir)
	if err != nil {
		return err
	}
	var secure *goplugin.SecureConfig
	if c.SHA256 != "" {
		// Checked here first for a message that names both digests; go-plugin
		// checks again right before exec (a fresh hash per config).
		got, err := fileSHA256(path)
		if err != nil {
			return err
		}
		if got != c.SHA256 {
			return fmt.Errorf("sha256 mismatch for %s: %s says %s, the binary is %s; refusing to launch it", path, c.File, c.SHA256, got)
		}
		sum, _ := hex.DecodeString(c.SHA256)
		secure = &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}

	cmd := pluginCmd(path, c.Args, m.env(c))
	client := goplugin.NewClient(clientConfig(cmd, sdk.HostPluginSet(), secure, m.opts.Logger.Named(c.Name), m.opts.StartTimeout))
	ok := false
	defer func() {
		if !ok {
			client.Kill()
		}
	}()
	rpc, err := client.Client()
	if err != nil {
		return fmt.Errorf("start %s: %w", path, err)
	}
	raw, err := rpc.Dispense(string(c.Kind))
	if err != nil {
		return fmt.Errorf("dispense %s: %w", c.Kind, err)
	}

	ctx, cancel := context.WithTimeout(ctx, m.opts.StartTimeout)
	defer cancel()
	next := &instance{}
	var info plugin.Info
	var health plugin.Health
	switch cl := raw.(type) {
	case *engine.Client:
		if info, err = cl.Info(ctx); err == nil {
			if err = checkInfo(c, info); err == nil {
				if err = cl.Configure(ctx, c.Config, m.opts.EngineServices); err == nil {
					health, err = cl.Health(ctx)
				}
			}
		}
		next.engine = cl
	case *sandbox.Client:
		if info, err = cl.Info(ctx); err == nil {
			if err = checkInfo(c, info); err == nil {
				if err = cl.Configure(ctx, c.Config); err == nil {
					// Without it tool calls still work, relayed by the host.
					if derr := cl.EnableDirect(ctx); derr != nil {
						m.log.Warn("sandbox plugin cannot serve its workspaces to toolpacks directly; the host relays their calls", "plugin", c.Name, "error", derr)
					}
					health, err = cl.Health(ctx)
				}
			}
		}
		next.sandbox = cl
	case *toolpack.Client:
		if info, err = cl.Info(ctx); err == nil {
			if err = checkInfo(c, info); err == nil {
				if err = cl.Configure(ctx, c.Config, m.opts.Workspaces); err == nil {
					if next.tools, err = cl.Tools(ctx); err == nil {
						health, err = cl.Health(ctx)
					}
				}
			}
		}
		next.toolpack = cl
	default:
		err = fmt.Errorf("dispensed an unexpected client type %T", raw)
	}
	if err != nil {
		return err
	}

	exited := make(chan struct{})
	m.mu.Lock()
	inst.gen++
	inst.info, inst.tools = info, next.tools
	inst.engine, inst.sandbox, inst.toolpack = next.engine, next.sandbox, next.toolpack
	inst.client, inst.exited, inst.startedAt = client, exited, time.Now()
	if cmd.Process != nil {
		// Setpgid made the plugin its own group leader: pgid == pid.
		inst.pgid = cmd.Process.Pid
	}
	if health.Healthy {
		inst.state, inst.reason = StateHealthy, ""
	} else {
		inst.state, inst.reason = StateUnhealthy, health.Reason
	}
	m.mu.Unlock()
	if c.Kind == plugin.KindToolpack {
		m.registerTools(inst)
	}
	ok = true
	m.log.Info("plugin loaded", "plugin", c.Name, "kind", c.Kind, "version", info.Version, "healthy", health.Healthy, "reason", health.Reason)
	if c.Kind == plugin.KindSandbox {
		warnIsolation(m.log, c.Name, info.Capabilities)
	}

	socket := unixSocket(client)
	go func() {
		t := time.NewTicker(exitPoll)
		defer t.Stop()
		for range t.C {
			if client.Exited() {
				removeSocket(socket)
				close(exited)
				// The host's side of the dead plugin's connection: its
				// broker still serves the callback services offered to
				// it, each on a listener of its own (a goroutine, a file
				// descriptor and a socket file) until the client is
				// closed. Kill closes it; the process is gone already, so
				// it does not wait.
				client.Kill()
				return
			}
		}
	}()
	return nil
}

// unixSocket is the path of the Unix socket a plugin listens on, or "".
func unixSocket(client *goplugin.Client) string {
	rc := client.ReattachConfig()
	if rc == nil || rc.Addr == nil || rc.Addr.Network() != "unix" {
		return ""
	}
	return rc.Addr.String()
}

// removeSocket removes the socket file of a plugin that has exited: one
// that ends normally removes it itself, one that was killed (a crash, or
// SIGKILL) cannot, and a host whose plugins crash and restart for weeks
// would otherwise collect their sockets.
func removeSocket(path string) {
	if path == "" {
		return
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
}

// pluginCmd is the command that runs a plugin binary: its environment is
// env alone, it leads its own process group so shutdown can sweep it, and
// it gets SIGKILL when the host dies so no plugin outlives a crashed host
// (Linux only: see launch_other.go).
func pluginCmd(path string, args, env []string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.SysProcAttr = withDeathSignal(&syscall.SysProcAttr{Setpgid: true})
	return cmd
}

// clientConfig is how the host talks go-plugin to every plugin: gRPC only,
// AutoMTLS, none of the host's environment, our message limits. The
// benchmark floor of one bare plugin hop launches its no-op plugin with it
// too, so the floor pays exactly what a real plugin call pays.
func clientConfig(cmd *exec.Cmd, plugins map[int]goplugin.PluginSet, secure *goplugin.SecureConfig, log hclog.Logger, startTimeout time.Duration) *goplugin.ClientConfig {
	return &goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: plugins,
		Cmd:              cmd,
		SecureConfig:     secure,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		Logger:           log,
		GRPCDialOptions:  plugin.GRPCDialOptions(),
		StartTimeout:     startTimeout,
	}
}

// checkInfo refuses a binary that is not what its config says it is.
func checkInfo(c Config, info plugin.Info) error {
	if info.Kind != c.Kind {
		return fmt.Errorf("binary reports kind %q, config says %q", info.Kind, c.Kind)
	}
	if info.APIVersion != plugin.APIVersion {
		return fmt.Errorf("binary speaks API v%d, this host speaks v%d", info.APIVersion, plugin.APIVersion)
	}
	if info.Name != c.Name {
		return fmt.Errorf("binary reports name %q, config block is plugin %q", info.Name, c.Name)
	}
	return nil
}

// warnIsolation says loudly, at every load, when a sandbox backend does not
// keep commands away from the host: the local backend is the default, and
// nothing else at run time would tell an operator that a command can read
// the host's secrets.
func warnIsolation(log hclog.Logger, name string, caps map[string]string) {
	switch iso := plugin.IsolationOf(caps); iso {
	case plugin.IsolationNamespaces:
	case plugin.IsolationNone:
		log.Warn("sandbox plugin does NOT isolate commands: they run as the host's user and can read its environment (API keys, tokens), its database and every sandbox, and signal the host; use it for development only, run it as root for per-sandbox uids, or use the bwrap backend",
			"plugin", name, "isolation", iso)
	case plugin.IsolationUID:
		log.Warn("sandbox plugin isolates commands by uid only: they cannot read the host's private files or signal it, but share its network (loopback services included), /tmp and process list; use the bwrap backend for untrusted code",
			"plugin", name, "isolation", iso)
	default:
		log.Warn("sandbox plugin does not say how it isolates commands", "plugin", name, "isolation", iso)
	}
}
