package dirfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"golang.org/x/sys/unix"
)

// Exec defaults. 120 s matches the seed's tool_timeout_s; 1 MiB of output is
// far more than a model can use and small enough to keep memory flat.
const (
	DefaultExecTimeout = 120 * time.Second
	DefaultOutputLimit = 1 << 20
	// DefaultFileSizeLimit caps any file a command writes (RLIMIT_FSIZE):
	// far above any source file, low enough to stop a runaway log filling
	// the disk.
	DefaultFileSizeLimit = 1 << 30
	// DefaultCPUSeconds caps each process's CPU time (RLIMIT_CPU): ten
	// minutes of a core, more than any build a model should wait for.
	DefaultCPUSeconds = 600
)

// SandboxPATH is the PATH commands get (req.Env may override it).
const SandboxPATH = "/usr/local/bin:/usr/bin:/bin"

// outputGrace is how long Exec waits, after the command exits, for its
// output pipes to close. Output the command itself wrote is already in the
// pipes; only background processes keep them open, and for those the wait
// ends and their output is dropped from then on.
const outputGrace = 500 * time.Millisecond

// ExecLimits bound every command, whatever the request asks: a request may
// lower the timeout and the output limit but not raise them.
type ExecLimits struct {
	Timeout     time.Duration
	OutputLimit int64
	// FileSize and CPUSeconds are rlimits applied to the started process
	// (and inherited by what it starts). Linux only: macOS has no prlimit.
	FileSize   uint64
	CPUSeconds uint64
	// RunAs, when set, is the uid/gid (and groups) commands run as; the
	// plugin must be root. The working folder and its parents must be
	// searchable by that uid: exec switches credentials before it changes
	// into the folder.
	RunAs *syscall.Credential
}

func (l ExecLimits) withDefaults() ExecLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultExecTimeout
	}
	if l.OutputLimit <= 0 {
		l.OutputLimit = DefaultOutputLimit
	}
	if l.FileSize == 0 {
		l.FileSize = DefaultFileSizeLimit
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = DefaultCPUSeconds
	}
	return l
}

// LocalExec returns an ExecFunc that runs commands on this machine as the
// plugin's user. Each command gets its own session and process group, with
// no controlling terminal (a timeout or a cancelled ctx SIGKILLs the whole
// group; groups records it so Close can kill what it left in the
// background), SIGKILL if the plugin dies (Linux), an
// environment of only PATH=SandboxPATH, HOME=<workspace root>, LANG=C.UTF-8
// and req.Env, CPU and file-size rlimits (Linux), a wall-clock timeout (TimedOut)
// and a cap on stdout+stderr together (OutputTruncated). Output streams to
// req.Stdout/req.Stderr as it is produced.
//
// A command that cannot start is answered like a shell would, as a result
// rather than an error: exit code 127 when argv[0] is not found, 126 when it
// is not executable, with the reason on stderr. A process killed by a signal
// has ExitCode 128+signal and Signal set ("SIGKILL"). A cancelled ctx
// returns ctx's error.
//
// It confines nothing else: a command can read anything the user can.
// Isolating backends wrap argv (bwrap ...) around the same machinery.
// groups may be nil when nothing needs to kill leftovers.
func LocalExec(limits ExecLimits, groups *Groups) ExecFunc {
	limits = limits.withDefaults()
	if groups == nil {
		groups = &Groups{} // owns output drains; never closed
	}
	return func(ctx context.Context, root, dir string, req workspace.ExecRequest) (workspace.ExecResult, error) {
		return runLocal(ctx, limits, groups, root, dir, req)
	}
}

func runLocal(ctx context.Context, limits ExecLimits, groups *Groups, root, dir string, req workspace.ExecRequest) (workspace.ExecResult, error) {
	timeout := limits.Timeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	outLimit := limits.OutputLimit
	if req.OutputLimit > 0 && req.OutputLimit < outLimit {
		outLimit = req.OutputLimit
	}
	out := &output{room: outLimit, live: [2]io.Writer{req.Stdout, req.Stderr}}
	env := append([]string{"PATH=" + SandboxPATH, "HOME=" + root, "LANG=C.UTF-8"}, req.Env...)
	start := time.Now()

	// Look argv[0] up on the command's PATH, not the plugin's (which the
	// host may have emptied).
	argv0, err := lookPath(req.Argv[0], envValue(env, "PATH"))
	if err != nil {
		return out.failed(127, fmt.Sprintf("%s: command not found\n", req.Argv[0]), start), nil
	}
	// Our own pipes rather than exec's: exec closes its pipes when the
	// command exits (WaitDelay), which would SIGPIPE a dev server left
	// running in the background the first time it logs.
	outR, outW, err := os.Pipe()
	if err != nil {
		return workspace.ExecResult{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return workspace.ExecResult{}, err
	}
	cmd := &exec.Cmd{
		Path: argv0, Args: req.Argv, Dir: dir, Env: env, Stdout: outW, Stderr: errW,
		// A session of its own rather than only a process group: setsid
		// also makes the command its group's leader (pgid == pid, which
		// the kills below rely on), and leaves it without a controlling
		// terminal, so nothing it runs can read or type into the
		// terminal the host was started from (TIOCSTI). Wrappers such as
		// bwrap then need no setsid of their own, which would take part
		// of the tree out of the group the kills reach. Go applies
		// Pdeathsig (Linux) after the credentials: the kernel clears it
		// on a uid change.
		SysProcAttr: withDeathSignal(&syscall.SysProcAttr{Setsid: true, Credential: limits.RunAs}),
		// Only stdin is copied by exec now; do not let a background
		// process that never reads it hold Wait.
		WaitDelay: outputGrace,
	}
	if len(req.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	err = cmd.Start()
	// The child has its own copies of the write ends; ours must go so the
	// readers see EOF when the command's processes are done.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return out.failed(127, fmt.Sprintf("%s: %v\n", req.Argv[0], err), start), nil
		case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC):
			return out.failed(126, fmt.Sprintf("%s: %v\n", req.Argv[0], err), start), nil
		}
		return workspace.ExecResult{}, fmt.Errorf("start %s: %w", req.Argv[0], err)
	}
	copied := out.copy(outR, errR)
	pid := cmd.Process.Pid // also the group id (Setsid)
	stopped := !groups.add(pid)
	if stopped {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	// The child may run a moment before these apply; what it forks after
	// inherits them. Best effort: failing here must not fail the command.
	// (Not on macOS, which cannot limit another process: see sys_darwin.go.)
	setRlimit(pid, unix.RLIMIT_FSIZE, limits.FileSize)
	setRlimit(pid, unix.RLIMIT_CPU, limits.CPUSeconds)

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res workspace.ExecResult
	var waitErr, ctxErr error
	select {
	case waitErr = <-waited:
	case <-timer.C:
		res.TimedOut = true
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		waitErr = <-waited
	case <-ctx.Done():
		ctxErr = ctx.Err()
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		waitErr = <-waited
	}
	res.Duration = time.Since(start)
	// Background processes the command left behind keep running (until the
	// workspace's groups are closed) and may hold the pipes open.
	select {
	case <-copied:
	case <-time.After(outputGrace):
		out.detach()
		groups.adopt(copied, outR, errR)
	}
	if stopped {
		return workspace.ExecResult{}, plugin.Errorf(plugin.CodeNotFound, "", "the sandbox was stopped")
	}
	if ctxErr != nil {
		return workspace.ExecResult{}, fmt.Errorf("exec %s: %w", req.Argv[0], ctxErr)
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return workspace.ExecResult{}, fmt.Errorf("exec %s: %w", req.Argv[0], waitErr)
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = unix.SignalName(ws.Signal())
		res.ExitCode = 128 + int(ws.Signal()) // as a shell reports it
	}
	res.Stdout, res.Stderr, res.OutputTruncated = out.result()
	return res, nil
}

// lookPath finds an executable on a PATH list. A name with a slash is used
// as is: the kernel resolves a relative one from the working folder. Relative
// PATH entries are ignored, as a sandbox's PATH should not depend on where a
// command runs.
func lookPath(name, pathList string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// envValue returns the last value of key in env, as exec would use it.
func envValue(env []string, key string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// output keeps at most room bytes of stdout and stderr together and
// forwards what it keeps to the live writers. One lock covers both streams:
// a caller may pass one writer for both, and the cap is shared.
type output struct {
	mu        sync.Mutex
	room      int64
	truncated bool
	detached  bool
	buf       [2]bytes.Buffer
	live      [2]io.Writer
}

func (o *output) write(i int, p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.detached {
		return
	}
	keep := p
	if int64(len(keep)) > o.room {
		keep = keep[:max(o.room, 0)]
		o.truncated = true
	}
	if len(keep) == 0 {
		return
	}
	o.room -= int64(len(keep))
	o.buf[i].Write(keep)
	if o.live[i] != nil {
		// A failed live write (the client went away) must not stop the
		// command; the capped copy is still returned.
		_, _ = o.live[i].Write(keep)
	}
}

// copy reads both pipes to EOF in the background; the channel closes when
// both are done. Reading continues past the cap (dropping) so a chatty
// command never blocks on a full pipe.
func (o *output) copy(stdout, stderr *os.File) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range []*os.File{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					o.write(i, buf[:n])
				}
				if err != nil {
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// detach stops keeping and forwarding output: the result is being returned
// while background processes may still write.
func (o *output) detach() {
	o.mu.Lock()
	o.detached = true
	o.mu.Unlock()
}

func (o *output) result() (stdout, stderr []byte, truncated bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf[0].Bytes(), o.buf[1].Bytes(), o.truncated
}

// failed is the result of a command that could not start.
func (o *output) failed(code int, msg string, start time.Time) workspace.ExecResult {
	o.write(1, []byte(msg))
	stdout, stderr, truncated := o.result()
	return workspace.ExecResult{ExitCode: code, Stdout: stdout, Stderr: stderr, OutputTruncated: truncated, Duration: time.Since(start)}
}
