// Package local is the development sandbox backend: one working copy per
// sandbox in a folder of this machine, every file path confined to it, and
// commands run in their own process groups. It does not isolate commands
// from the host (see README.md); an isolating backend does.
package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/hashicorp/go-hclog"
)

// DefaultMaxFileBytes is the largest file Create, WriteFile and ReadFile
// accept unless configured: far above any source file, and bounded so one
// file cannot take the plugin's memory.
const DefaultMaxFileBytes = 64 << 20

// Config is the plugin's `config { ... }` block. Zero values mean the
// defaults.
type Config struct {
	// Root holds one folder per sandbox; default
	// $AGENTHOST_DATA_DIR/sandboxes/local, or ./data/sandboxes/local.
	Root string `json:"root"`
	// ExecTimeoutS is the wall-clock cap per command (default 120); a
	// request may ask for less, not more.
	ExecTimeoutS int `json:"exec_timeout_s"`
	// OutputLimitBytes caps stdout+stderr per command (default 1 MiB).
	OutputLimitBytes int64 `json:"output_limit_bytes"`
	// MaxFileBytes caps one file at create, write and read (default 64 MiB).
	MaxFileBytes int64 `json:"max_file_bytes"`
	// ExecCPUS is RLIMIT_CPU of each command process (default 600).
	ExecCPUS int64 `json:"exec_cpu_s"`
	// ExecFileSizeBytes is RLIMIT_FSIZE of each command process (default 1 GiB).
	ExecFileSizeBytes int64 `json:"exec_file_size_bytes"`
}

// Provider implements sandbox.Provider over local folders. One process
// serves many sandboxes; every method is safe for concurrent use.
type Provider struct {
	log hclog.Logger

	mu    sync.Mutex
	cfg   Config
	boxes map[string]*box
	// busy marks ids being created or stopped: they are neither found nor
	// rediscovered from disk meanwhile.
	busy map[string]string
}

type box struct {
	info     sandbox.Info
	fs       *dirfs.FS
	groups   *dirfs.Groups
	services *dirfs.Services
}

var (
	_ sandbox.Provider     = (*Provider)(nil)
	_ sandbox.PortExposer  = (*Provider)(nil)
	_ plugin.Configurer    = (*Provider)(nil)
	_ plugin.HealthChecker = (*Provider)(nil)
)

// New returns a provider with the default configuration that logs hclog
// JSON on stderr.
func New() *Provider { return NewWithLogger(plugin.Logger("local")) }

// NewWithLogger returns a provider with the default configuration that logs
// to log.
func NewWithLogger(log hclog.Logger) *Provider {
	p := &Provider{log: log, boxes: map[string]*box{}, busy: map[string]string{}}
	p.cfg, _ = withDefaults(Config{}) // cannot fail without a root given
	return p
}

// Info identifies the plugin.
func (p *Provider) Info() plugin.Info {
	return plugin.Info{
		Name: "local", Kind: plugin.KindSandbox, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "working copies in local folders; paths confined, commands not isolated",
		// Commands run as host processes: they reach loopback servers and
		// the network exactly as the host does.
		Capabilities: map[string]string{plugin.CapabilityProvides: strings.Join(
			[]string{plugin.FeatureExec, plugin.FeatureLoopback, plugin.FeatureNetwork, plugin.FeatureServices}, ",")},
	}
}

func withDefaults(c Config) (Config, error) {
	if c.Root == "" {
		data := os.Getenv("AGENTHOST_DATA_DIR")
		if data == "" {
			data = "data"
		}
		c.Root = filepath.Join(data, "sandboxes", "local")
	}
	abs, err := filepath.Abs(c.Root)
	if err != nil {
		return c, plugin.Errorf(plugin.CodeInvalidArgument, "root", "sandbox root %q: %v", c.Root, err)
	}
	c.Root = abs
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	return c, nil
}

// Configure applies the config block (JSON; unknown keys are refused so a
// typo does not silently fall back to a default) and creates the root.
func (p *Provider) Configure(_ context.Context, raw json.RawMessage) error {
	var c Config
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return plugin.Errorf(plugin.CodeInvalidArgument, "config", "local sandbox config: %v", err)
		}
	}
	for field, v := range map[string]int64{
		"exec_timeout_s": int64(c.ExecTimeoutS), "output_limit_bytes": c.OutputLimitBytes,
		"max_file_bytes": c.MaxFileBytes, "exec_cpu_s": c.ExecCPUS, "exec_file_size_bytes": c.ExecFileSizeBytes,
	} {
		if v < 0 {
			return plugin.Errorf(plugin.CodeInvalidArgument, field, "%s must not be negative", field)
		}
	}
	c, err := withDefaults(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Root, 0o755); err != nil {
		return plugin.Errorf(plugin.CodeInvalidArgument, "root", "cannot create sandbox root: %v", err)
	}
	for _, err := range sweepLeftovers(c.Root) {
		p.log.Warn("leftover folder not removed", "error", err)
	}
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	p.log.Info("configured", "root", c.Root)
	return nil
}

// Health reports whether the root folder is writable.
func (p *Provider) Health(context.Context) plugin.Health {
	root := p.config().Root
	if err := os.MkdirAll(root, 0o755); err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not usable: %v", root, err)}
	}
	f, err := os.CreateTemp(root, "~health-*")
	if err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not writable: %v", root, err)}
	}
	f.Close()
	_ = os.Remove(f.Name())
	return plugin.Health{Healthy: true}
}

func (p *Provider) config() Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}

func newBox(cfg Config, m meta) (*box, error) {
	cfg = limited(cfg, m.MaxFileBytes)
	groups := &dirfs.Groups{}
	exec := dirfs.LocalExec(dirfs.ExecLimits{
		Timeout:     time.Duration(cfg.ExecTimeoutS) * time.Second,
		OutputLimit: cfg.OutputLimitBytes,
		FileSize:    uint64(cfg.ExecFileSizeBytes),
		CPUSeconds:  uint64(cfg.ExecCPUS),
	}, groups)
	wsRoot := filepath.Join(cfg.Root, m.ID, workspaceDir)
	// Services keep their state beside the working copy, never in it.
	services := dirfs.NewServices(wsRoot, filepath.Join(cfg.Root, m.ID, servicesDir), nil)
	fsys, err := dirfs.New(wsRoot, exec, dirfs.MaxFileBytes(cfg.MaxFileBytes), dirfs.WithServices(services))
	if err != nil {
		return nil, err
	}
	return &box{info: m.info(), fs: fsys, groups: groups, services: services}, nil
}

// Create makes a sandbox holding spec.Files. The working copy is written in
// a staging folder and renamed into place when complete, so a crash never
// leaves a half-written sandbox for a relaunched plugin to find.
func (p *Provider) Create(ctx context.Context, spec sandbox.CreateSpec) (sandbox.Info, error) {
	if err := checkID(spec.ID); err != nil {
		return sandbox.Info{}, err
	}
	cfg := limited(p.config(), spec.MaxFileBytes)
	// Check every file before touching the disk: a bad file set is the
	// caller's error and should cost nothing.
	for _, f := range spec.Files {
		if _, err := dirfs.Clean(f.Path); err != nil {
			return sandbox.Info{}, err
		}
		if int64(len(f.Data)) > cfg.MaxFileBytes {
			return sandbox.Info{}, plugin.Errorf(plugin.CodeTooLarge, f.Path, "file %s has %d bytes; the limit is %d", f.Path, len(f.Data), cfg.MaxFileBytes)
		}
	}
	p.mu.Lock()
	_, known := p.boxes[spec.ID]
	_, busy := p.busy[spec.ID]
	_, statErr := os.Lstat(filepath.Join(cfg.Root, spec.ID))
	if known || busy || statErr == nil {
		p.mu.Unlock()
		return sandbox.Info{}, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
	}
	p.busy[spec.ID] = "being created"
	p.mu.Unlock()

	start := time.Now()
	b, err := p.build(ctx, cfg, spec)
	p.mu.Lock()
	delete(p.busy, spec.ID)
	if err == nil {
		p.boxes[spec.ID] = b
	}
	p.mu.Unlock()
	if err != nil {
		p.log.Warn("create failed", "sandbox_id", spec.ID, "error", err)
		return sandbox.Info{}, err
	}
	p.log.Info("created", "sandbox_id", spec.ID, "files", len(spec.Files), "took", time.Since(start))
	return b.info, nil
}

func (p *Provider) build(ctx context.Context, cfg Config, spec sandbox.CreateSpec) (*box, error) {
	if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	stage, err := os.MkdirTemp(cfg.Root, stagingPrefix+spec.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	placed := false
	defer func() {
		if !placed {
			_ = removeTree(stage)
		}
	}()
	if err := os.Mkdir(filepath.Join(stage, workspaceDir), 0o755); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	staged, err := dirfs.New(filepath.Join(stage, workspaceDir), nil, dirfs.MaxFileBytes(cfg.MaxFileBytes))
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	for _, f := range spec.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := staged.WriteFile(ctx, f.Path, f.Data, f.Mode); err != nil {
			return nil, err
		}
	}
	m := meta{ID: spec.ID, ScopeKey: spec.ScopeKey, Labels: spec.Labels, CreatedAt: time.Now().UTC(), MaxFileBytes: spec.MaxFileBytes}
	if err := writeMeta(stage, m); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	if err := os.Rename(stage, filepath.Join(cfg.Root, spec.ID)); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return nil, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
		}
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	placed = true
	return newBox(cfg, m)
}

// lookup finds a sandbox, rediscovering its folder after a plugin restart.
func (p *Provider) lookup(id string) (*box, error) {
	notFound := plugin.Errorf(plugin.CodeNotFound, "sandbox_id", "no sandbox %q", id)
	if checkID(id) != nil {
		return nil, notFound
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.boxes[id]; ok {
		return b, nil
	}
	if _, busy := p.busy[id]; busy {
		return nil, notFound
	}
	dir := filepath.Join(p.cfg.Root, id)
	if fi, err := os.Stat(filepath.Join(dir, workspaceDir)); err != nil || !fi.IsDir() {
		return nil, notFound
	}
	m, err := readMeta(dir, id)
	if err != nil {
		p.log.Warn("sandbox record unreadable; using the folder's own dates", "sandbox_id", id, "error", err)
	}
	b, err := newBox(p.cfg, m)
	if err != nil {
		return nil, fmt.Errorf("open sandbox %s: %w", id, err)
	}
	p.boxes[id] = b
	p.log.Info("rediscovered sandbox", "sandbox_id", id)
	return b, nil
}

// Get describes a sandbox.
func (p *Provider) Get(_ context.Context, id string) (sandbox.Info, error) {
	b, err := p.lookup(id)
	if err != nil {
		return sandbox.Info{}, err
	}
	return b.info, nil
}

// Workspace returns a sandbox's file and exec API.
func (p *Provider) Workspace(_ context.Context, id string) (workspace.Workspace, error) {
	b, err := p.lookup(id)
	if err != nil {
		return nil, err
	}
	return b.fs, nil
}

// Stop kills every process group the sandbox's commands started (background
// ones included) and removes its folder. Unknown ids are not an error. The
// folder is first renamed aside, so the id answers NotFound at once and can
// be created again while the old tree is still being deleted. A Stop that
// arrives while the same id is still being created does nothing. Processes a
// previous plugin process started in a rediscovered sandbox are not tracked
// and are not killed (see README.md).
func (p *Provider) Stop(_ context.Context, id string) error {
	if checkID(id) != nil {
		return nil
	}
	p.mu.Lock()
	if _, busy := p.busy[id]; busy {
		p.mu.Unlock()
		return nil // being created or already being stopped
	}
	b := p.boxes[id]
	delete(p.boxes, id)
	p.busy[id] = "being stopped"
	root := p.cfg.Root
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.busy, id)
		p.mu.Unlock()
	}()

	// Kill first, so nothing keeps writing into the tree being removed.
	if b != nil {
		// Services first, gently (SIGTERM, then SIGKILL): an agent server
		// gets to close its database.
		b.services.Close(workspace.DefaultServiceStopGrace)
		b.groups.Close()
	}
	dir := filepath.Join(root, id)
	trash := filepath.Join(root, trashPrefix+id+"-"+rand.Text()[:8])
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := removeTree(trash); err != nil {
		// The sandbox is gone as far as anyone can see; the sweep at the
		// next start removes what is left.
		p.log.Warn("stopped sandbox not fully removed", "sandbox_id", id, "error", err)
	}
	p.log.Info("stopped", "sandbox_id", id)
	return nil
}

// Snapshot streams the working copy: regular files in path order, symlinks
// and unstorable names reported as left out, without what exclude matches
// (excluded folders are not walked).
func (p *Provider) Snapshot(ctx context.Context, id string, exclude []string, emit func(sandbox.SnapshotEntry) error) error {
	b, err := p.lookup(id)
	if err != nil {
		return err
	}
	return b.fs.Files(ctx, func(rel string) bool { return sandbox.MatchExclude(rel, exclude) }, emit)
}

// ExposePort says where a port of the sandbox is reachable: a local
// sandbox's ports are this machine's.
func (p *Provider) ExposePort(_ context.Context, id string, port int) (sandbox.Endpoint, error) {
	if _, err := p.lookup(id); err != nil {
		return sandbox.Endpoint{}, err
	}
	if port < 1 || port > 65535 {
		return sandbox.Endpoint{}, plugin.Errorf(plugin.CodeInvalidArgument, "port", "port %d is out of range", port)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return sandbox.Endpoint{Address: addr, URL: "http://" + addr}, nil
}
