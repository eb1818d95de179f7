// Package testenv holds what the host's end-to-end tests share: building the
// real plugin binaries once, a fresh PostgreSQL schema per test, and plugin
// config files. Only tests import it.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/privtmp"
	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the PostgreSQL driver for the admin connection
	"github.com/stretchr/testify/require"
)

// Module is this module's import path.
const Module = "github.com/agenthost/agenthost"

// DefaultPlugins are the binaries of the default plugin set, by config name.
var DefaultPlugins = map[string]string{
	"mock":     "agenthost-engine-mock",
	"local":    "agenthost-sandbox-local",
	"patch":    "agenthost-toolpack-patch",
	"contract": "agenthost-toolpack-contract",
}

var kinds = map[string]string{"mock": "engine", "local": "sandbox", "patch": "toolpack", "contract": "toolpack"}

// DefaultMaxProcs is the max_procs each default plugin ships with in
// plugin-configs/ (absent: Go's default), so tests and benchmarks run the
// plugins as `make run` does; host/doccheck holds the two together.
var DefaultMaxProcs = map[string]int{"mock": 1, "patch": 1, "contract": 1}

// SandboxEnv names the variable that swaps the sandbox backend of every
// end-to-end test: AGENTHOST_TEST_SANDBOX=bwrap makes PluginConfigDir write
// the plugin "local" as the bwrap binary (BwrapSandboxConfig), exactly as
// an operator swaps it in plugin-configs/.
const SandboxEnv = "AGENTHOST_TEST_SANDBOX"

// BwrapBinary is the bubblewrap sandbox plugin's binary.
const BwrapBinary = "agenthost-sandbox-bwrap"

// BuildBinaries builds main packages (paths relative to the module, e.g.
// "cmd/agenthost-engine-mock") into a new temporary folder, for TestMain.
func BuildBinaries(pkgs ...string) (string, error) {
	dir, err := os.MkdirTemp("", "agenthost-test-bin-")
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", dir + "/"}
	for _, p := range pkgs {
		args = append(args, Module+"/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build %v: %w", pkgs, err)
	}
	return dir, nil
}

// DefaultPluginPackages are the main packages of DefaultPlugins, plus the
// bwrap sandbox (BwrapBinary) that tests swap in for local.
func DefaultPluginPackages() []string {
	return []string{"cmd/agenthost-engine-mock", "cmd/agenthost-sandbox-local", "cmd/agenthost-toolpack-patch", "cmd/agenthost-toolpack-contract", "cmd/" + BwrapBinary}
}

// PluginConfigDir writes one HCL file per named default plugin (bare command
// names, found in the plugin dir) and returns the folder.
func PluginConfigDir(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if n == "local" && os.Getenv(SandboxEnv) == "bwrap" {
			BwrapSandboxConfig(t, dir, "local", "none")
			continue
		}
		body := fmt.Sprintf("plugin %q {\n  kind    = %q\n  command = %q\n", n, kinds[n], DefaultPlugins[n])
		if mp := DefaultMaxProcs[n]; mp > 0 {
			body += fmt.Sprintf("  max_procs = %d\n", mp)
		}
		body += "}\n"
		if n == "local" {
			body = fmt.Sprintf("plugin \"local\" {\n  kind    = \"sandbox\"\n  command = %q\n  config {\n    root = %q\n  }\n}\n",
				DefaultPlugins[n], LocalSandboxRoot(t))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, n+".hcl"), []byte(body), 0o644))
	}
	return dir
}

// ReachableDir returns a fresh folder, removed after the test, that
// sandbox uids can pass through: a t.TempDir's parents are 0700, and a
// sandbox plugin running as root runs commands as other uids.
func ReachableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agenthost-sandboxes-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = removeAll(dir) })
	return dir
}

// LocalSandboxRoot is a root for the local sandbox in a ReachableDir.
func LocalSandboxRoot(t testing.TB) string {
	return filepath.Join(ReachableDir(t), "sandboxes")
}

// LocalSandboxConfig is the local sandbox's config block (JSON) with its
// root in a ReachableDir.
func LocalSandboxConfig(t testing.TB) []byte {
	return fmt.Appendf(nil, `{"root":%q}`, LocalSandboxRoot(t))
}

// removeAll removes a folder where a command made parts read-only.
func removeAll(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// RequireBwrapEnv, set to 1 (.ci/run sets it), makes a missing bwrap fail
// the bubblewrap tests instead of skipping them.
const RequireBwrapEnv = "AGENTHOST_REQUIRE_BWRAP"

// RequireBwrap skips t when bubblewrap is not installed, unless
// RequireBwrapEnv says it must be (then t fails): a developer without it
// still gets a green `make test`, CI never silently skips.
func RequireBwrap(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv(RequireBwrapEnv) == "1" {
			t.Fatalf("bubblewrap (bwrap) is not installed and %s=1", RequireBwrapEnv)
		}
		t.Skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap (.ci/run does)")
	}
}

// BwrapSandboxConfig writes dir/<name>.hcl: the bwrap sandbox under that
// plugin name with the given network policy, its root in a fresh folder
// the sandbox uid can reach (a t.TempDir's parents are 0700).
func BwrapSandboxConfig(t testing.TB, dir, name, network string) {
	t.Helper()
	RequireBwrap(t)
	root, err := os.MkdirTemp("", "agenthost-bwrap-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	body := fmt.Sprintf("plugin %q {\n  kind    = \"sandbox\"\n  command = %q\n  args    = [\"-name=%s\", \"-network=%s\"]\n  config {\n    root = %q\n  }\n}\n",
		name, BwrapBinary, name, network, filepath.Join(root, "sandboxes"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".hcl"), []byte(body), 0o644))
}

// PostgresURL returns a URL for a new, empty schema of TEST_DATABASE_URL,
// dropped after the test; it skips the test when the variable is unset
// (.ci/run always sets it).
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		t.Skip("TEST_DATABASE_URL not set: PostgreSQL variant skipped (.ci/run sets it)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sqlx.Open("postgres", base)
	require.NoError(t, err)
	_, err = admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Main builds pkgs, stores their folder in *binDir, runs the tests and
// removes the binaries: a package's whole TestMain.
func Main(m *testing.M, binDir *string, pkgs ...string) {
	dir, err := BuildBinaries(pkgs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	// The private temporary folders of the hosts the tests killed (their
	// sockets in them): a host starting later would sweep them, but a test
	// run must not leave its dead hosts' files behind.
	privtmp.Sweep(os.TempDir())
	os.Exit(code)
}

// RequireOpenCodeEnv, set to 1 (.ci/run sets it), makes a missing opencode
// binary fail the OpenCode engine tests instead of skipping them.
const RequireOpenCodeEnv = "AGENTHOST_REQUIRE_OPENCODE"

// OpenCodeBinary returns the opencode binary `make tools` installs into the
// project's tools folder, skipping t when it is absent (unless
// RequireOpenCodeEnv says it must be there).
func OpenCodeBinary(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
	bin := filepath.Join(dir, "tools", "opencode", "bin", "opencode")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv(RequireOpenCodeEnv) == "1" {
			t.Fatalf("opencode is not installed at %s and %s=1 (run make tools)", bin, RequireOpenCodeEnv)
		}
		t.Skipf("opencode is not installed at %s: run make tools (.ci/run does)", bin)
	}
	return bin
}

// RequireRootEnv, set to 1 (.ci/run sets it), makes AsRoot fail a test
// that does not run as root.
const RequireRootEnv = "AGENTHOST_REQUIRE_ROOT"

// AsRoot reports whether the test runs as root, for a test that checks
// something else as root (the local sandbox then isolates sandboxes by
// uid and vouches for them). With RequireRootEnv=1 it fails the test
// instead of answering false, so that CI never passes over the root branch.
func AsRoot(t testing.TB) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		return true
	}
	if os.Getenv(RequireRootEnv) == "1" {
		t.Fatalf("%s=1 but the tests do not run as root: the checks made as root cannot run", RequireRootEnv)
	}
	return false
}

// Logger is the host's logger for a test or benchmark, on stderr. A test
// gets warnings, which help when it fails; a benchmark only errors: its
// warnings (the local sandbox warns that it isolates by uid only) would
// land between its name and its figures (go test passes stderr through on
// stdout), and benchstat would read none of them.
func Logger(t testing.TB) hclog.Logger {
	level := hclog.Warn
	if _, bench := t.(*testing.B); bench {
		level = hclog.Error
	}
	return hclog.New(&hclog.LoggerOptions{Level: level, Output: os.Stderr})
}
