package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeKeepsItsSocketsInItsOwnFolder: the host and its plugins make
// their Unix sockets in a folder of the serve process's own, not loose in
// the temporary folder. A host killed with SIGKILL (its plugins die with
// it, by the kernel's hand) cannot remove them; the next host to start
// removes that folder, and a host that stops normally removes its own.
func TestServeKeepsItsSocketsInItsOwnFolder(t *testing.T) {
	bin := buildAgenthost(t)
	plugins := pluginDir(t)
	// Short, unlike t.TempDir's: a Unix socket's path has at most 107 bytes.
	tmp, err := os.MkdirTemp("", "ahserve-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o755)) // the sandboxes' root is in it
	configs := t.TempDir()
	for name, body := range map[string]string{
		"mock": "plugin \"mock\" {\n  kind = \"engine\"\n  command = \"agenthost-engine-mock\"\n}\n",
		// The local sandbox serves toolpacks on a socket of its own too.
		"local": fmt.Sprintf("plugin \"local\" {\n  kind = \"sandbox\"\n  command = \"agenthost-sandbox-local\"\n  config {\n    root = %q\n  }\n}\n", filepath.Join(tmp, "sandboxes")),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(configs, name+".hcl"), []byte(body), 0o644))
	}
	data := t.TempDir()

	serve := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "AGENTHOST_LISTEN=127.0.0.1:0", "AGENTHOST_DATA_DIR="+data,
			"AGENTHOST_PLUGIN_CONFIG_DIR="+configs, "AGENTHOST_PLUGIN_DIR="+plugins, "AGENTHOST_LOG_LEVEL=error", "DATABASE_URL=")
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		listening := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			ok := sc.Scan() && strings.HasPrefix(sc.Text(), "agenthost: listening on ")
			listening <- ok
			for sc.Scan() {
			}
		}()
		select {
		case ok := <-listening:
			require.True(t, ok, "serve did not start")
		case <-time.After(60 * time.Second): // liveness bound, not a timing
			t.Fatal("serve did not announce itself in 60 s")
		}
		return cmd
	}
	hostFolders := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(tmp, "agenthost-tmp-*"))
		require.NoError(t, err)
		return m
	}
	socketsIn := func(dir string) int {
		t.Helper()
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		n := 0
		for _, e := range entries {
			if e.Type()&os.ModeSocket != 0 {
				n++
			}
		}
		return n
	}

	first := serve()
	folders := hostFolders()
	require.Len(t, folders, 1)
	crashed := folders[0]
	// The plugins' sockets, and the host's for the callbacks it serves.
	assert.GreaterOrEqual(t, socketsIn(crashed), 3, "the sockets are in the host's folder")
	assert.Zero(t, socketsIn(tmp), "no socket loose in the temporary folder")
	direct, err := filepath.Glob(filepath.Join(crashed, "agenthost-ws-*", "workspace.sock"))
	require.NoError(t, err)
	assert.Len(t, direct, 1, "the sandbox's direct workspace socket is in the host's folder")
	loose, err := filepath.Glob(filepath.Join(tmp, "agenthost-ws-*"))
	require.NoError(t, err)
	assert.Empty(t, loose)

	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	require.DirExists(t, crashed, "a killed host cannot remove its folder")

	second := serve()
	assert.NoDirExists(t, crashed, "the next host removed what the killed one left")
	folders = hostFolders()
	require.Len(t, folders, 1)
	assert.NotEqual(t, crashed, folders[0])

	require.NoError(t, second.Process.Signal(syscall.SIGINT))
	require.NoError(t, second.Wait(), "serve exits 0 on SIGINT")
	assert.Empty(t, hostFolders(), "a host that stops normally removes its folder")
	assert.Zero(t, socketsIn(tmp))
}
