// Package sandboxtest is the sandbox conformance kit: one call from a test
// checks a backend's whole contract through its real gRPC client — create,
// files, confinement, exec limits, snapshot, stop. A plugin author calls Run
// with clients built by plugintest.Sandbox (in-process) or from a real
// plugin binary.
//
// The kit needs a POSIX userland in the sandbox (sh, cat, sleep, ln, head,
// pwd, env) and /etc/hostname outside the workspace. Errors are compared by
// code (plugin.HasCode), never by message.
package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Options say what the kit may assume about the backend.
type Options struct {
	// LocalProcesses: the sandbox's processes run on this machine in this
	// pid namespace, so the kit can check (through /proc on Linux) that a
	// timeout, a cancel and Stop really kill them. Leave it false for a backend on
	// another machine or in its own pid namespace.
	LocalProcesses bool
	// TracksChanges: the backend implements sandbox.ChangeTracker, so the
	// kit checks that a snapshot since an earlier one sends the content of
	// the changed files only. Without it the kit checks only that such a
	// snapshot holds the right files.
	TracksChanges bool
	// ListsChanges: the backend implements sandbox.ChangeLister, so the kit
	// checks that a snapshot of changes since an earlier one is one, and
	// passes only what changed. Without it the kit checks only that such a
	// snapshot, read as it says it is, holds the right files.
	ListsChanges bool
	// Settles: the backend vouches (sandbox.Settler) for a sandbox in
	// which nothing runs, so the kit checks that it does. Without it the
	// kit checks only that the backend never vouches while a process runs.
	Settles bool
}

// Run checks the backend behind newClient. It calls newClient once and
// runs every subtest against that client, each with sandboxes of its own.
func Run(t *testing.T, newClient func(t *testing.T) *sandbox.Client, opts Options) {
	k := &kit{c: newClient(t), opts: opts}
	t.Run("info and health", k.testInfo)
	t.Run("create and read back", k.testCreate)
	t.Run("create refusals", k.testCreateRefusals)
	t.Run("file operations", k.testFileOps)
	t.Run("line ranges", k.testLineRanges)
	t.Run("confinement", k.testConfinement)
	t.Run("exec", k.testExec)
	t.Run("exec timeout", k.testExecTimeout)
	t.Run("exec output cap", k.testOutputCap)
	t.Run("exec cancellation", k.testExecCancel)
	t.Run("snapshot", k.testSnapshot)
	t.Run("snapshot reports what it leaves out", k.testSnapshotLeftOut)
	t.Run("host file limit", k.testHostFileLimit)
	t.Run("snapshot stream", k.testSnapshotStream)
	t.Run("snapshot since a generation", k.testSnapshotSince)
	t.Run("snapshot of changes", k.testSnapshotChanges)
	t.Run("snapshot sees what a background process wrote", k.testSnapshotSeesBackgroundWrites)
	t.Run("settled only when nothing runs", k.testSettled)
	t.Run("stop", k.testStop)
	t.Run("expose port", k.testExposePort)
	t.Run("services", k.testServices)
	t.Run("concurrent sandboxes", k.testConcurrent)
}

type kit struct {
	c    *sandbox.Client
	opts Options
}

// promptly bounds calls that must end early (a timeout, a cancel). It is
// generous on purpose: the point is "not after the 30 s sleep", not speed.
const promptly = 20 * time.Second

var seq atomic.Int64

// newID makes an id unique within the run and readable in a backend's logs.
func newID(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return fmt.Sprintf("kit-%d-%d-%s", os.Getpid(), seq.Add(1), strings.Trim(name, "-"))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// bigFile is 1 MiB and a bit of bytes that are not text, so that it spans
// several stream chunks and would show any text mangling.
func bigFile() []byte {
	return bytes.Repeat([]byte{0, 1, 2, 3, 250, 251, 252, 253}, (1<<20)/8+3)
}

// fileSet has nested folders, an empty file, an executable script and a
// file big enough to need several chunks.
func fileSet() []sandbox.File {
	return []sandbox.File{
		{Path: "README.md", Data: []byte("# app\n")},
		{Path: "src/main.ts", Data: []byte("line 1\nline 2\nline 3\n")},
		{Path: "src/deep/nested/x.json", Data: []byte(`{"a":1}`)},
		{Path: "empty.txt", Data: nil},
		{Path: "bin/run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\necho ran \"$@\"\n")},
		{Path: "assets/blob.bin", Data: bigFile()},
	}
}

// create makes a sandbox that is stopped when the test ends.
func (k *kit) create(t *testing.T, files []sandbox.File) (string, workspace.Workspace) {
	t.Helper()
	id := newID(t)
	info, err := k.c.Create(context.Background(), sandbox.CreateSpec{ID: id, ScopeKey: "chat-kit", Labels: map[string]string{"kit": "1"}, Files: files})
	require.NoError(t, err)
	assert.Equal(t, id, info.ID)
	assert.Equal(t, sandbox.StatusRunning, info.Status)
	t.Cleanup(func() { _ = k.c.Stop(context.Background(), id) })
	return id, k.c.Workspace(id)
}

// code asserts that err carries the given code.
func code(t *testing.T, err error, want string, msgAndArgs ...any) bool {
	t.Helper()
	if plugin.HasCode(err, want) {
		return true
	}
	return assert.Fail(t, fmt.Sprintf("want error code %s, got %v", want, err), msgAndArgs...)
}

// readPid reads a pid a command wrote into the workspace.
func readPid(t *testing.T, ws workspace.Workspace, path string) int {
	t.Helper()
	raw, _, err := ws.ReadFile(context.Background(), path, workspace.ReadOptions{})
	require.NoError(t, err)
	var pid int
	_, err = fmt.Sscan(string(raw), &pid)
	require.NoError(t, err, "pid file %s: %q", path, raw)
	return pid
}

// waitPid waits for a running command to have written its pid into the
// workspace: the shell creates the file before it writes the pid, so the
// file existing is not enough.
func waitPid(t *testing.T, ws workspace.Workspace, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		raw, _, err := ws.ReadFile(context.Background(), path, workspace.ReadOptions{})
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(raw), &pid)
		return err == nil && pid > 0
	}, promptly, 20*time.Millisecond, "pid file %s", path)
	return pid
}

func (k *kit) assertGone(t *testing.T, pid int, why string) {
	t.Helper()
	if k.opts.LocalProcesses {
		assert.Eventually(t, func() bool { return processGone(pid) }, 10*time.Second, 20*time.Millisecond, why)
	}
}

func (k *kit) testInfo(t *testing.T) {
	ctx := context.Background()
	info, err := k.c.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, plugin.KindSandbox, info.Kind)
	assert.NotEmpty(t, info.Name)
	assert.NotEmpty(t, info.Version)
	assert.Equal(t, plugin.APIVersion, info.APIVersion)
	h, err := k.c.Health(ctx)
	require.NoError(t, err)
	assert.True(t, h.Healthy, h.Reason)
}

func (k *kit) testConcurrent(t *testing.T) {
	ctx := context.Background()
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- func() error {
				id := newID(t)
				if _, err := k.c.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "n.txt", Data: []byte(id)}}}); err != nil {
					return fmt.Errorf("create %s: %w", id, err)
				}
				defer func() { _ = k.c.Stop(context.Background(), id) }()
				data, _, err := k.c.Workspace(id).ReadFile(ctx, "n.txt", workspace.ReadOptions{})
				if err != nil {
					return fmt.Errorf("read %s: %w", id, err)
				}
				if string(data) != id {
					return fmt.Errorf("sandbox %s holds %q: sandboxes share state", id, data)
				}
				res, err := k.c.Workspace(id).Exec(ctx, workspace.ExecRequest{Argv: []string{"cat", "n.txt"}})
				if err != nil || string(res.Stdout) != id {
					return fmt.Errorf("exec in %s: %q, %v", id, res.Stdout, err)
				}
				return k.c.Stop(ctx, id)
			}()
		}()
	}
	for range n {
		assert.NoError(t, <-errs)
	}
}
