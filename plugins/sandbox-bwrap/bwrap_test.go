//go:build linux

package bwrap

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/sandboxtest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConformance runs the SDK's kit against the real binary. The loopback
// policy is used so the expose-port check runs rather than skipping.
// LocalProcesses is false: pids the kit's commands print are pids of their
// own namespaces; TestProcessesDie checks the kills from the host's /proc.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) *sandbox.Client {
		return bwrapPlugin(t, NetworkLoopback, Config{})
	}, sandboxtest.Options{LocalProcesses: false, TracksChanges: true, ListsChanges: true, Settles: true})
}

func create(t *testing.T, c *sandbox.Client, files ...sandbox.File) (string, workspace.Workspace) {
	t.Helper()
	id := fmt.Sprintf("t-%d", time.Now().UnixNano())
	_, err := c.Create(context.Background(), sandbox.CreateSpec{ID: id, Files: files})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background(), id) })
	return id, c.Workspace(id)
}

func run(t *testing.T, ws workspace.Workspace, req workspace.ExecRequest) workspace.ExecResult {
	t.Helper()
	res, err := ws.Exec(context.Background(), req)
	require.NoError(t, err)
	return res
}

func sh(script string) workspace.ExecRequest {
	return workspace.ExecRequest{Argv: []string{"sh", "-c", script}}
}

// TestProcessesDie: a timeout, a cancel and Stop kill every process of a
// command, background ones included, and nothing outlives its command.
func TestProcessesDie(t *testing.T) {
	c := bwrapPlugin(t, NetworkNone, Config{})
	ctx := context.Background()
	// Each marker is a sleep length no other process uses.
	marker := func(name string) string { return fmt.Sprintf("%d.%d", 7000+len(name), time.Now().UnixNano()%1e6) }
	// Generous: "did it stop at all", not speed.
	const gone = 20 * time.Second

	t.Run("timeout", func(t *testing.T) {
		_, ws := create(t, c)
		m := marker("timeout")
		res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep " + m + " & sleep " + m}, Timeout: time.Second})
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.Eventually(t, func() bool { return markerGone(m) }, gone, 50*time.Millisecond)
	})
	t.Run("cancel", func(t *testing.T) {
		_, ws := create(t, c)
		m := marker("cancel")
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			for !strings.Contains(allCmdlines(), m) {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}()
		_, err := ws.Exec(cctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep " + m + " & sleep " + m}})
		assert.ErrorIs(t, err, context.Canceled)
		assert.Eventually(t, func() bool { return markerGone(m) }, gone, 50*time.Millisecond)
	})
	t.Run("background process does not outlive its command", func(t *testing.T) {
		_, ws := create(t, c)
		m := marker("background")
		res := run(t, ws, sh("sleep "+m+" > /dev/null 2>&1 & echo started"))
		assert.Equal(t, "started\n", string(res.Stdout))
		assert.Eventually(t, func() bool { return markerGone(m) }, gone, 50*time.Millisecond)
	})
	t.Run("stop", func(t *testing.T) {
		id, ws := create(t, c)
		m := marker("stop")
		done := make(chan error, 1)
		go func() {
			_, err := ws.Exec(ctx, sh("sleep 1000 & sleep "+m+" & wait"))
			done <- err
		}()
		require.Eventually(t, func() bool { return strings.Contains(allCmdlines(), m) }, gone, 20*time.Millisecond, "the command never started")
		require.NoError(t, c.Stop(ctx, id))
		select {
		case err := <-done:
			// Killed (a result) or refused as stopped, depending on timing.
			if err != nil {
				assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "exec ends with the sandbox: %v", err)
			}
		case <-time.After(gone):
			t.Fatal("exec did not return after stop")
		}
		assert.True(t, markerGone(m), "a process of a stopped sandbox survived")
	})
}

func allCmdlines() string {
	var b strings.Builder
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		s, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		b.Write(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestEscapes: a command reaching past its sandbox fails, with the reason
// on stderr, and changes nothing.
func TestEscapes(t *testing.T) {
	data := reachableDir(t) // laid out like the host's data dir
	root := filepath.Join(data, "sandboxes", "bwrap")
	db := filepath.Join(data, "agenthost.db")
	require.NoError(t, os.WriteFile(db, []byte("SQLite format 3\x00 host secrets"), 0o644))
	c := bwrapPlugin(t, NetworkNone, Config{Root: root})
	ctx := context.Background()
	_, ws := create(t, c, sandbox.File{Path: "a.txt", Data: []byte("mine")})
	create(t, c, sandbox.File{Path: "secret.txt", Data: []byte("other sandbox")})

	denied := []struct{ name, script, stderr string }{
		{"read /etc/shadow", "cat /etc/shadow", "No such file"},
		{"read through /proc/1/root", "cat /proc/1/root/etc/shadow", "No such file"},
		{"write /etc", "echo x > /etc/owned", "Read-only file system"},
		{"write /", "echo x > /owned", "Read-only file system"},
		{"write /usr", "echo x > /usr/owned", "Read-only file system"},
		{"read the database", "cat " + db, "No such file"},
		{"list the data dir", "ls " + data, "No such file"},
		{"write the data dir", "echo x > " + filepath.Join(data, "owned"), "nonexistent"},
		{"climb out of the workspace", "cat ../agenthost.db ../../agenthost.db ../../../agenthost.db", "No such file"},
		{"another sandbox's files", "cat " + filepath.Join(root, "*", "workspace", "secret.txt"), "No such file"},
		// The test process is a host process: invisible and unsignalable.
		{"signal a host process", fmt.Sprintf("kill -0 %d", os.Getpid()), "No such process"},
	}
	for _, tc := range denied {
		res := run(t, ws, sh(tc.script))
		assert.NotEqual(t, 0, res.ExitCode, "%s: %s", tc.name, res.Stdout)
		assert.NotContains(t, string(res.Stdout), "host secrets", tc.name)
		assert.NotContains(t, string(res.Stdout), "other sandbox", tc.name)
		assert.Contains(t, string(res.Stderr), tc.stderr, tc.name)
	}
	b, err := os.ReadFile(db)
	require.NoError(t, err)
	assert.Equal(t, "SQLite format 3\x00 host secrets", string(b))
	assert.NoFileExists(t, filepath.Join(data, "owned"))
	// Only the sandbox's own processes are in its /proc (the shell, its
	// pipeline and bwrap's init), never the host's hundreds.
	res := run(t, ws, sh("ls /proc | grep -c '^[0-9][0-9]*$'"))
	n, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	require.NoError(t, err, "%s %s", res.Stdout, res.Stderr)
	assert.Less(t, n, 10, "host processes are not visible")
	res = run(t, ws, sh("id -u; ls /etc; cat /proc/self/status | grep CapEff"))
	assert.Equal(t, 0, res.ExitCode, string(res.Stderr))
	assert.True(t, strings.HasPrefix(string(res.Stdout), "1000\n"), "unprivileged inside: %s", res.Stdout)
	assert.NotContains(t, string(res.Stdout), "shadow", "/etc is an allow-list")
	assert.Contains(t, string(res.Stdout), "CapEff:\t0000000000000000", "no capabilities")

	// A symlink to / made by a command, then used through the file API.
	res = run(t, ws, sh("ln -s / rootlink && ln -s "+db+" dblink"))
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	for _, p := range []string{"rootlink/etc/shadow", "rootlink/etc/passwd", "dblink", "rootlink" + db} {
		_, _, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "read %s: %v", p, err)
		_, err = ws.WriteFile(ctx, p, []byte("owned"), 0)
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "write %s: %v", p, err)
	}
	b, err = os.ReadFile(db)
	require.NoError(t, err)
	assert.Equal(t, "SQLite format 3\x00 host secrets", string(b))

	// Files the host writes stay editable by commands (ownership).
	_, err = ws.WriteFile(ctx, "deep/new/file.txt", []byte("host wrote\n"), 0)
	require.NoError(t, err)
	res = run(t, ws, sh("echo cmd >> deep/new/file.txt && cat deep/new/file.txt && mkdir deep/new/sub"))
	assert.Equal(t, "host wrote\ncmd\n", string(res.Stdout), string(res.Stderr))
}

// TestNetworkPolicies: with none a command cannot connect to a listener of
// the host's 127.0.0.1; with host it can (the control); with loopback the
// host reaches a server in the sandbox through ExposePort, and the command
// still cannot reach out.
func TestNetworkPolicies(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	accepted := make(chan struct{}, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	connect := sh("exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected")
	connect.Argv = []string{"bash", "-c", connect.Argv[2]}

	for _, network := range []string{NetworkNone, NetworkLoopback} {
		_, ws := create(t, bwrapPlugin(t, network, Config{}))
		res := run(t, ws, connect)
		assert.NotEqual(t, 0, res.ExitCode, network)
		assert.Contains(t, string(res.Stderr), "Connection refused", "%s: the sandbox's own loopback has no listener", network)
		res = run(t, ws, workspace.ExecRequest{Argv: []string{"bash", "-c", "exec 3<>/dev/tcp/1.1.1.1/53"}})
		assert.NotEqual(t, 0, res.ExitCode, network)
		assert.Contains(t, string(res.Stderr), "unreachable", "%s: no route out", network)
	}
	select {
	case <-accepted:
		t.Fatal("a sandbox without network reached the host's listener")
	default:
	}

	_, ws := create(t, bwrapPlugin(t, NetworkHost, Config{}))
	res := run(t, ws, connect)
	assert.Equal(t, "connected\n", string(res.Stdout), "control: the host policy connects: %s", res.Stderr)
	<-accepted

	// Loopback: a server started through Exec, reached by the host.
	c := bwrapPlugin(t, NetworkLoopback, Config{})
	id, ws := create(t, c, sandbox.File{Path: "www/index.html", Data: []byte("served from the sandbox")})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"python3", "-m", "http.server", "-d", "www", "-b", "127.0.0.1", "8765"}})
	}()
	ep, err := c.ExposePort(context.Background(), id, 8765)
	require.NoError(t, err)
	assert.Equal(t, "served from the sandbox", getWhenServed(t, ep.URL+"/index.html"))
}

// TestLimits: a fork bomb, 10 GB of output, a file bigger than the limit
// and a memory hog each end with the command, and the sandbox still works.
func TestLimits(t *testing.T) {
	// A uid of its own, so the fork bomb's RLIMIT_NPROC count is its own.
	c := bwrapPlugin(t, NetworkNone, Config{UID: 60231, GID: 60231, MaxProcesses: 64,
		ExecFileSizeBytes: 10 << 20, MemoryBytes: 512 << 20, TmpBytes: 16 << 20, OutputLimitBytes: 1 << 20})
	ctx := context.Background()
	_, ws := create(t, c)

	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"bash", "-c", "f(){ f | f & }; f; sleep 5"}, Timeout: 10 * time.Second})
	require.NoError(t, err, "a fork bomb is a result")
	res = run(t, ws, sh("echo alive"))
	assert.Equal(t, "alive\n", string(res.Stdout), "the sandbox survives a fork bomb: %s", res.Stderr)
	res = run(t, ws, sh("grep -E 'Max (processes|address space|file size|cpu time)' /proc/self/limits"))
	assert.Regexp(t, `Max processes\s+64\s+64`, string(res.Stdout))
	assert.Regexp(t, `Max address space\s+536870912\s+536870912`, string(res.Stdout))
	assert.Regexp(t, `Max file size\s+10485760\s+10485760`, string(res.Stdout))

	res = run(t, ws, workspace.ExecRequest{Argv: []string{"head", "-c", "10000000000", "/dev/zero"}, Timeout: 20 * time.Second})
	assert.True(t, res.OutputTruncated, "10 GB of output is capped")
	assert.LessOrEqual(t, len(res.Stdout)+len(res.Stderr), 1<<20)

	res = run(t, ws, sh("head -c 10000000000 /dev/zero > big"))
	assert.NotEqual(t, 0, res.ExitCode, "RLIMIT_FSIZE stops a 10 GB file")
	fi, err := ws.Stat(ctx, "big")
	require.NoError(t, err)
	assert.LessOrEqual(t, fi.Size, int64(10<<20))
	res = run(t, ws, sh("head -c 100000000 /dev/zero > /tmp/big"))
	assert.NotEqual(t, 0, res.ExitCode, "the private /tmp is capped too")

	res = run(t, ws, workspace.ExecRequest{Argv: []string{"python3", "-c", "x = bytearray(2 << 30)"}})
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Contains(t, string(res.Stderr), "MemoryError", "RLIMIT_AS refuses 2 GiB")
	res = run(t, ws, sh("echo still alive"))
	assert.Equal(t, "still alive\n", string(res.Stdout))
}

// TestUnhealthyWithoutBwrap: a missing bwrap leaves the plugin up and
// answering, unhealthy with the reason, and refusing sandboxes.
func TestUnhealthyWithoutBwrap(t *testing.T) {
	c := bwrapPlugin(t, NetworkNone, Config{BwrapPath: "/nonexistent/bwrap"})
	ctx := context.Background()
	h, err := c.Health(ctx)
	require.NoError(t, err)
	assert.False(t, h.Healthy)
	assert.Contains(t, h.Reason, "bubblewrap not found at /nonexistent/bwrap")
	_, err = c.Create(ctx, sandbox.CreateSpec{ID: "x"})
	assert.True(t, plugin.HasCode(err, plugin.CodeUnavailable), "%v", err)
}

func TestConfigure(t *testing.T) {
	ctx := context.Background()
	dir := reachableDir(t)
	for _, tc := range []struct{ name, raw, field string }{
		{"unknown key", `{"roott":"/x"}`, "config"},
		{"wrong type", `{"memory_bytes":"5"}`, "config"},
		{"negative", `{"max_processes":-1}`, "max_processes"},
		{"bad network", `{"network":"wide"}`, "network"},
		{"network differs from the flag", `{"network":"host"}`, "network"},
		{"relative bwrap", `{"bwrap_path":"bwrap"}`, "bwrap_path"},
	} {
		p, err := NewWithLogger(Options{Helper: "/bin/false"}, hclog.NewNullLogger())
		require.NoError(t, err)
		err = p.Configure(ctx, json.RawMessage(tc.raw))
		assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "%s: %v", tc.name, err)
		var pe *plugin.Error
		if assert.ErrorAs(t, err, &pe, tc.name) {
			assert.Equal(t, tc.field, pe.Field, tc.name)
		}
	}
	p, err := NewWithLogger(Options{Helper: "/bin/false", Network: NetworkHost}, hclog.NewNullLogger())
	require.NoError(t, err)
	require.NoError(t, p.Configure(ctx, json.RawMessage(`{"network":"host","root":"`+dir+`/r"}`)))
	assert.Equal(t, "exec,loopback,network,services", p.Info().Capabilities[plugin.CapabilityProvides])
	h := p.Health(ctx)
	assert.False(t, h.Healthy, "the helper /bin/false cannot start a sandbox")
	assert.Contains(t, h.Reason, "cannot start a sandbox")
	_, err = NewWithLogger(Options{Network: "wide"}, hclog.NewNullLogger())
	assert.Error(t, err)
	for network, want := range map[string]string{NetworkNone: "exec", NetworkLoopback: "exec,loopback,services"} {
		p, err := NewWithLogger(Options{Helper: "/bin/false", Network: network}, hclog.NewNullLogger())
		require.NoError(t, err)
		assert.Equal(t, want, p.Info().Capabilities[plugin.CapabilityProvides])
		assert.Equal(t, plugin.IsolationNamespaces, p.Info().Capabilities[plugin.CapabilityIsolation], "every policy runs commands in namespaces")
	}
}
