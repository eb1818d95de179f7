//go:build linux

package bwrap

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/require"
)

// binDir holds the real plugin binaries, built once: every test talks to a
// plugin process over go-plugin's gRPC, as the host does.
var binDir string

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		// CI installs bubblewrap and sets AGENTHOST_REQUIRE_BWRAP=1, so it
		// never skips; a developer without it is told, not failed.
		if os.Getenv("AGENTHOST_REQUIRE_BWRAP") == "1" {
			fmt.Fprintln(os.Stderr, "bubblewrap (bwrap) is not installed and AGENTHOST_REQUIRE_BWRAP=1")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "SKIP: bubblewrap (bwrap) is not installed; the bwrap sandbox tests did not run (apt-get install bubblewrap)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "bwrap-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+"/",
		"github.com/agenthost/agenthost/cmd/agenthost-sandbox-bwrap",
		"github.com/agenthost/agenthost/cmd/agenthost-sandbox-local")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build plugins:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// reachableDir is a temporary folder the sandbox uid can pass through
// (t.TempDir's parents are 0700): the sandbox root lives under it.
func reachableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bwrap-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = removeTree(dir) })
	return dir
}

// launch starts a plugin binary with args, configures it with cfg and
// returns its client; the process ends with the test.
func launch(t testing.TB, binary string, args []string, cfg any) *sandbox.Client {
	t.Helper()
	c, _ := launchProcess(t, binary, args, nil, cfg)
	return c
}

// launchProcess is launch with extra environment variables for the plugin,
// also returning the plugin's process (to kill it as a crash would).
func launchProcess(t testing.TB, binary string, args, env []string, cfg any) (*sandbox.Client, *os.Process) {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(binDir, binary), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	return plugintest.SandboxBinary(t, cmd, raw)
}

// bwrapPlugin launches the bwrap plugin with network policy network and
// config cfg, its root in a fresh reachable folder unless cfg names one.
func bwrapPlugin(t testing.TB, network string, cfg Config) *sandbox.Client {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = filepath.Join(reachableDir(t), "sandboxes")
	}
	return launch(t, "agenthost-sandbox-bwrap", []string{"-network=" + network}, cfg)
}

// markerGone reports whether no process on this machine has marker in its
// command line (bwrap's own processes included: they carry the command's
// argv). Sandboxed processes live in their own pid namespaces, but the
// host's /proc still lists them.
func markerGone(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		// A zombie left for a reaper that is itself gone is dead.
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && strings.HasPrefix(string(st[strings.LastIndexByte(string(st), ')')+1:]), " Z") {
			continue
		}
		return false
	}
	return true
}
