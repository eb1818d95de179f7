package scaffold

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the agenthost checkout this test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}

// goIn runs the go command in dir with no network: everything comes from
// the module cache and the checkout.
func goIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s in %s:\n%s", strings.Join(args, " "), dir, out)
	return string(out)
}

// TestScaffoldsBuildAndPassTheirKits: for each kind, the written module
// tidies, vets, builds its plugin binary and passes its conformance kit.
func TestScaffoldsBuildAndPassTheirKits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three modules and runs their kits")
	}
	root := repoRoot(t)
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			name := "my-" + kind
			dir := filepath.Join(t.TempDir(), name)
			files, err := Write(Options{Kind: kind, Name: name, Dir: dir, SDKPath: root})
			require.NoError(t, err)
			assert.Len(t, files, 7, "go.mod, go.sum, HCL, README, implementation, test, main")
			goIn(t, dir, "vet", "./...")
			goIn(t, dir, "build", "-o", t.TempDir()+"/", "./cmd/"+name)
			out := goIn(t, dir, "test", "-count=1", "-v", "./...")
			assert.Contains(t, out, "--- PASS: TestConformance")
			assert.NotContains(t, out, "--- FAIL")
			hcl, err := os.ReadFile(filepath.Join(dir, name+".hcl"))
			require.NoError(t, err)
			assert.Contains(t, string(hcl), `plugin "`+name+`"`)
			assert.Contains(t, string(hcl), `kind    = "`+kind+`"`)
		})
	}
}

func TestScaffoldRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	_, err := Write(Options{Kind: "widget", Name: "x", Dir: filepath.Join(dir, "a")})
	assert.ErrorContains(t, err, "kind")
	_, err = Write(Options{Kind: "engine", Name: "Bad Name", Dir: filepath.Join(dir, "b")})
	assert.ErrorContains(t, err, "name")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644))
	_, err = Write(Options{Kind: "engine", Name: "ok", Dir: dir})
	assert.ErrorContains(t, err, "not empty", "an existing folder's files are never overwritten")
}
