// Package local is the development sandbox backend: one working copy per
// sandbox in a folder of this machine, with every file path confined to it
// and commands run in their own process groups. It does not isolate commands
// from the host (see README.md); the bubblewrap backend does.
package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
)

// Config is the plugin's `config { ... }` block.
type Config struct {
	// Root holds one folder per sandbox; default
	// $AGENTHOST_DATA_DIR/sandboxes/local.
	Root             string `json:"root"`
	ExecTimeoutS     int    `json:"exec_timeout_s"`
	OutputLimitBytes int64  `json:"output_limit_bytes"`
	// MaxFileBytes refuses a file set with a larger file at create.
	MaxFileBytes int64 `json:"max_file_bytes"`
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Provider implements sandbox.Provider for local folders.
type Provider struct {
	mu    sync.Mutex
	cfg   Config
	boxes map[string]*box
}

type box struct {
	info   sandbox.Info
	fs     *dirfs.FS
	groups *dirfs.Groups
}

// New returns a provider with the default configuration.
func New() *Provider {
	p := &Provider{boxes: map[string]*box{}}
	_ = p.Configure(context.Background(), nil)
	return p
}

var (
	_ sandbox.Provider     = (*Provider)(nil)
	_ sandbox.PortExposer  = (*Provider)(nil)
	_ plugin.Configurer    = (*Provider)(nil)
	_ plugin.HealthChecker = (*Provider)(nil)
)

// Info identifies the plugin.
func (p *Provider) Info() plugin.Info {
	return plugin.Info{Name: "local", Kind: plugin.KindSandbox, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "working copies in local folders; paths confined, commands not isolated"}
}

// Configure applies the config block.
func (p *Provider) Configure(_ context.Context, raw json.RawMessage) error {
	var c Config
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return plugin.Errorf(plugin.CodeInvalidArgument, "config", "local sandbox config: %v", err)
		}
	}
	if c.Root == "" {
		data := os.Getenv("AGENTHOST_DATA_DIR")
		if data == "" {
			data = "data"
		}
		c.Root = filepath.Join(data, "sandboxes", "local")
	}
	abs, err := filepath.Abs(c.Root)
	if err != nil {
		return err
	}
	c.Root = abs
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = 64 << 20
	}
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	return nil
}

// Health reports whether the root folder is writable.
func (p *Provider) Health(context.Context) plugin.Health {
	p.mu.Lock()
	root := p.cfg.Root
	p.mu.Unlock()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not usable: %v", root, err)}
	}
	f, err := os.CreateTemp(root, ".health-*")
	if err != nil {
		return plugin.Health{Reason: fmt.Sprintf("sandbox root %s is not writable: %v", root, err)}
	}
	f.Close()
	os.Remove(f.Name())
	return plugin.Health{Healthy: true}
}

func (p *Provider) dirOf(id string) string { return filepath.Join(p.cfg.Root, id, "workspace") }

func (p *Provider) newBox(id, scope string, created time.Time) (*box, error) {
	groups := &dirfs.Groups{}
	fs, err := dirfs.New(p.dirOf(id), dirfs.LocalExec(dirfs.ExecLimits{
		Timeout: time.Duration(p.cfg.ExecTimeoutS) * time.Second, OutputLimit: p.cfg.OutputLimitBytes,
	}, groups))
	if err != nil {
		return nil, err
	}
	return &box{info: sandbox.Info{ID: id, Status: sandbox.StatusRunning, CreatedAt: created, ScopeKey: scope}, fs: fs, groups: groups}, nil
}

// Create makes a sandbox folder holding the file set.
func (p *Provider) Create(ctx context.Context, spec sandbox.CreateSpec) (sandbox.Info, error) {
	if !idPattern.MatchString(spec.ID) {
		return sandbox.Info{}, plugin.Errorf(plugin.CodeInvalidArgument, "sandbox_id", "sandbox id %q must match %s", spec.ID, idPattern)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.boxes[spec.ID]; ok {
		return sandbox.Info{}, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
	}
	dir := p.dirOf(spec.ID)
	if _, err := os.Stat(dir); err == nil {
		return sandbox.Info{}, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
	}
	for _, f := range spec.Files {
		if int64(len(f.Data)) > p.cfg.MaxFileBytes {
			return sandbox.Info{}, plugin.Errorf(plugin.CodeTooLarge, f.Path, "file %s has %d bytes; the limit is %d", f.Path, len(f.Data), p.cfg.MaxFileBytes)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sandbox.Info{}, err
	}
	b, err := p.newBox(spec.ID, spec.ScopeKey, time.Now().UTC())
	if err == nil {
		for _, f := range spec.Files {
			if _, err = b.fs.WriteFile(ctx, f.Path, f.Data, f.Mode); err != nil {
				break
			}
		}
	}
	if err != nil {
		_ = os.RemoveAll(filepath.Dir(dir))
		return sandbox.Info{}, err
	}
	p.boxes[spec.ID] = b
	return b.info, nil
}

// lookup finds a sandbox, rediscovering its folder after a plugin restart:
// the folder is the sandbox's only state.
func (p *Provider) lookup(id string) (*box, error) {
	if !idPattern.MatchString(id) {
		return nil, plugin.Errorf(plugin.CodeNotFound, "sandbox_id", "no sandbox %q", id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.boxes[id]; ok {
		return b, nil
	}
	fi, err := os.Stat(p.dirOf(id))
	if err != nil || !fi.IsDir() {
		return nil, plugin.Errorf(plugin.CodeNotFound, "sandbox_id", "no sandbox %q", id)
	}
	b, err := p.newBox(id, "", fi.ModTime().UTC())
	if err != nil {
		return nil, err
	}
	p.boxes[id] = b
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

// Stop kills every process the sandbox started and removes its folder.
func (p *Provider) Stop(_ context.Context, id string) error {
	if !idPattern.MatchString(id) {
		return nil
	}
	p.mu.Lock()
	b := p.boxes[id]
	delete(p.boxes, id)
	p.mu.Unlock()
	if b != nil {
		b.groups.KillAll()
	}
	return os.RemoveAll(filepath.Join(p.cfg.Root, id))
}

// Snapshot reads the working copy without excluded paths.
func (p *Provider) Snapshot(_ context.Context, id string, exclude []string) ([]sandbox.File, error) {
	b, err := p.lookup(id)
	if err != nil {
		return nil, err
	}
	return b.fs.Files(func(rel string) bool { return sandbox.MatchExclude(rel, exclude) })
}

// ExposePort: a local sandbox's ports are this machine's.
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
