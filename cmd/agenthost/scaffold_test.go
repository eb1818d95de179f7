package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPluginNewWritesAModule: `agenthost plugins new` writes the module and
// says what to do next; bad input is a usage error (exit 2) that writes
// nothing. host/scaffold's tests build and run what it writes.
func TestPluginNewWritesAModule(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	code, out, errOut := runCLI(t, "plugins", "new", "toolpack", "my-tools", "--dir", dir, "--module", "example.org/tools")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote "+filepath.Join(dir, "my-tools.hcl"))
	assert.Contains(t, out, "go test ./...")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "module example.org/tools")
	assert.FileExists(t, filepath.Join(dir, "cmd", "my-tools", "main.go"))

	code, _, errOut = runCLI(t, "plugins", "new", "engine", "Bad Name", "--dir", filepath.Join(t.TempDir(), "x"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "name")
	code, _, _ = runCLI(t, "plugins", "new", "widget", "x")
	assert.Equal(t, 2, code, "an unknown kind")

	// `plugin new` (singular) is the same command.
	single := filepath.Join(t.TempDir(), "one")
	code, out, errOut = runCLI(t, "plugin", "new", "engine", "solo", "--dir", single)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote "+filepath.Join(single, "solo.hcl"))
}
