//go:build linux

// Package bwrap is the isolating sandbox backend: working copies in local
// folders, like the local backend, but every command runs under bubblewrap
// in new user, pid, ipc, uts, cgroup and mount namespaces (and a network
// namespace unless the policy is host), as an unprivileged uid with no
// capabilities, seeing only the system folders read-only, a small /etc, its
// workspace and a private /tmp. See README.md for what it protects against.
package bwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
	"github.com/hashicorp/go-hclog"
)

// Network policies.
const (
	// NetworkNone: each command has a network namespace of its own with
	// only a loopback interface. Nothing outside the command is reachable.
	NetworkNone = "none"
	// NetworkLoopback: like none for the commands, and ExposePort forwards
	// a port of the plugin's 127.0.0.1 to the loopback of the sandbox's
	// running command, so the host and engines reach a server started
	// through Exec while the command still cannot reach anything else.
	NetworkLoopback = "loopback"
	// NetworkHost: commands share the host's network: they reach loopback
	// services and the network as the host does.
	NetworkHost = "host"
)

// Defaults of the config keys local has not got. Each bounds one command
// (its whole process tree, since rlimits are inherited).
const (
	// DefaultUID/GID: the host uid commands (and bwrap itself) run as when
	// the plugin runs as root. Pick one no other account uses: RLIMIT_NPROC
	// counts per uid, and files of this uid are the sandbox's.
	DefaultUID = 60100
	DefaultGID = 60100
	// DefaultMemoryBytes is RLIMIT_AS per process: 4 GiB of address space,
	// enough for node or a Go build, not for eating the host.
	DefaultMemoryBytes = 4 << 30
	// DefaultMaxProcesses is RLIMIT_NPROC: processes (threads) of the
	// sandbox uid at once, across the plugin's sandboxes.
	DefaultMaxProcesses = 512
	// DefaultTmpBytes caps the private /tmp, which lives in memory.
	DefaultTmpBytes = 256 << 20
	// DefaultMaxFileBytes is the largest file create, write and read take.
	DefaultMaxFileBytes = 64 << 20
	// DefaultBwrapPath is where Debian's bubblewrap package puts bwrap.
	DefaultBwrapPath = "/usr/bin/bwrap"
)

// Config is the plugin's `config { ... }` block. Zero values mean the
// defaults; unknown keys are refused.
type Config struct {
	// Root holds one folder per sandbox; default
	// $AGENTHOST_DATA_DIR/sandboxes/bwrap, or ./data/sandboxes/bwrap. Every
	// parent must be searchable (x) by UID: bwrap runs as that uid.
	Root string `json:"root"`
	// ExecTimeoutS is the wall-clock cap per command (default 120); a
	// request may ask for less, not more.
	ExecTimeoutS int `json:"exec_timeout_s"`
	// OutputLimitBytes caps stdout+stderr per command (default 1 MiB).
	OutputLimitBytes int64 `json:"output_limit_bytes"`
	// MaxFileBytes caps one file at create, write and read (default 64 MiB).
	MaxFileBytes int64 `json:"max_file_bytes"`
	// ExecCPUS is RLIMIT_CPU of every process of a command (default 600).
	ExecCPUS int64 `json:"exec_cpu_s"`
	// ExecFileSizeBytes is RLIMIT_FSIZE (default 1 GiB).
	ExecFileSizeBytes int64 `json:"exec_file_size_bytes"`
	// Network is none, loopback or host. The host reads a plugin's
	// features before its config, so the policy is set by the -network
	// flag (args); this key may repeat it and must then agree.
	Network string `json:"network"`
	// MemoryBytes is RLIMIT_AS of every process (DefaultMemoryBytes).
	MemoryBytes int64 `json:"memory_bytes"`
	// ServiceMemoryBytes is RLIMIT_DATA of every process of a service
	// (DefaultServiceMemoryBytes): services get no RLIMIT_AS, which a Bun
	// server's address-space reservations exceed at once.
	ServiceMemoryBytes int64 `json:"service_memory_bytes"`
	// MaxProcesses is RLIMIT_NPROC of the sandbox uid (DefaultMaxProcesses).
	MaxProcesses int64 `json:"max_processes"`
	// TmpBytes is the size of the private /tmp (DefaultTmpBytes).
	TmpBytes int64 `json:"tmp_bytes"`
	// BwrapPath is bubblewrap's absolute path (DefaultBwrapPath).
	BwrapPath string `json:"bwrap_path"`
	// UID and GID are used only when the plugin runs as root; otherwise
	// commands run as the plugin's own uid and these must be unset.
	UID int `json:"uid"`
	GID int `json:"gid"`
}

func withDefaults(c Config, network string) (Config, error) {
	if c.Root == "" {
		data := os.Getenv("AGENTHOST_DATA_DIR")
		if data == "" {
			data = "data"
		}
		c.Root = filepath.Join(data, "sandboxes", "bwrap")
	}
	abs, err := filepath.Abs(c.Root)
	if err != nil {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "root", "sandbox root %q: %v", c.Root, err)
	}
	c.Root = abs
	switch {
	case c.Network == "":
		c.Network = network
	case c.Network != network:
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "network",
			"network = %q, but the plugin was started with -network=%s (the host reads features before the config block): set args = [\"-network=%s\"] in the plugin's HCL file",
			c.Network, network, c.Network)
	}
	defaults := []struct {
		v   *int64
		def int64
	}{
		{&c.MaxFileBytes, DefaultMaxFileBytes}, {&c.MemoryBytes, DefaultMemoryBytes}, {&c.ServiceMemoryBytes, DefaultServiceMemoryBytes},
		{&c.MaxProcesses, DefaultMaxProcesses}, {&c.TmpBytes, DefaultTmpBytes},
		{&c.ExecCPUS, dirfs.DefaultCPUSeconds}, {&c.ExecFileSizeBytes, dirfs.DefaultFileSizeLimit},
	}
	for _, d := range defaults {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.BwrapPath == "" {
		c.BwrapPath = DefaultBwrapPath
	}
	if os.Geteuid() == 0 {
		if c.UID == 0 {
			c.UID = DefaultUID
		}
		if c.GID == 0 {
			c.GID = DefaultGID
		}
	} else if c.UID != 0 || c.GID != 0 {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "uid", "uid and gid need the plugin to run as root; it runs as uid %d and its commands run as that uid", os.Geteuid())
	}
	return c, nil
}

func checkConfig(c Config) error {
	for field, v := range map[string]int64{
		"exec_timeout_s": int64(c.ExecTimeoutS), "output_limit_bytes": c.OutputLimitBytes,
		"max_file_bytes": c.MaxFileBytes, "exec_cpu_s": c.ExecCPUS, "exec_file_size_bytes": c.ExecFileSizeBytes,
		"memory_bytes": c.MemoryBytes, "service_memory_bytes": c.ServiceMemoryBytes, "max_processes": c.MaxProcesses, "tmp_bytes": c.TmpBytes,
		"uid": int64(c.UID), "gid": int64(c.GID),
	} {
		if v < 0 {
			return plugin.Errorf(plugin.CodeInvalidArgument, field, "%s must not be negative", field)
		}
	}
	switch c.Network {
	case "", NetworkNone, NetworkLoopback, NetworkHost:
	default:
		return plugin.Errorf(plugin.CodeInvalidArgument, "network", "network must be none, loopback or host, not %q", c.Network)
	}
	if c.BwrapPath != "" && !filepath.IsAbs(c.BwrapPath) {
		return plugin.Errorf(plugin.CodeInvalidArgument, "bwrap_path", "bwrap_path must be absolute: the plugin's PATH is the host's choice")
	}
	return nil
}

// Options are fixed when the plugin starts (flags), because the host reads
// Info before it sends the config block.
type Options struct {
	// Name is the plugin's name; the host requires it to equal the config
	// block's label. Default "bwrap"; "local" lets this backend take the
	// default sandbox's place (see README.md).
	Name string
	// Network is the policy (NetworkNone when empty).
	Network string
	// Helper is the executable run with HelperArg before bwrap; default
	// this process's own executable.
	Helper string
}

// Provider implements sandbox.Provider with bubblewrap. One process serves
// many sandboxes; every method is safe for concurrent use.
type Provider struct {
	log  hclog.Logger
	opts Options

	mu    sync.Mutex
	cfg   Config
	boxes map[string]*box
	busy  map[string]bool
	// probe is the outcome of the last sandbox start test (nil: it worked).
	probe error
}

// New returns a provider for opts that logs hclog JSON on stderr.
func New(opts Options) (*Provider, error) {
	return NewWithLogger(opts, plugin.Logger(nameOr(opts.Name)))
}

func nameOr(n string) string {
	if n == "" {
		return "bwrap"
	}
	return n
}

// NewWithLogger is New with a logger of the caller's.
func NewWithLogger(opts Options, log hclog.Logger) (*Provider, error) {
	opts.Name = nameOr(opts.Name)
	if opts.Network == "" {
		opts.Network = NetworkNone
	}
	if err := checkConfig(Config{Network: opts.Network}); err != nil {
		return nil, err
	}
	if opts.Helper == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for the exec helper: %w", err)
		}
		opts.Helper = self
	}
	p := &Provider{log: log, opts: opts, boxes: map[string]*box{}, busy: map[string]bool{}}
	cfg, err := withDefaults(Config{}, opts.Network)
	if err != nil {
		return nil, err
	}
	p.cfg = cfg
	p.probe = errNotConfigured
	return p, nil
}

var errNotConfigured = fmt.Errorf("not configured yet")

// Info identifies the plugin and the features its network policy gives.
func (p *Provider) Info() plugin.Info {
	features := []string{plugin.FeatureExec}
	switch p.opts.Network {
	case NetworkLoopback:
		features = append(features, plugin.FeatureLoopback, plugin.FeatureServices)
	case NetworkHost:
		features = append(features, plugin.FeatureLoopback, plugin.FeatureNetwork, plugin.FeatureServices)
	}
	return plugin.Info{
		Name: p.opts.Name, Kind: plugin.KindSandbox, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "working copies in local folders; commands isolated by bubblewrap (network: " + p.opts.Network + ")",
		Capabilities: map[string]string{
			// Its sandboxes are folders only this process removes.
			plugin.CapabilityStableSandboxes: "true",
			plugin.CapabilityProvides:        strings.Join(features, ","),
			plugin.CapabilityIsolation:       plugin.IsolationNamespaces,
		},
	}
}

// Configure applies the config block, prepares the root and tests that a
// sandbox can start. A failing test does not fail Configure: the plugin
// stays up and Health says why, so the host starts and shows the reason.
func (p *Provider) Configure(ctx context.Context, raw json.RawMessage) error {
	var c Config
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return plugin.Errorf(plugin.CodeInvalidArgument, "config", "bwrap sandbox config: %v", err)
		}
	}
	if err := checkConfig(c); err != nil {
		return err
	}
	c, err := withDefaults(c, p.opts.Network)
	if err != nil {
		return err
	}
	if err := prepareRoot(c); err != nil {
		return plugin.Errorf(plugin.CodeInvalidArgument, "root", "cannot prepare sandbox root: %v", err)
	}
	// A plugin process killed (SIGKILL, OOM) may leave commands running
	// that did not die with it (see killRecorded); nobody waits for them.
	known := func(id string) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, ok := p.boxes[id]
		return ok || p.busy[id]
	}
	if n := killLeftovers(c.Root, commandUID(c), known); n > 0 {
		p.log.Warn("killed processes left running by a previous plugin process", "signals", n)
	}
	for _, err := range sweepLeftovers(c.Root) {
		p.log.Warn("leftover folder not removed", "error", err)
	}
	probe := p.selfTest(ctx, c)
	p.mu.Lock()
	p.cfg, p.probe = c, probe
	p.mu.Unlock()
	if probe != nil {
		p.log.Error("sandboxes cannot start; reporting unhealthy", "reason", probe)
	} else {
		p.log.Info("configured", "root", c.Root, "network", c.Network, "uid", c.UID)
	}
	return nil
}

// prepareRoot creates the root, the /etc files and makes the root
// searchable (not listable) by the sandbox uid, which bwrap runs as.
func prepareRoot(c Config) error {
	if err := os.MkdirAll(c.Root, 0o711); err != nil {
		return err
	}
	if err := os.Chmod(c.Root, 0o711); err != nil {
		return err
	}
	return writeEtc(c.Root)
}

// selfTest starts one sandbox command, `true`, exactly as Exec would, so a
// missing bwrap, a kernel without unprivileged user namespaces or a root
// the sandbox uid cannot reach is found at start-up with its reason.
func (p *Provider) selfTest(ctx context.Context, c Config) error {
	fi, err := os.Stat(c.BwrapPath)
	if err != nil {
		return fmt.Errorf("bubblewrap not found at %s (install the Debian package bubblewrap, or set bwrap_path): %v", c.BwrapPath, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable (set bwrap_path to bubblewrap's bwrap)", c.BwrapPath)
	}
	if err := searchable(c.Root, c); err != nil {
		return err
	}
	ws, err := os.MkdirTemp(c.Root, healthPrefix)
	if err != nil {
		return fmt.Errorf("sandbox root %s is not writable: %v", c.Root, err)
	}
	defer os.RemoveAll(ws)
	if err := owned.Own(ws, owner(c)); err != nil {
		return fmt.Errorf("sandbox root %s: cannot hand a folder to uid %d: %v", c.Root, c.UID, err)
	}
	plan := p.plan(c, "", ws, ".", []string{"true"})
	cmd := exec.CommandContext(ctx, plan[0], plan[1:]...)
	cmd.Env = []string{"PATH=" + dirfs.SandboxPATH}
	// As dirfs starts every command: the helper insists on leading its own
	// session (see sandboxArgs).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bubblewrap cannot start a sandbox (user namespaces disabled, or a seccomp/AppArmor policy forbids them?): %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// searchable checks that the sandbox uid can reach dir: bwrap runs as it.
func searchable(dir string, c Config) error {
	if err := owned.Searchable(dir, owner(c)); err != nil {
		return fmt.Errorf("sandbox root: %w (bwrap runs as the sandbox uid)", err)
	}
	return nil
}

// Health reports whether sandboxes can start (the self-test of Configure,
// repeated while it fails so fixing the host heals the plugin) and whether
// the root is writable.
func (p *Provider) Health(ctx context.Context) plugin.Health {
	p.mu.Lock()
	cfg, probe := p.cfg, p.probe
	p.mu.Unlock()
	if probe != nil {
		probe = p.selfTest(ctx, cfg)
		p.mu.Lock()
		p.probe = probe
		p.mu.Unlock()
	}
	if probe != nil {
		return plugin.Health{Reason: probe.Error()}
	}
	f, err := os.CreateTemp(cfg.Root, healthPrefix+"*")
	if err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not writable: %v", cfg.Root, err)}
	}
	f.Close()
	_ = os.Remove(f.Name())
	return plugin.Health{Healthy: true}
}

func (p *Provider) config() (Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.probe != nil {
		return p.cfg, plugin.Errorf(plugin.CodeUnavailable, "", "the bwrap sandbox cannot start sandboxes: %v", p.probe)
	}
	return p.cfg, nil
}
