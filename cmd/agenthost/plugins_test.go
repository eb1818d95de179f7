package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agenthost/agenthost/host/config"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPluginsCheckShowsIsolation: `agenthost plugins check`, loading the
// real local sandbox binary, prints its isolation (uid when this runs as
// root, none otherwise) in its own column, and "-" for other kinds.
func TestPluginsCheckShowsIsolation(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/",
		"github.com/agenthost/agenthost/cmd/agenthost-sandbox-local",
		"github.com/agenthost/agenthost/cmd/agenthost-engine-mock")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	require.NoError(t, build.Run())

	// The sandbox root must be reachable by sandbox uids (the plugin drops
	// to them as root); t.TempDir's parents are 0700.
	reach, err := os.MkdirTemp("", "plugins-check-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(reach, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(reach) })
	configs := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(configs, "local.hcl"), fmt.Appendf(nil,
		"plugin \"local\" {\n  kind = \"sandbox\"\n  command = \"agenthost-sandbox-local\"\n  config {\n    root = %q\n  }\n}\n", filepath.Join(reach, "sandboxes")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(configs, "mock.hcl"),
		[]byte("plugin \"mock\" {\n  kind = \"engine\"\n  command = \"agenthost-engine-mock\"\n}\n"), 0o644))

	var out bytes.Buffer
	cfg := config.Host{DataDir: t.TempDir(), PluginDir: bin, PluginConfigDir: configs}
	require.NoError(t, pluginsCheck(cfg, hclog.NewNullLogger(), &out), out.String())
	want := "none"
	if os.Geteuid() == 0 {
		want = "uid"
	}
	assert.Regexp(t, regexp.MustCompile(`(?m)^NAME\s+KIND\s+VERSION\s+STATE\s+ISOLATION\s+DETAIL$`), out.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^local\s+sandbox\s+0\.1\.0\s+healthy\s+`+want+`\s*$`), out.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^mock\s+engine\s+0\.1\.0\s+healthy\s+-\s*$`), out.String())
}
