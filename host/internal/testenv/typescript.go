package testenv

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// RequireNodeEnv, set to 1 (.ci/run sets it), makes a missing Node.js or
// TypeScript toolchain fail the TypeScript engine tests instead of
// skipping them.
const RequireNodeEnv = "AGENTHOST_REQUIRE_NODE"

// TypeScriptEchoBundle is the file name of the TypeScript echo engine's
// bundle, as make build puts it into the plugin dir.
const TypeScriptEchoBundle = "agenthost-engine-echo-ts.js"

// RepoRoot is the folder of go.mod above the test's folder.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// BuildTypeScriptEcho builds the TypeScript SDK and the echo example from
// their sources (type-checked, then bundled, as make build does), runs the
// SDK's unit tests, and copies
// the bundle into dir. The packages' npm dependencies come from make build
// (npm ci); without them, or without node, t is skipped unless
// RequireNodeEnv says they must be there. Test packages that run at the
// same time take turns: they build into the same dist folders.
func BuildTypeScriptEcho(t testing.TB, dir string) {
	t.Helper()
	root := RepoRoot(t)
	sdkDir := filepath.Join(root, "sdk", "typescript")
	exampleDir := filepath.Join(root, "examples", "engine-echo-ts")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := exec.LookPath("npm"); err != nil {
		missing = "npm is not on PATH"
	} else {
		for _, d := range []string{sdkDir, exampleDir} {
			if _, err := os.Stat(filepath.Join(d, "node_modules")); err != nil {
				missing = d + "/node_modules is missing (run make build)"
			}
		}
	}
	if missing != "" {
		if os.Getenv(RequireNodeEnv) == "1" {
			t.Fatalf("%s and %s=1", missing, RequireNodeEnv)
		}
		t.Skipf("%s: the TypeScript engine tests need Node.js (.ci/run installs it)", missing)
	}

	lock, err := os.OpenFile(filepath.Join(exampleDir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases it too
	// A build that an earlier test package made and tested, from sources
	// no newer than it, is used as it is: make test runs several packages
	// that need the bundle, and each rebuild costs seconds.
	stamp := filepath.Join(exampleDir, "dist", ".built-and-tested")
	if !newerThanSources(stamp, root) {
		// The SDK's own unit tests (node --test) run here too, so make
		// test runs them without a step of its own.
		steps := []struct {
			dir  string
			args []string
		}{
			{sdkDir, []string{"run", "--silent", "build"}},
			{sdkDir, []string{"test", "--silent"}},
			{exampleDir, []string{"run", "--silent", "build"}},
		}
		for _, s := range steps {
			cmd := exec.Command("npm", s.args...)
			cmd.Dir = s.dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "npm %v in %s:\n%s", s.args, s.dir, out)
		}
		require.NoError(t, os.WriteFile(stamp, nil, 0o644))
	}
	bundle, err := os.ReadFile(filepath.Join(exampleDir, "dist", TypeScriptEchoBundle))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, TypeScriptEchoBundle), bundle, 0o644))
}

// typeScriptSources are what the SDK and the example are built from,
// relative to the repository's root.
var typeScriptSources = []string{
	"sdk/proto",
	"sdk/typescript/src", "sdk/typescript/scripts", "sdk/typescript/proto",
	"sdk/typescript/package.json", "sdk/typescript/package-lock.json", "sdk/typescript/tsconfig.json",
	"examples/engine-echo-ts/src", "examples/engine-echo-ts/package.json",
	"examples/engine-echo-ts/package-lock.json", "examples/engine-echo-ts/tsconfig.json",
}

// newerThanSources reports whether the file stamp exists and is newer than
// every TypeScript source (generated files under src/generated excepted).
func newerThanSources(stamp, root string) bool {
	st, err := os.Stat(stamp)
	if err != nil {
		return false
	}
	newer := true
	for _, src := range typeScriptSources {
		_ = filepath.WalkDir(filepath.Join(root, src), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !newer {
				return err
			}
			if d.IsDir() && d.Name() == "generated" {
				return filepath.SkipDir
			}
			if info, err := d.Info(); err == nil && !d.IsDir() && !info.ModTime().Before(st.ModTime()) {
				newer = false
			}
			return nil
		})
	}
	return newer
}
