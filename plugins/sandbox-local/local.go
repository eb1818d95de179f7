// Package local is the development sandbox backend: one working copy per
// sandbox in a folder of this machine, every file path confined to it, and
// commands run in their own process groups. It uses no namespaces: run as
// root, it runs each sandbox's commands as an unprivileged uid of that
// sandbox (isolation "uid"); run as another user, commands run as that user
// and can read whatever it can (isolation "none"). See README.md; an
// isolating backend (bwrap) does more.
package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
	"github.com/hashicorp/go-hclog"
)

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
	// claimed holds the uids of sandboxes being created, until their
	// workspace folder, owned by the uid, is in place.
	claimed map[int]string
}

type box struct {
	info sandbox.Info
	// uid the commands run as (0: the plugin's own).
	uid      int
	fs       *owned.FS
	groups   *dirfs.Groups
	services *dirfs.Services
}

var (
	_ sandbox.Provider      = (*Provider)(nil)
	_ sandbox.PortExposer   = (*Provider)(nil)
	_ sandbox.ChangeTracker = (*Provider)(nil)
	_ sandbox.ChangeLister  = (*Provider)(nil)
	_ sandbox.Settler       = (*Provider)(nil)
	_ plugin.Configurer     = (*Provider)(nil)
	_ plugin.HealthChecker  = (*Provider)(nil)
)

// New returns a provider with the default configuration that logs hclog
// JSON on stderr.
func New() *Provider { return NewWithLogger(plugin.Logger("local")) }

// NewWithLogger returns a provider with the default configuration that logs
// to log.
func NewWithLogger(log hclog.Logger) *Provider {
	p := &Provider{log: log, boxes: map[string]*box{}, busy: map[string]string{}, claimed: map[int]string{}}
	p.cfg, _ = withDefaults(Config{}) // cannot fail without a root given
	return p
}

// Info identifies the plugin.
func (p *Provider) Info() plugin.Info {
	return plugin.Info{
		Name: "local", Kind: plugin.KindSandbox, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "working copies in local folders; paths confined, commands not isolated (isolation: " + isolation() + ")",
		// Commands run as host processes: they reach loopback servers and
		// the network exactly as the host does.
		Capabilities: map[string]string{
			// Its sandboxes are folders only this process removes.
			plugin.CapabilityStableSandboxes: "true",
			plugin.CapabilityProvides: strings.Join(
				[]string{plugin.FeatureExec, plugin.FeatureLoopback, plugin.FeatureNetwork, plugin.FeatureServices}, ","),
			plugin.CapabilityIsolation: isolation(),
		},
	}
}

// noLeftovers says whether no process a command of the sandbox started can
// still run, for snapshots that skip the walk (dirfs.Quiet). Only a uid of
// the sandbox's own finds every such process (one that left its group,
// say); at the plugin's own uid it never vouches. The /proc scan is
// skipped while no command has started since one found nothing, and, for a
// sandbox this process just created (fresh), until its first command: its
// uid was claimed with no process at it (a uid is released only once a
// kill pass found none: Stop, settleClaims), and nothing but its own
// commands runs as it. The scan reads every process's status, so on a
// machine with thousands of processes it was most of a new sandbox's cost.
func noLeftovers(owner owned.Owner, uid int, groups *dirfs.Groups, fresh bool) func() bool {
	var clean atomic.Uint64 // groups.Started()+1 when none can be left
	if fresh {
		clean.Store(1)
	}
	return func() bool {
		if !owner.Active() || groups.Running() > 0 {
			return false
		}
		n := groups.Started() + 1
		if clean.Load() == n {
			return true
		}
		if anyUID(func(u int) bool { return u == uid }) {
			return false
		}
		clean.Store(n)
		return true
	}
}

// anyUID and killUIDs are owned's, replaced by tests that count scans or
// make a kill fall short.
var (
	anyUID   = owned.AnyUID
	killUIDs = owned.KillUIDs
)

// newBox serves the sandbox folder of m, its commands running as uid (0:
// the plugin's own user); fresh says this process just made it (see
// noLeftovers).
func newBox(cfg Config, m meta, uid int, fresh bool) (*box, error) {
	cfg = limited(cfg, m.MaxFileBytes)
	dir := filepath.Join(cfg.Root, m.ID)
	owner := ownerOf(uid)
	// Records of the commands' process groups, for the next plugin process
	// to kill after a crash (as root the uid finds them all anyway).
	groups := &dirfs.Groups{RecordDir: filepath.Join(dir, execsDir)}
	exec := dirfs.LocalExec(dirfs.ExecLimits{
		Timeout:     time.Duration(cfg.ExecTimeoutS) * time.Second,
		OutputLimit: cfg.OutputLimitBytes,
		FileSize:    uint64(cfg.ExecFileSizeBytes),
		CPUSeconds:  uint64(cfg.ExecCPUS),
		RunAs:       owner.Credential(),
	}, groups)
	wsRoot := filepath.Join(dir, workspaceDir)
	// Services keep their state beside the working copy, never in it.
	services := dirfs.NewServices(wsRoot, filepath.Join(dir, servicesDir), nil,
		dirfs.ServicesRunAs(owner.Credential()), dirfs.ServicesRecord(filepath.Join(dir, execsDir)))
	// Snapshot stamps go beside the working copy, on its filesystem.
	fsys, err := dirfs.New(wsRoot, exec, dirfs.MaxFileBytes(cfg.MaxFileBytes), dirfs.WithServices(services), dirfs.StampDir(dir),
		dirfs.Quiet(noLeftovers(owner, uid, groups, fresh)))
	if err != nil {
		return nil, err
	}
	return &box{info: m.info(), uid: uid, fs: &owned.FS{FS: fsys, Owner: owner}, groups: groups, services: services}, nil
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
	uid := 0
	if dropping() {
		var err error
		if uid, err = p.pickUID(cfg); err != nil {
			p.mu.Unlock()
			return sandbox.Info{}, err
		}
		p.claimed[uid] = spec.ID
	}
	p.busy[spec.ID] = "being created"
	p.mu.Unlock()

	start := time.Now()
	b, written, err := p.build(ctx, cfg, spec, uid)
	p.mu.Lock()
	delete(p.busy, spec.ID)
	delete(p.claimed, uid)
	if err == nil {
		p.boxes[spec.ID] = b
	}
	p.mu.Unlock()
	if err != nil && uid != 0 {
		releaseUID(uid, cfg.Root)
	}
	if err != nil {
		p.log.Warn("create failed", "sandbox_id", spec.ID, "error", err)
		return sandbox.Info{}, err
	}
	info := b.info
	// What the host wrote is what it holds: recorded, the sandbox's first
	// snapshot sends only what its run changed. Only an optimisation, so
	// a failure costs that, not the sandbox.
	if info.SnapshotGeneration, err = b.fs.RecordFiles(ctx, written); err != nil {
		p.log.Warn("record the created files", "sandbox_id", spec.ID, "error", err)
	}
	p.log.Info("created", "sandbox_id", spec.ID, "files", len(spec.Files), "took", time.Since(start))
	return info, nil
}

// build makes the sandbox's folder and box; known maps the paths it wrote
// to their content's sha256.
func (p *Provider) build(ctx context.Context, cfg Config, spec sandbox.CreateSpec, uid int) (b *box, known map[string]string, err error) {
	if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	stage, err := os.MkdirTemp(cfg.Root, stagingPrefix+spec.ID+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	placed := false
	defer func() {
		if !placed {
			_ = removeTree(stage)
		}
	}()
	// As root: <id> is root's and 0711, so the sandbox uid passes through
	// to its workspace (its own, 0700: closed to other sandboxes) but
	// cannot read meta.json or the records, nor replace them.
	if dropping() {
		if err := os.Chmod(stage, 0o711); err != nil {
			return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
	}
	if err := os.Mkdir(filepath.Join(stage, workspaceDir), 0o755); err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	staged, err := dirfs.New(filepath.Join(stage, workspaceDir), nil, dirfs.MaxFileBytes(cfg.MaxFileBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	// Nobody sees the staged tree before it is complete: files go in
	// under their own names, each folder opened once (WriteNew).
	if known, err = staged.WriteNew(ctx, spec.Files); err != nil {
		return nil, nil, err
	}
	// No command has run in the staged tree yet, so a plain walk is safe.
	if err := handTo(filepath.Join(stage, workspaceDir), uid); err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	m := meta{ID: spec.ID, ScopeKey: spec.ScopeKey, Labels: spec.Labels, CreatedAt: time.Now().UTC(), MaxFileBytes: spec.MaxFileBytes}
	if err := writeMeta(stage, m); err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	if err := os.Rename(stage, filepath.Join(cfg.Root, spec.ID)); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return nil, nil, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
		}
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	placed = true
	b, err = newBox(cfg, m, uid, true)
	return b, known, err
}

// handTo gives a workspace no command is running in to uid, closed to
// every other sandbox uid (0: leave it to the plugin's user).
func handTo(ws string, uid int) error {
	if uid == 0 {
		return nil
	}
	if err := owned.OwnTree(ws, ownerOf(uid)); err != nil {
		return fmt.Errorf("hand the workspace to uid %d: %w", uid, err)
	}
	return os.Chmod(ws, 0o700)
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
	uid := workspaceUID(p.cfg, dir)
	if uid == 0 && dropping() {
		// Made by a plugin that did not run as root (or with another
		// range): give it a uid now. Leftovers were killed at start, so no
		// command runs in it.
		if uid, err = p.pickUID(p.cfg); err != nil {
			return nil, err
		}
		if err := handTo(filepath.Join(dir, workspaceDir), uid); err != nil {
			return nil, fmt.Errorf("open sandbox %s: %w", id, err)
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			return nil, fmt.Errorf("open sandbox %s: %w", id, err)
		}
	}
	b, err := newBox(p.cfg, m, uid, false)
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
// previous plugin process started in a rediscovered sandbox
// are killed too: as root by their uid, otherwise through the records of
// their process groups.
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
	cfg := p.cfg
	root := cfg.Root
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
	// What left the process groups (setsid), or was started by an earlier
	// plugin process: the uid finds every process; otherwise the records.
	uid := workspaceUID(cfg, dir)
	if uid != 0 && dropping() {
		if _, cleared := killUIDs(func(u int) bool { return u == uid }); cleared {
			// Released only once nothing runs as it: the folder may stay
			// a moment longer (below), but no command can reach it any
			// more, and the next sandbox given it starts clean.
			defer releaseUID(uid, root)
		} else {
			p.log.Warn("processes of a stopped sandbox outran every kill pass: its uid stays claimed until the plugin's next start",
				"sandbox_id", id, "uid", uid)
		}
	}
	dirfs.KillRecorded(filepath.Join(dir, execsDir))
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
