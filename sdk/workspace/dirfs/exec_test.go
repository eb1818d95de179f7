package dirfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gone reports whether a process has ended: no /proc entry, or a zombie
// waiting for a reaper (in a container, pid 1 may never reap it).
func gone(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	return strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}

// readPid waits for a command to have written its pid file.
func readPid(t *testing.T, f *FS, name string) string {
	t.Helper()
	var pid string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(f.Root(), name))
		pid = strings.TrimSpace(string(b))
		return err == nil && pid != ""
	}, 5*time.Second, 10*time.Millisecond, "pid file %s", name)
	return pid
}

func TestExecResults(t *testing.T) {
	t.Setenv("DIRFS_HOST_SECRET", "leak")
	f, _ := newFS(t)
	ctx := context.Background()
	_, err := f.WriteFile(ctx, "notexec.sh", []byte("#!/bin/sh\necho hi\n"), 0o644)
	require.NoError(t, err)
	_, err = f.WriteFile(ctx, "exec.sh", []byte("#!/bin/sh\necho script $1\n"), 0o755)
	require.NoError(t, err)
	cases := []struct {
		name           string
		req            workspace.ExecRequest
		exit           int
		stdout, stderr string
		signal         string
	}{
		{"stdout, stderr, exit code", workspace.ExecRequest{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, 3, "out\n", "err\n", ""},
		{"working folder", workspace.ExecRequest{Argv: []string{"cat", "a.txt"}, Dir: "src"}, 0, "a\nb\nc", "", ""},
		{"stdin", workspace.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("from stdin")}, 0, "from stdin", "", ""},
		{"scrubbed env", workspace.ExecRequest{Argv: []string{"sh", "-c", `echo "$PATH|$LANG|${DIRFS_HOST_SECRET:-none}|$EXTRA"`}, Env: []string{"EXTRA=1"}}, 0, SandboxPATH + "|C.UTF-8|none|1\n", "", ""},
		{"relative executable", workspace.ExecRequest{Argv: []string{"./exec.sh", "x"}}, 0, "script x\n", "", ""},
		{"not found is 127", workspace.ExecRequest{Argv: []string{"no-such-command-agenthost"}}, 127, "", "no-such-command-agenthost: command not found\n", ""},
		{"missing path is 127", workspace.ExecRequest{Argv: []string{"./missing"}}, 127, "", "", ""},
		{"not executable is 126", workspace.ExecRequest{Argv: []string{"./notexec.sh"}}, 126, "", "", ""},
		{"killed by a signal", workspace.ExecRequest{Argv: []string{"sh", "-c", "kill -TERM $$"}}, 143, "", "", "SIGTERM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := f.Exec(ctx, tc.req)
			require.NoError(t, err)
			assert.Equal(t, tc.exit, res.ExitCode, "stderr: %s", res.Stderr)
			assert.Equal(t, tc.stdout, string(res.Stdout))
			if cannotStart := tc.exit == 126 || tc.exit == 127; cannotStart && tc.stderr == "" {
				assert.NotEmpty(t, res.Stderr, "a command that cannot start says why")
			} else {
				assert.Equal(t, tc.stderr, string(res.Stderr))
			}
			assert.Equal(t, tc.signal, res.Signal)
			assert.False(t, res.TimedOut)
			assert.Positive(t, res.Duration)
		})
	}

	res, err := f.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "echo $HOME"}})
	require.NoError(t, err)
	assert.Equal(t, f.Root()+"\n", string(res.Stdout), "HOME is the workspace")

	badReqs := []struct {
		req  workspace.ExecRequest
		code string
	}{
		{workspace.ExecRequest{}, plugin.CodeInvalidArgument},
		{workspace.ExecRequest{Argv: []string{"echo", "a\x00b"}}, plugin.CodeInvalidArgument},
		{workspace.ExecRequest{Argv: []string{"env"}, Env: []string{"NOEQUALS"}}, plugin.CodeInvalidArgument},
		{workspace.ExecRequest{Argv: []string{"env"}, Env: []string{"=x"}}, plugin.CodeInvalidArgument},
		{workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "../.."}, plugin.CodePathDenied},
		{workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "missing"}, plugin.CodeNotFound},
		{workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "src/a.txt"}, plugin.CodeInvalidArgument},
	}
	for _, tc := range badReqs {
		_, err := f.Exec(ctx, tc.req)
		assert.True(t, plugin.HasCode(err, tc.code), "%+v: %v, want %s", tc.req, err, tc.code)
	}
	none, err := New(f.Root(), nil)
	require.NoError(t, err)
	_, err = none.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}})
	assert.True(t, plugin.HasCode(err, plugin.CodeUnsupported), "%v", err)
}

// firstWrite signals the first time anything is written to it.
type firstWrite struct {
	once sync.Once
	ch   chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

func TestExecStreamsOutput(t *testing.T) {
	f, _ := newFS(t)
	live := &firstWrite{ch: make(chan struct{})}
	done := make(chan workspace.ExecResult, 1)
	go func() {
		res, _ := f.Exec(context.Background(), workspace.ExecRequest{Argv: []string{"sh", "-c", "echo first; sleep 1; echo second"}, Stdout: live})
		done <- res
	}()
	select {
	case <-live.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no output streamed")
	}
	select {
	case <-done:
		t.Fatal("output arrived only when the command ended")
	default:
	}
	res := <-done
	assert.Equal(t, "first\nsecond\n", string(res.Stdout))
}

func TestExecTimeoutKillsTheGroup(t *testing.T) {
	f, _ := newFS(t)
	start := time.Now()
	res, err := f.Exec(context.Background(), workspace.ExecRequest{
		Argv: []string{"sh", "-c", "sleep 30 & echo $! > child; sleep 30"}, Timeout: 300 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Equal(t, "SIGKILL", res.Signal)
	assert.Less(t, time.Since(start), 10*time.Second)
	pid := readPid(t, f, "child")
	assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 20*time.Millisecond,
		"the background child of a timed-out command survived")
}

func TestExecLimitCaps(t *testing.T) {
	groups := &Groups{}
	t.Cleanup(groups.Close)
	dir := t.TempDir()
	f, err := New(dir, LocalExec(ExecLimits{Timeout: 200 * time.Millisecond, OutputLimit: 1500, FileSize: 4096}, groups))
	require.NoError(t, err)
	ctx := context.Background()

	res, err := f.Exec(ctx, workspace.ExecRequest{Argv: []string{"sleep", "30"}, Timeout: time.Hour})
	require.NoError(t, err)
	assert.True(t, res.TimedOut, "a request cannot raise the configured timeout")

	res, err = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"head", "-c", "100000", "/dev/zero"}, OutputLimit: 1000})
	require.NoError(t, err)
	assert.True(t, res.OutputTruncated)
	assert.Len(t, res.Stdout, 1000, "the request lowered the cap")
	assert.Equal(t, 0, res.ExitCode, "dropping output must not fail the command")

	res, err = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "head -c 1000 /dev/zero; head -c 1000 /dev/zero >&2"}})
	require.NoError(t, err)
	assert.True(t, res.OutputTruncated)
	assert.Equal(t, 1500, len(res.Stdout)+len(res.Stderr), "stdout and stderr share the cap")

	// The sleep lets prlimit land before the write (it applies after start).
	res, err = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 0.1; head -c 10000 /dev/zero > big"}})
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, "big"))
	require.NoError(t, err)
	assert.Equal(t, int64(4096), st.Size(), "RLIMIT_FSIZE stops the write (exit %d)", res.ExitCode)
}

func TestExecCancelKillsTheGroup(t *testing.T) {
	f, _ := newFS(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the command has started its background child.
		defer cancel()
		for i := 0; i < 500; i++ {
			if b, _ := os.ReadFile(filepath.Join(f.Root(), "child")); len(b) > 0 && b[len(b)-1] == '\n' {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err := f.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 30 & echo $! > child; sleep 30"}})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Less(t, time.Since(start), 10*time.Second)
	pid := readPid(t, f, "child")
	assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 20*time.Millisecond)
}

func TestBackgroundProcessesLiveUntilClose(t *testing.T) {
	groups := &Groups{}
	f, err := New(t.TempDir(), LocalExec(ExecLimits{}, groups))
	require.NoError(t, err)
	ctx := context.Background()
	// A background process that keeps logging to the inherited stdout, like
	// a dev server: it must not die of SIGPIPE once Exec has returned.
	start := time.Now()
	res, err := f.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c",
		"(while true; do echo tick; sleep 0.1; done) & echo $! > pid"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Less(t, time.Since(start), 5*time.Second, "Exec returns though the pipes stay open")
	pid := readPid(t, f, "pid")
	time.Sleep(time.Second)
	assert.False(t, gone(pid), "the background process was killed when Exec returned")
	assert.Equal(t, 1, groups.Running())

	groups.Close()
	assert.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 20*time.Millisecond, "Close kills what was left")
	assert.Equal(t, 0, groups.Running())
	_, err = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}})
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "no command runs after Close: %v", err)
}

func TestProcStart(t *testing.T) {
	start, ok := procStart(os.Getpid())
	require.True(t, ok)
	assert.Positive(t, start)
	_, ok = procStart(1 << 30)
	assert.False(t, ok)
}

// TestExecOwnSessionWithoutTerminal: a command leads a session and a
// process group of its own (the kills target the group; wrappers such as
// bwrap rely on the session instead of making their own) and has no
// controlling terminal, even when the plugin has one.
func TestExecOwnSessionWithoutTerminal(t *testing.T) {
	f, _ := newFS(t)
	res, err := f.Exec(context.Background(), workspace.ExecRequest{Argv: []string{"sh", "-c", "cat /proc/$$/stat"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	st := string(res.Stdout)
	pid, _, _ := strings.Cut(st, " ")
	// After the command name: state ppid pgrp session tty_nr ...
	fields := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
	require.GreaterOrEqual(t, len(fields), 5, st)
	assert.Equal(t, pid, fields[2], "process group")
	assert.Equal(t, pid, fields[3], "session")
	assert.Equal(t, "0", fields[4], "controlling terminal")
}
