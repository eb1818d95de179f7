package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostSecret is set in the test process; a backend that passes its own
// environment on to commands leaks it.
const hostSecret = "AGENTHOST_KIT_HOST_SECRET"

// lockedBuffer is a live output writer that may be written from the
// goroutine receiving the stream while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (k *kit) testExec(t *testing.T) {
	// os.Setenv rather than t.Setenv, which panics under t.Parallel.
	require.NoError(t, os.Setenv(hostSecret, "leaked"))
	t.Cleanup(func() { _ = os.Unsetenv(hostSecret) })
	ctx := context.Background()
	_, ws := k.create(t, fileSet())
	var live, liveErr lockedBuffer
	res, err := ws.Exec(ctx, workspace.ExecRequest{
		Argv: []string{"sh", "-c", "cat README.md; echo oops >&2; exit 3"}, Stdout: &live, Stderr: &liveErr,
	})
	require.NoError(t, err, "a non-zero exit is a result, not an error")
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "# app\n", string(res.Stdout))
	assert.Equal(t, "oops\n", string(res.Stderr))
	assert.Equal(t, "# app\n", live.String(), "stdout streams to the writer")
	assert.Equal(t, "oops\n", liveErr.String(), "stderr streams to the writer")
	assert.False(t, res.TimedOut)
	assert.False(t, res.OutputTruncated)

	cases := []struct {
		name   string
		req    workspace.ExecRequest
		exit   int
		stdout string
	}{
		{"working folder", workspace.ExecRequest{Argv: []string{"cat", "x.json"}, Dir: "src/deep/nested"}, 0, `{"a":1}`},
		{"stdin", workspace.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("piped in")}, 0, "piped in"},
		{"executable from the file set", workspace.ExecRequest{Argv: []string{"./bin/run.sh", "ok"}}, 0, "ran ok\n"},
		{"extra env", workspace.ExecRequest{Argv: []string{"sh", "-c", "echo $KIT_VAR"}, Env: []string{"KIT_VAR=kit value"}}, 0, "kit value\n"},
		{"host env does not leak", workspace.ExecRequest{Argv: []string{"sh", "-c", "echo ${" + hostSecret + ":-clean}"}}, 0, "clean\n"},
		{"missing command is 127", workspace.ExecRequest{Argv: []string{"no-such-command-agenthost-kit"}}, 127, ""},
		{"writes land in the workspace", workspace.ExecRequest{Argv: []string{"sh", "-c", "echo made > made.txt && cat made.txt"}}, 0, "made\n"},
	}
	for _, tc := range cases {
		res, err := ws.Exec(ctx, tc.req)
		if !assert.NoError(t, err, tc.name) {
			continue
		}
		assert.Equal(t, tc.exit, res.ExitCode, "%s: %s", tc.name, res.Stderr)
		assert.Equal(t, tc.stdout, string(res.Stdout), tc.name)
	}
	data, _, err := ws.ReadFile(ctx, "made.txt", workspace.ReadOptions{})
	require.NoError(t, err, "the file API sees what commands wrote")
	assert.Equal(t, "made\n", string(data))

	res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "src/deep"})
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(string(res.Stdout)), "/src/deep"), "pwd: %s", res.Stdout)
	_, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "../.."})
	code(t, err, plugin.CodePathDenied, "exec outside the workspace")
	_, err = ws.Exec(ctx, workspace.ExecRequest{})
	code(t, err, plugin.CodeInvalidArgument, "exec without argv")
}

func (k *kit) testExecTimeout(t *testing.T) {
	ctx := context.Background()
	_, ws := k.create(t, nil)
	start := time.Now()
	res, err := ws.Exec(ctx, workspace.ExecRequest{
		Argv:    []string{"sh", "-c", "sleep 30 & echo $! > child; sleep 30"},
		Timeout: 300 * time.Millisecond,
	})
	require.NoError(t, err, "a timeout is a result, not an error")
	assert.True(t, res.TimedOut)
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Less(t, time.Since(start), promptly, "a timed-out command (and its children) must be killed")
	k.assertGone(t, readPid(t, ws, "child"), "the background child of a timed-out command survived")
}

func (k *kit) testOutputCap(t *testing.T) {
	ctx := context.Background()
	_, ws := k.create(t, nil)
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"head", "-c", "100000", "/dev/zero"}, OutputLimit: 1000})
	require.NoError(t, err)
	assert.True(t, res.OutputTruncated)
	assert.Len(t, res.Stdout, 1000)
	assert.Equal(t, 0, res.ExitCode, "dropping output must not fail the command")

	res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "head -c 800 /dev/zero; head -c 800 /dev/zero >&2"}, OutputLimit: 1000})
	require.NoError(t, err)
	assert.True(t, res.OutputTruncated)
	assert.Equal(t, 1000, len(res.Stdout)+len(res.Stderr), "stdout and stderr share the cap")
}

func (k *kit) testExecCancel(t *testing.T) {
	_, ws := k.create(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 30 & echo $! > child; sleep 30"}})
	assert.True(t, errors.Is(err, context.Canceled), "a cancelled exec reports the cancellation: %v", err)
	assert.Less(t, time.Since(start), promptly)
	k.assertGone(t, readPid(t, ws, "child"), "a cancelled command's background child survived")
}

func (k *kit) testStop(t *testing.T) {
	ctx := context.Background()
	id, ws := k.create(t, fileSet())
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 300 & echo $! > pid"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	pid := readPid(t, ws, "pid")

	require.NoError(t, k.c.Stop(ctx, id))
	require.NoError(t, k.c.Stop(ctx, id), "stopping twice is fine")
	_, err = k.c.Get(ctx, id)
	code(t, err, plugin.CodeNotFound, "get after stop")
	_, _, err = ws.ReadFile(ctx, "README.md", workspace.ReadOptions{})
	code(t, err, plugin.CodeNotFound, "read after stop")
	_, err = ws.WriteFile(ctx, "x", []byte("x"), 0)
	code(t, err, plugin.CodeNotFound, "write after stop")
	_, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}})
	code(t, err, plugin.CodeNotFound, "exec after stop")
	_, err = k.c.Snapshot(ctx, id, nil)
	code(t, err, plugin.CodeNotFound, "snapshot after stop")
	k.assertGone(t, pid, "a process left running in the background survived stop")
}
