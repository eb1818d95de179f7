package dirfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace"
	"golang.org/x/sys/unix"
)

// Exec defaults. 120 s matches the seed's tool_timeout_s; 1 MiB of output is
// far more than a model can use and small enough to keep memory flat.
const (
	DefaultExecTimeout = 120 * time.Second
	DefaultOutputLimit = 1 << 20
	// DefaultFileSizeLimit caps any file a command writes (RLIMIT_FSIZE).
	DefaultFileSizeLimit = 1 << 30
	// DefaultCPUSeconds caps a command's CPU time (RLIMIT_CPU).
	DefaultCPUSeconds = 600
)

// ExecLimits bound a command beyond what the request says.
type ExecLimits struct {
	Timeout     time.Duration
	OutputLimit int64
	// FileSize and CPUSeconds are rlimits applied to the started process.
	FileSize   uint64
	CPUSeconds uint64
}

// Groups tracks the process groups a workspace started so that stopping it
// can kill every process, including ones left in the background.
type Groups struct {
	mu   sync.Mutex
	pgid map[int]struct{}
}

func (g *Groups) add(pgid int) {
	g.mu.Lock()
	if g.pgid == nil {
		g.pgid = map[int]struct{}{}
	}
	g.pgid[pgid] = struct{}{}
	g.mu.Unlock()
}

// KillAll sends SIGKILL to every group ever started.
func (g *Groups) KillAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pgid := range g.pgid {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	g.pgid = nil
}

// capped keeps at most limit bytes across both streams and forwards what it
// keeps to an optional live writer.
type capped struct {
	mu        *sync.Mutex
	used      *int64
	limit     int64
	buf       bytes.Buffer
	live      io.Writer
	truncated *bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.limit - *c.used
	keep := p
	if int64(len(keep)) > room {
		keep = keep[:max(room, 0)]
		*c.truncated = true
	}
	*c.used += int64(len(keep))
	c.buf.Write(keep)
	c.mu.Unlock()
	if c.live != nil && len(keep) > 0 {
		_, _ = c.live.Write(keep)
	}
	// Report the whole write as consumed: dropping output past the cap must
	// not make the command fail with EPIPE.
	return len(p), nil
}

// LocalExec returns an ExecFunc that runs commands on this machine as the
// plugin's user: its own process group (so a timeout or cancel kills every
// process it started), killed if the plugin dies, a scrubbed environment,
// rlimits, a wall-clock timeout and an output cap. It confines nothing else:
// a command can read anything the user can. Isolating backends wrap argv.
func LocalExec(limits ExecLimits, groups *Groups) ExecFunc {
	if limits.Timeout == 0 {
		limits.Timeout = DefaultExecTimeout
	}
	if limits.OutputLimit == 0 {
		limits.OutputLimit = DefaultOutputLimit
	}
	if limits.FileSize == 0 {
		limits.FileSize = DefaultFileSizeLimit
	}
	if limits.CPUSeconds == 0 {
		limits.CPUSeconds = DefaultCPUSeconds
	}
	return func(ctx context.Context, root, dir string, req workspace.ExecRequest) (workspace.ExecResult, error) {
		timeout := limits.Timeout
		if req.Timeout > 0 && req.Timeout < timeout {
			timeout = req.Timeout
		}
		outLimit := limits.OutputLimit
		if req.OutputLimit > 0 && req.OutputLimit < outLimit {
			outLimit = req.OutputLimit
		}
		var mu sync.Mutex
		var used int64
		truncated := false
		stdout := &capped{mu: &mu, used: &used, limit: outLimit, live: req.Stdout, truncated: &truncated}
		stderr := &capped{mu: &mu, used: &used, limit: outLimit, live: req.Stderr, truncated: &truncated}

		cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + root, "LANG=C.UTF-8", "TMPDIR=/tmp"}, req.Env...)
		cmd.Stdin = bytes.NewReader(req.Stdin)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.WaitDelay = 2 * time.Second
		start := time.Now()
		if err := cmd.Start(); err != nil {
			// Like a shell: a command that cannot start is exit status 127.
			msg := []byte(err.Error() + "\n")
			return workspace.ExecResult{ExitCode: 127, Stderr: msg, Duration: time.Since(start)}, nil
		}
		pid := cmd.Process.Pid
		if groups != nil {
			groups.add(pid)
		}
		_ = unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limits.FileSize, Max: limits.FileSize}, nil)
		_ = unix.Prlimit(pid, unix.RLIMIT_CPU, &unix.Rlimit{Cur: limits.CPUSeconds, Max: limits.CPUSeconds}, nil)

		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		res := workspace.ExecResult{}
		var waitErr error
		select {
		case waitErr = <-done:
		case <-timer.C:
			res.TimedOut = true
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			waitErr = <-done
		case <-ctx.Done():
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-done
			return workspace.ExecResult{}, ctx.Err()
		}
		// Background processes the command left behind keep running (a dev
		// server, say) until the sandbox stops and kills every group.
		res.Duration = time.Since(start)
		res.ExitCode = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = unix.SignalName(ws.Signal())
			res.ExitCode = 128 + int(ws.Signal())
		}
		var exitErr *exec.ExitError
		if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
			return workspace.ExecResult{}, waitErr
		}
		mu.Lock()
		res.Stdout, res.Stderr, res.OutputTruncated = stdout.buf.Bytes(), stderr.buf.Bytes(), truncated
		mu.Unlock()
		return res, nil
	}
}
