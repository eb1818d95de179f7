//go:build linux

package bwrap

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/agenthost/agenthost/sdk/workspace/owned"
)

// Layout of the root folder (mode 0711: the sandbox uid may pass, not list):
//
//	<root>/<id>/workspace   the working copy, owned by the sandbox uid
//	<root>/<id>/execs/      one file per running command, holding its pid
//	<root>/~etc/            passwd, group, hostname for inside the sandbox
//	<root>/~staging-…       a sandbox being created, renamed when complete
//	<root>/~trash-…         a stopped sandbox being removed
//
// '~' cannot appear in an id. A sandbox's ScopeKey is not kept on disk: a
// relaunched plugin describes a rediscovered sandbox by its folder alone.
const (
	workspaceDir  = "workspace"
	execsDir      = "execs"
	stagingPrefix = "~staging-"
	trashPrefix   = "~trash-"
	healthPrefix  = "~health-"
	// leftoverAge: younger staging/trash folders may be another process's.
	leftoverAge = time.Hour
)

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func checkID(id string) error {
	if !idPattern.MatchString(id) || id == "." || id == ".." {
		return plugin.Errorf(plugin.CodeInvalidArgument, "sandbox_id", "sandbox id %q must match %s and not be . or ..", id, idPattern)
	}
	return nil
}

var (
	_ sandbox.ChangeTracker = (*Provider)(nil)
	_ sandbox.ChangeLister  = (*Provider)(nil)
	_ sandbox.Settler       = (*Provider)(nil)
)

type box struct {
	info   sandbox.Info
	dir    string
	ws     *owned.FS
	groups *dirfs.Groups
	fwd    *forwarder
	// services is nil under the none policy: nothing could reach them.
	services *dirfs.Services
}

func (p *Provider) newBox(cfg Config, info sandbox.Info) (*box, error) {
	b := &box{info: info, dir: filepath.Join(cfg.Root, info.ID), groups: &dirfs.Groups{}}
	exec := dirfs.LocalExec(dirfs.ExecLimits{
		Timeout:     time.Duration(cfg.ExecTimeoutS) * time.Second,
		OutputLimit: cfg.OutputLimitBytes,
		FileSize:    uint64(cfg.ExecFileSizeBytes),
		CPUSeconds:  uint64(cfg.ExecCPUS),
	}, b.groups)
	// Snapshot stamps go beside the working copy, on its filesystem.
	// A command's processes all live in its pid namespace, whose init is
	// in the command's group: once no group runs, nothing of it does, and
	// snapshots may skip the walk (dirfs.Quiet).
	wsDir := filepath.Join(b.dir, workspaceDir)
	opts := []dirfs.Option{dirfs.MaxFileBytes(cfg.MaxFileBytes), dirfs.StampDir(b.dir),
		dirfs.Quiet(func() bool { return b.groups.Running() == 0 && !b.servicesRunning() })}
	if cfg.Network != NetworkNone {
		// Services keep their state beside the working copy, never in it.
		b.services = dirfs.NewServices(wsDir, filepath.Join(b.dir, servicesDir), p.wrapService(cfg, b))
		opts = append(opts, dirfs.WithServices(b.services))
	}
	fsys, err := dirfs.New(wsDir, p.sandboxed(cfg, b.dir, exec), opts...)
	if err != nil {
		return nil, err
	}
	b.ws = &owned.FS{FS: fsys, Owner: owner(cfg)}
	b.fwd = newForwarder(p.log, b.dir)
	return b, nil
}

// servicesRunning reports whether a service of the box runs.
func (b *box) servicesRunning() bool { return b.services != nil && b.services.Running() > 0 }

// sandboxed wraps the shared local exec machinery (session and process
// group, timeout, cancel, output cap, streaming, Stop's kill) around the
// helper and bwrap: killing the helper's group kills bwrap and the
// sandbox's pid-namespace init, which never leaves that group (no
// --new-session, see sandboxArgs), and the init's death kills every other
// process of the command.
func (p *Provider) sandboxed(cfg Config, boxDir string, run dirfs.ExecFunc) dirfs.ExecFunc {
	return func(ctx context.Context, root, dir string, req workspace.ExecRequest) (workspace.ExecResult, error) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return workspace.ExecResult{}, plugin.Errorf(plugin.CodePathDenied, "dir", "working folder outside the workspace")
		}
		pidFile := filepath.Join(boxDir, execsDir, rand.Text())
		defer os.Remove(pidFile)
		plan := p.plan(cfg, pidFile, root, rel, req.Argv)
		// Last value wins in exec's environment: HOME is the workspace as
		// the command sees it, unless the request sets its own.
		req.Env = append([]string{"HOME=" + WorkspacePath}, req.Env...)
		req.Argv = plan
		return run(ctx, root, dir, req)
	}
}

// plan is the helper's argv for one command; pidFile may be "".
func (p *Provider) plan(cfg Config, pidFile, ws, rel string, argv []string) []string {
	uid, gid := -1, -1
	if os.Geteuid() == 0 {
		uid, gid = cfg.UID, cfg.GID
	}
	return helperPlan{
		pidFile: pidFile, uid: uid, gid: gid, cpuS: uint64(cfg.ExecCPUS), fileSize: uint64(cfg.ExecFileSizeBytes),
		memory: uint64(cfg.MemoryBytes), processes: uint64(cfg.MaxProcesses),
		bwrap: cfg.BwrapPath, args: sandboxArgs(cfg, ws, rel, argv),
	}.argv(p.opts.Helper)
}

// Create makes a sandbox holding spec.Files, written in a staging folder
// and renamed into place when complete.
func (p *Provider) Create(ctx context.Context, spec sandbox.CreateSpec) (sandbox.Info, error) {
	if err := checkID(spec.ID); err != nil {
		return sandbox.Info{}, err
	}
	cfg, err := p.config()
	if err != nil {
		return sandbox.Info{}, err
	}
	// The host's per-file limit replaces the plugin's own, and commands
	// may write one byte past it (sandbox.CommandFileSize). It is not kept
	// on disk: a relaunched plugin holds a rediscovered sandbox to its own.
	if spec.MaxFileBytes > 0 {
		cfg.MaxFileBytes = spec.MaxFileBytes
		cfg.ExecFileSizeBytes = sandbox.CommandFileSize(spec.MaxFileBytes, cfg.ExecFileSizeBytes)
	}
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
	_, statErr := os.Lstat(filepath.Join(cfg.Root, spec.ID))
	if known || p.busy[spec.ID] || statErr == nil {
		p.mu.Unlock()
		return sandbox.Info{}, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
	}
	p.busy[spec.ID] = true
	p.mu.Unlock()

	b, written, err := p.build(ctx, cfg, spec)
	p.mu.Lock()
	delete(p.busy, spec.ID)
	if err == nil {
		p.boxes[spec.ID] = b
	}
	p.mu.Unlock()
	if err != nil {
		return sandbox.Info{}, err
	}
	info := b.info
	// What the host wrote is what it holds: recorded, the sandbox's first
	// snapshot sends only what its run changed. Only an optimisation, so
	// a failure costs that, not the sandbox.
	if info.SnapshotGeneration, err = b.ws.RecordFiles(ctx, written); err != nil {
		p.log.Warn("record the created files", "sandbox_id", spec.ID, "error", err)
	}
	p.log.Info("created", "sandbox_id", spec.ID, "files", len(spec.Files))
	return info, nil
}

// build makes the sandbox's folder and box; written maps the paths it
// wrote to their content's sha256.
func (p *Provider) build(ctx context.Context, cfg Config, spec sandbox.CreateSpec) (b *box, written map[string]string, err error) {
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
	wsDir := filepath.Join(stage, workspaceDir)
	for _, d := range []string{wsDir, filepath.Join(stage, execsDir)} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
		}
	}
	// The sandbox uid must pass through <id> to reach its workspace.
	if err := os.Chmod(stage, 0o711); err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	staged, err := dirfs.New(wsDir, nil, dirfs.MaxFileBytes(cfg.MaxFileBytes))
	if err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	// Nobody sees the staged tree before it is complete: files go in
	// under their own names, each folder opened once (WriteNew).
	if written, err = staged.WriteNew(ctx, spec.Files); err != nil {
		return nil, nil, err
	}
	// No command has run in the staged tree yet, so a plain walk is safe.
	if err := owned.OwnTree(wsDir, owner(cfg)); err != nil {
		return nil, nil, fmt.Errorf("create sandbox %s: hand the workspace to uid %d: %w", spec.ID, cfg.UID, err)
	}
	if err := os.Rename(stage, filepath.Join(cfg.Root, spec.ID)); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return nil, nil, plugin.Errorf(plugin.CodeAlreadyExists, "sandbox_id", "sandbox %s exists", spec.ID)
		}
		return nil, nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	placed = true
	info := sandbox.Info{ID: spec.ID, Status: sandbox.StatusRunning, CreatedAt: time.Now().UTC(), ScopeKey: spec.ScopeKey}
	b, err = p.newBox(cfg, info)
	return b, written, err
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
	if p.busy[id] {
		return nil, notFound
	}
	fi, err := os.Stat(filepath.Join(p.cfg.Root, id, workspaceDir))
	if err != nil || !fi.IsDir() {
		return nil, notFound
	}
	b, err := p.newBox(p.cfg, sandbox.Info{ID: id, Status: sandbox.StatusRunning, CreatedAt: fi.ModTime().UTC()})
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
	return b.ws, nil
}

// Snapshot streams the working copy: regular files in path order, symlinks
// and unstorable names reported as left out, without what exclude matches.
func (p *Provider) Snapshot(ctx context.Context, id string, exclude []string, emit func(sandbox.SnapshotEntry) error) error {
	b, err := p.lookup(id)
	if err != nil {
		return err
	}
	return b.ws.Files(ctx, sandbox.NewExcluder(exclude).Match, emit)
}

// SnapshotSince is Snapshot sending only the files changed since
// generation since (sandbox.ChangeTracker; see dirfs.FS.FilesSince). A
// rediscovered sandbox knows no generation: its first snapshot is whole.
func (p *Provider) SnapshotSince(ctx context.Context, id string, exclude []string, since string, emit func(sandbox.SnapshotEntry) error) (string, error) {
	b, err := p.lookup(id)
	if err != nil {
		return "", err
	}
	return b.ws.FilesSince(ctx, since, sandbox.NewExcluder(exclude).Match, emit)
}

// SnapshotChanges is SnapshotSince passing only what changed since
// generation since, and the files gone since (sandbox.ChangeLister; see
// dirfs.FS.FilesChanged).
func (p *Provider) SnapshotChanges(ctx context.Context, id string, exclude []string, since string, emit func(sandbox.SnapshotEntry) error) (string, bool, error) {
	b, err := p.lookup(id)
	if err != nil {
		return "", false, err
	}
	return b.ws.FilesChanged(ctx, since, sandbox.NewExcluder(exclude).Match, emit)
}

// Stop kills every command of the sandbox (each one's pid namespace goes
// with it, background processes included), closes its forwarded ports and
// removes its folder. Unknown ids are not an error.
func (p *Provider) Stop(_ context.Context, id string) error {
	if checkID(id) != nil {
		return nil
	}
	p.mu.Lock()
	if p.busy[id] {
		p.mu.Unlock()
		return nil
	}
	b := p.boxes[id]
	delete(p.boxes, id)
	p.busy[id] = true
	root, uid := p.cfg.Root, commandUID(p.cfg)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.busy, id)
		p.mu.Unlock()
	}()
	if b != nil {
		// Services first, gently (SIGTERM, then SIGKILL): an agent server
		// may want to finish writing its state. Then commands: their
		// sockets close, and the relays end.
		if b.services != nil {
			b.services.Close(workspace.DefaultServiceStopGrace)
		}
		b.groups.Close()
		b.fwd.close()
	}
	dir := filepath.Join(root, id)
	// Belt and braces: this process's commands went with their groups
	// above, and what a crashed predecessor left at Configure; whatever
	// still runs in a recorded session goes before the folder does.
	killRecorded(dir, uid)
	trash := filepath.Join(root, trashPrefix+id+"-"+rand.Text()[:8])
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := removeTree(trash); err != nil {
		p.log.Warn("stopped sandbox not fully removed", "sandbox_id", id, "error", err)
	}
	p.log.Info("stopped", "sandbox_id", id)
	return nil
}

// ExposePort says where a port of the sandbox is reachable. With the host
// network a sandbox's ports are this machine's; with loopback the plugin
// forwards a local port into the running command's network namespace; with
// none nothing is reachable.
func (p *Provider) ExposePort(_ context.Context, id string, port int) (sandbox.Endpoint, error) {
	b, err := p.lookup(id)
	if err != nil {
		return sandbox.Endpoint{}, err
	}
	if port < 1 || port > 65535 {
		return sandbox.Endpoint{}, plugin.Errorf(plugin.CodeInvalidArgument, "port", "port %d is out of range", port)
	}
	var addr string
	switch p.opts.Network {
	case NetworkHost:
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	case NetworkLoopback:
		if addr, err = b.fwd.expose(port); err != nil {
			return sandbox.Endpoint{}, err
		}
	default:
		return sandbox.Endpoint{}, plugin.Errorf(plugin.CodeUnsupported, "port", "network policy none: nothing in the sandbox can be reached (use -network=loopback)")
	}
	return sandbox.Endpoint{Address: addr, URL: "http://" + addr}, nil
}

// Settled reports whether the snapshot of sandbox id that returned
// generation began with nothing running in it (sandbox.Settler; see
// dirfs.FS.Settled). An unknown sandbox is not settled.
func (p *Provider) Settled(id, generation string) bool {
	b, err := p.lookup(id)
	if err != nil {
		return false
	}
	return b.ws.Settled(generation)
}
