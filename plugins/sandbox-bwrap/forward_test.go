//go:build linux

package bwrap

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForwardingKeepsCommandsAlive: connections to exposed ports do not
// kill the sandbox's running commands. The plugin enters a command's
// network namespace on an OS thread to dial; a command's parent-death
// signal follows the thread that started it, so a dialling thread that
// ends (instead of returning to the plugin's namespace) SIGKILLs whatever
// bwrap it happened to start.
//
// Which thread starts a command and which one dials is the Go scheduler's
// choice, so the test makes a hit likely rather than certain: several
// servers, each started from whatever thread runs its Exec, many
// connections, each of which dials into every server's namespace in turn
// until one accepts, and a plugin with many Ps. (The thread that starts a
// command usually goes on to wait for it in a blocking system call, where
// no dial can take it; with idle Ps about, another thread more often takes
// that wait over, as on a machine with many cores. On this 2-core test
// machine the broken forwarder failed 3 runs in 8 with the default and 8
// in 8 with GOMAXPROCS=32.)
func TestForwardingKeepsCommandsAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a plugin and sandboxed servers")
	}
	const (
		servers = 8
		conns   = 5    // per server
		port0   = 8766 // server i listens on port0+i, in its own namespace
	)
	c, _ := launchProcess(t, "agenthost-sandbox-bwrap", []string{"-network=" + NetworkLoopback}, []string{"GOMAXPROCS=32"},
		Config{Root: filepath.Join(reachableDir(t), "sandboxes")})
	id, ws := create(t, c)
	type result struct {
		res workspace.ExecResult
		err error
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make([]chan result, servers)
	addr := make([]string, servers)
	for i := range servers {
		// Answers conns connections, one at a time, then exits 0.
		server := fmt.Sprintf(`
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", %d))
s.listen(%d)
for i in range(%d):
    c, _ = s.accept()
    c.sendall(b"reply %%d\n" %% i)
    c.close()
print("served")
`, port0+i, conns, conns)
		done[i] = make(chan result, 1)
		go func() {
			res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"python3", "-c", server}})
			done[i] <- result{res, err}
		}()
		ep, err := c.ExposePort(context.Background(), id, port0+i)
		require.NoError(t, err)
		addr[i] = ep.Address
	}

	// ask opens one connection and returns what the far end sent: nothing
	// when no command of the sandbox accepts on the port (yet).
	ask := func(addr string) string {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return ""
		}
		defer conn.Close()
		b, _ := io.ReadAll(conn)
		return string(b)
	}
	for i := range servers {
		// The first connection waits for the server to listen; a server
		// that ended meanwhile has its result reported.
		var first string
		var ended *result
		require.Eventually(t, func() bool {
			select {
			case r := <-done[i]:
				ended = &r
				return true
			default:
			}
			first = ask(addr[i])
			return first != ""
		}, 30*time.Second, 50*time.Millisecond, "server %d never answered", i)
		if ended != nil {
			require.Failf(t, "a server ended before it answered", "server %d: exit %d, signal %q, error %v, stderr %s",
				i, ended.res.ExitCode, ended.res.Signal, ended.err, ended.res.Stderr)
		}
		require.Equal(t, "reply 0\n", first)
	}
	// Each server accepts connections in turn and queues the next in its
	// backlog, so every later one is answered at the first try unless the
	// server has died.
	for n := 1; n < conns; n++ {
		for i := range servers {
			require.Equal(t, "reply "+strconv.Itoa(n)+"\n", ask(addr[i]), "server %d, connection %d: the server no longer answers", i, n)
		}
	}
	for i := range servers {
		r := <-done[i]
		require.NoError(t, r.err)
		assert.Equal(t, 0, r.res.ExitCode, "server %d: stderr: %s", i, r.res.Stderr)
		assert.Empty(t, r.res.Signal, "server %d was killed", i)
		assert.Equal(t, "served\n", string(r.res.Stdout), "server %d", i)
	}
}
