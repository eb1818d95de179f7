package dirfs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"golang.org/x/sys/unix"
)

// serviceTailBytes is how much of a service's output ServiceInfo keeps: the
// end of a crash message, not a log.
const serviceTailBytes = 8 << 10

var serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// ServiceCommand is a service's command with its placeholders replaced, as a
// backend gets it to wrap.
type ServiceCommand struct {
	Argv []string
	Env  []string
	// Dir is the host path of the working folder (inside the workspace).
	Dir string
	// StateDir is the host path of the service's private folder.
	StateDir      string
	ReadOnlyPaths []string
	// Connect is the spec's (workspace.ServiceSpec.Connect).
	Connect []string
	// Port is what {port} became (0: the spec has none).
	Port int
}

// WrappedService is a service's command as an isolating backend runs it.
type WrappedService struct {
	// Argv and Env are what runs on the host (bwrap ...).
	Argv, Env []string
	// ExtraFiles become the process's fds 3, 4, ...; Services closes its
	// copies once the process started (or failed to).
	ExtraFiles []*os.File
	// Ready, when set, runs once the process started and before
	// StartService answers, with its pid: the backend finishes setting up
	// the sandbox (its network, say) and releases it. A non-empty address
	// replaces 127.0.0.1:{port} as where plugins reach the service; an
	// error kills the service and fails the start.
	Ready func(pid int) (address string, err error)
	// Ended, when set, runs once after the service ended or failed to
	// start: the backend releases what it set up for it.
	Ended func()
	// SpareLeader sends the polite stop signal (SIGTERM) to every process
	// of the service's session but its leader: a wrapper (bwrap) that would
	// die of it and kill the service before it could leave cleanly. The
	// leader still gets the SIGKILL after the grace.
	SpareLeader bool
	// SignalExit says the wrapper exits 128+N when the service dies of
	// signal N (as bwrap and shells do): such an exit is reported as that
	// signal.
	SignalExit bool
}

// WrapFunc lets an isolating backend wrap a service's command before it
// starts.
type WrapFunc func(cmd ServiceCommand) (WrappedService, error)

// Services runs the long-lived processes of one workspace
// (workspace.Services): each in its own session and process group, without
// a controlling terminal, SIGKILLed if the plugin dies, with a private
// state folder under stateDir and the tail of its output kept for
// diagnostics. Close stops them all.
type Services struct {
	root     string
	stateDir string
	wrap     WrapFunc
	fileSize uint64
	runAs    *syscall.Credential
	record   string

	mu       sync.Mutex
	services map[string]*service
	closed   bool
}

type service struct {
	info workspace.ServiceInfo
	pgid int
	tail *tailBuffer
	done chan struct{}
	// spareLeader, signalExit: see WrappedService.
	spareLeader, signalExit bool
	ended                   func()
}

// ServicesOption adjusts NewServices.
type ServicesOption func(*Services)

// ServicesRunAs runs every service as cred's uid/gid (the plugin must be
// root) and hands the state folders to that uid; nil keeps the plugin's.
func ServicesRunAs(cred *syscall.Credential) ServicesOption {
	return func(s *Services) { s.runAs = cred }
}

// ServicesRecord records each service's process group in dir, as
// Groups.RecordDir does, for KillRecorded after a crash.
func ServicesRecord(dir string) ServicesOption {
	return func(s *Services) { s.record = dir }
}

// NewServices returns the services of the workspace rooted at root; each
// service's {state} folder is made under stateDir, which must lie outside
// the workspace. wrap may be nil (commands run as they are).
func NewServices(root, stateDir string, wrap WrapFunc, opts ...ServicesOption) *Services {
	s := &Services{root: root, stateDir: stateDir, wrap: wrap, fileSize: DefaultFileSizeLimit, services: map[string]*service{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// WithServices makes an FS answer workspace.Services through s.
func WithServices(s *Services) Option { return func(f *FS) { f.services = s } }

// StartService implements workspace.Services.
func (s *Services) StartService(_ context.Context, spec workspace.ServiceSpec) (workspace.ServiceInfo, error) {
	if !serviceName.MatchString(spec.Name) {
		return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeInvalidArgument, "name", "service name %q must be 1-40 of [a-z0-9-]", spec.Name)
	}
	if len(spec.Argv) == 0 {
		return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeInvalidArgument, "argv", "a service needs a command")
	}
	for _, p := range spec.ReadOnlyPaths {
		if !filepath.IsAbs(p) {
			return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeInvalidArgument, "read_only_paths", "%q is not an absolute path", p)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeNotFound, "", "the sandbox was stopped")
	}
	if old := s.services[spec.Name]; old != nil && old.info.Running {
		return old.snapshot(false), nil
	}
	dir := s.root
	if spec.Dir != "" {
		rel, err := Clean(spec.Dir)
		if err != nil {
			return workspace.ServiceInfo{}, err
		}
		dir = filepath.Join(s.root, filepath.FromSlash(rel))
	}
	state := filepath.Join(s.stateDir, spec.Name)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return workspace.ServiceInfo{}, fmt.Errorf("service %s: state folder: %w", spec.Name, err)
	}
	if s.runAs != nil {
		// The service writes its state; the folders are root's so far.
		for _, d := range []string{s.stateDir, state} {
			if err := os.Lchown(d, int(s.runAs.Uid), int(s.runAs.Gid)); err != nil {
				return workspace.ServiceInfo{}, fmt.Errorf("service %s: hand the state folder to uid %d: %w", spec.Name, s.runAs.Uid, err)
			}
		}
	}
	port := 0
	if usesPlaceholder(spec, workspace.PlaceholderPort) {
		p, err := freePort()
		if err != nil {
			return workspace.ServiceInfo{}, fmt.Errorf("service %s: pick a port: %w", spec.Name, err)
		}
		port = p
	}
	fill := strings.NewReplacer(workspace.PlaceholderPort, strconv.Itoa(port), workspace.PlaceholderState, state)
	cmd := ServiceCommand{Dir: dir, StateDir: state, ReadOnlyPaths: spec.ReadOnlyPaths, Connect: spec.Connect, Port: port}
	for _, a := range spec.Argv {
		cmd.Argv = append(cmd.Argv, fill.Replace(a))
	}
	cmd.Env = []string{"PATH=" + SandboxPATH, "HOME=" + state, "LANG=C.UTF-8"}
	for _, e := range spec.Env {
		cmd.Env = append(cmd.Env, fill.Replace(e))
	}
	wrapped := WrappedService{Argv: cmd.Argv, Env: cmd.Env}
	if s.wrap != nil {
		var err error
		if wrapped, err = s.wrap(cmd); err != nil {
			return workspace.ServiceInfo{}, err
		}
	}
	release := func() {
		if wrapped.Ended != nil {
			wrapped.Ended()
		}
	}
	// The process gets its own copies of ExtraFiles; ours close once it
	// started, or failed to.
	abandon := func() {
		closeFiles(wrapped.ExtraFiles)
		release()
	}
	argv, env := wrapped.Argv, wrapped.Env
	path, err := lookPath(argv[0], envValue(env, "PATH"))
	if err != nil {
		abandon()
		return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeNotFound, "argv", "service %s: %s: command not found", spec.Name, argv[0])
	}
	tail := &tailBuffer{max: serviceTailBytes}
	c := &exec.Cmd{
		Path: path, Args: argv, Dir: dir, Env: env, Stdout: tail, Stderr: tail,
		// A session of its own, as for commands (see runLocal): a service
		// runs what a model asked for just as Exec does, so it must not
		// have the host's controlling terminal to type into (TIOCSTI)
		// or be hung up with it, and a wrapper that insists on leading
		// its session (bwrap's exec helper) can wrap it. A session
		// leader leads its process group too (pgid == pid), so the
		// group kills of StopService and the records are unchanged.
		SysProcAttr: withDeathSignal(&syscall.SysProcAttr{Setsid: true, Credential: s.runAs}),
		// Children left holding the output pipes must not hold Wait.
		WaitDelay:  time.Second,
		ExtraFiles: wrapped.ExtraFiles,
	}
	if err := c.Start(); err != nil {
		abandon()
		return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeUnavailable, "argv", "service %s: start %s: %v", spec.Name, argv[0], err)
	}
	pid := c.Process.Pid
	closeFiles(wrapped.ExtraFiles)
	address := ""
	if wrapped.Ready != nil {
		if address, err = wrapped.Ready(pid); err != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = c.Wait()
			release()
			return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeUnavailable, "argv", "service %s: set up: %v: %s", spec.Name, err, strings.TrimSpace(string(tail.bytes())))
		}
	}
	if s.record != "" {
		// Best effort, as for Groups: it only serves clean-up after a crash.
		start, _ := procStart(pid)
		_ = writeRecord(s.record, pid, start)
	}
	setRlimit(pid, unix.RLIMIT_FSIZE, s.fileSize)
	svc := &service{pgid: pid, tail: tail, done: make(chan struct{}), spareLeader: wrapped.SpareLeader, signalExit: wrapped.SignalExit, ended: wrapped.Ended,
		info: workspace.ServiceInfo{Name: spec.Name, Running: true, Port: port, StartedAt: time.Now()}}
	switch {
	case address != "":
		svc.info.Address = address
	case port != 0:
		svc.info.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	s.services[spec.Name] = svc
	go s.watch(svc, c)
	return svc.snapshot(true), nil
}

// watch records how a service ended.
func (s *Services) watch(svc *service, c *exec.Cmd) {
	err := c.Wait()
	s.mu.Lock()
	svc.info.Running = false
	if c.ProcessState != nil {
		svc.info.ExitCode = c.ProcessState.ExitCode()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			svc.info.Signal = unix.SignalName(ws.Signal())
			svc.info.ExitCode = 128 + int(ws.Signal())
		} else if code := svc.info.ExitCode; svc.signalExit && code > 128 && code < 128+65 {
			svc.info.Signal = unix.SignalName(syscall.Signal(code - 128))
		}
	} else if err != nil {
		svc.info.ExitCode = -1
	}
	s.mu.Unlock()
	if svc.ended != nil {
		svc.ended()
	}
	close(svc.done)
}

func (svc *service) snapshot(started bool) workspace.ServiceInfo {
	si := svc.info
	si.Started = started
	si.OutputTail = svc.tail.bytes()
	return si
}

// ServiceStatus implements workspace.Services; a running service's answer
// has its session's resident memory.
func (s *Services) ServiceStatus(_ context.Context, name string) (workspace.ServiceInfo, error) {
	s.mu.Lock()
	svc := s.services[name]
	if svc == nil {
		s.mu.Unlock()
		return workspace.ServiceInfo{}, plugin.Errorf(plugin.CodeNotFound, "name", "no service %q in this sandbox", name)
	}
	si := svc.snapshot(false)
	s.mu.Unlock()
	if si.Running {
		// Outside the lock: a walk of /proc is not instant.
		si.RSSBytes = sessionRSS(svc.pgid)
	}
	return si, nil
}

// StopService implements workspace.Services.
func (s *Services) StopService(ctx context.Context, name string, grace time.Duration) error {
	s.mu.Lock()
	svc := s.services[name]
	s.mu.Unlock()
	if svc == nil {
		return nil
	}
	err := stopService(ctx, svc, grace)
	s.forget(svc)
	return err
}

// Running counts the services running now (for Quiet: a running service
// may be writing to the workspace).
func (s *Services) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, svc := range s.services {
		if svc.info.Running {
			n++
		}
	}
	return n
}

// forget removes a stopped service's record: its group has been killed.
func (s *Services) forget(svc *service) {
	if s.record != "" {
		_ = os.Remove(recordPath(s.record, svc.pgid))
	}
}

// stopService sends SIGTERM to the service's group, SIGKILL after grace,
// and waits for the leader to be reaped.
func stopService(ctx context.Context, svc *service, grace time.Duration) error {
	if grace <= 0 {
		grace = workspace.DefaultServiceStopGrace
	}
	select {
	case <-svc.done:
		// Ended by itself; anything it left in its group goes too.
		_ = syscall.Kill(-svc.pgid, syscall.SIGKILL)
		return nil
	default:
	}
	if svc.spareLeader {
		signalSessionButLeader(svc.pgid, syscall.SIGTERM)
	} else {
		_ = syscall.Kill(-svc.pgid, syscall.SIGTERM)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-svc.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-svc.pgid, syscall.SIGKILL)
	select {
	case <-svc.done:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("the service did not exit after SIGKILL")
	}
}

// Close stops every service (in parallel, each with grace) and refuses new
// ones: the sandbox is stopping.
func (s *Services) Close(grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	all := make([]*service, 0, len(s.services))
	for _, svc := range s.services {
		all = append(all, svc)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, svc := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = stopService(context.Background(), svc, grace)
			s.forget(svc)
		}()
	}
	wg.Wait()
}

func usesPlaceholder(spec workspace.ServiceSpec, ph string) bool {
	for _, list := range [][]string{spec.Argv, spec.Env} {
		for _, v := range list {
			if strings.Contains(v, ph) {
				return true
			}
		}
	}
	return false
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the service binds it; the service then fails to start and
// says so, which its caller sees.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
