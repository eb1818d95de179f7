package pluginmgr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	src := `
plugin "local" {
  kind    = "sandbox"
  command = "agenthost-sandbox-local"
  args    = ["-v"]
  sha256  = "AB` + "cdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789" + `"
  env     = ["HOME_DIR", "OPENAI_API_KEY"]
  config {
    root   = "/srv/sb"
    limits = { cpu = 2, names = ["a", "b"] }
    on     = true
  }
}
plugin "mock" {
  kind      = "engine"
  command   = "./bin/mock"
  enabled   = false
  max_procs = 1
}
`
	cfgs, err := ParseConfig("x.hcl", []byte(src), "")
	require.NoError(t, err)
	require.Len(t, cfgs, 2)
	c := cfgs[0]
	assert.Equal(t, "local", c.Name)
	assert.Equal(t, plugin.KindSandbox, c.Kind)
	assert.Equal(t, []string{"-v"}, c.Args)
	assert.Equal(t, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789", c.SHA256, "lower-cased")
	assert.Equal(t, []string{"HOME_DIR", "OPENAI_API_KEY"}, c.Env)
	assert.True(t, c.Enabled)
	assert.JSONEq(t, `{"root":"/srv/sb","limits":{"cpu":2,"names":["a","b"]},"on":true}`, string(c.Config))
	assert.Zero(t, c.MaxProcs, "Go's default unless set")
	assert.False(t, cfgs[1].Enabled)
	assert.Equal(t, 1, cfgs[1].MaxProcs)
	assert.JSONEq(t, `{}`, string(cfgs[1].Config))
}

func TestParseConfigRejects(t *testing.T) {
	block := func(body string) string { return "plugin \"a\" {\n" + body + "\n}\n" }
	cases := map[string]struct{ src, want string }{
		"bad kind":        {block("kind = \"widget\"\ncommand = \"x\""), "kind"},
		"empty command":   {block("kind = \"engine\"\ncommand = \"\""), "command is empty"},
		"bad sha":         {block("kind = \"engine\"\ncommand = \"x\"\nsha256 = \"123\""), "64 hex"},
		"env with value":  {block("kind = \"engine\"\ncommand = \"x\"\nenv = [\"A=b\"]"), "variable name"},
		"bad name":        {strings.Replace(block("kind = \"engine\"\ncommand = \"x\""), "\"a\"", "\"A B\"", 1), "name must match"},
		"unknown attr":    {block("kind = \"engine\"\ncommand = \"x\"\ncolour = \"red\""), "colour"},
		"top-level attr":  {"listen = \":80\"\n", "listen"},
		"syntax":          {"plugin \"a\" {\n", "parse"},
		"missing kind":    {block("command = \"x\""), "kind"},
		"config variable": {block("kind = \"engine\"\ncommand = \"x\"\nconfig {\n v = var.x\n}"), "config.v"},
		"bad permission":  {block("kind = \"toolpack\"\ncommand = \"x\"\npermissions = { t = \"maybe\" }"), "allow, ask or deny"},
		"engine perms":    {block("kind = \"engine\"\ncommand = \"x\"\npermissions = { t = \"ask\" }"), "toolpacks only"},
		"timeout zero":    {block("kind = \"toolpack\"\ncommand = \"x\"\ntool_timeout_s = 0"), "between 1 and 3600"},
		"timeout huge":    {block("kind = \"toolpack\"\ncommand = \"x\"\ntool_timeout_s = 99999"), "between 1 and 3600"},
		"max_procs zero":  {block("kind = \"engine\"\ncommand = \"x\"\nmax_procs = 0"), "between 1 and 1024"},
		"max_procs twice": {block("kind = \"engine\"\ncommand = \"x\"\nmax_procs = 2\nenv = [\"GOMAXPROCS\"]"), "keep one"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseConfig("x.hcl", []byte(tc.src), "")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseToolpackPolicy(t *testing.T) {
	cfgs, err := ParseConfig("x.hcl", []byte(`
plugin "patch" {
  kind           = "toolpack"
  command        = "agenthost-toolpack-patch"
  permissions    = { coding_agent_run_command = "allow", coding_agent_delete_file = "deny" }
  tool_timeout_s = 300
}
`), "")
	require.NoError(t, err)
	require.Len(t, cfgs, 1)
	assert.Equal(t, map[string]plugin.Permission{"coding_agent_run_command": plugin.PermissionAllow, "coding_agent_delete_file": plugin.PermissionDeny}, cfgs[0].Permissions)
	assert.Equal(t, 300*time.Second, cfgs[0].ToolTimeout)
}

func TestLoadConfigDirRejectsDuplicates(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.hcl"), []byte("plugin \"x\" {\n kind = \"engine\"\n command = \"a\"\n}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.hcl"), []byte("plugin \"x\" {\n kind = \"engine\"\n command = \"b\"\n}\n"), 0o644))
	_, err := LoadConfigDir(dir, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already defined")

	_, err = LoadConfigDir(filepath.Join(dir, "missing"), "")
	assert.Error(t, err)
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "plug")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644))

	got, err := resolveCommand(Config{Command: "plug"}, dir)
	require.NoError(t, err)
	assert.Equal(t, exe, got, "bare names come from the plugin dir")

	got, err = resolveCommand(Config{Command: "./plug", File: filepath.Join(dir, "x.hcl")}, "/nowhere")
	require.NoError(t, err)
	assert.Equal(t, exe, got, "paths are relative to the config file")

	_, err = resolveCommand(Config{Command: "data"}, dir)
	assert.ErrorContains(t, err, "not an executable")
	_, err = resolveCommand(Config{Command: "missing"}, dir)
	assert.ErrorContains(t, err, "make build")
	assert.ErrorContains(t, err, "PATH")
}

// TestResolveCommandOnPath: a bare name the plugin dir lacks is an
// interpreter on the host's PATH (command = "node"), resolved to its
// absolute path; the plugin dir still wins when it has the name.
func TestResolveCommandOnPath(t *testing.T) {
	pathDir, pluginDir := t.TempDir(), t.TempDir()
	interp := filepath.Join(pathDir, "interp")
	require.NoError(t, os.WriteFile(interp, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", pathDir)

	got, err := resolveCommand(Config{Command: "interp"}, pluginDir)
	require.NoError(t, err)
	assert.Equal(t, interp, got)

	own := filepath.Join(pluginDir, "interp")
	require.NoError(t, os.WriteFile(own, []byte("#!/bin/sh\n"), 0o755))
	got, err = resolveCommand(Config{Command: "interp"}, pluginDir)
	require.NoError(t, err)
	assert.Equal(t, own, got, "the plugin dir comes before PATH")
}

// TestParseConfigVariables: ${plugin_dir} and ${config_dir} are absolute
// in command, args and config; an undefined one is a clear error.
func TestParseConfigVariables(t *testing.T) {
	src := []byte(`
plugin "ts" {
  kind    = "engine"
  command = "node"
  args    = ["${plugin_dir}/engine.js", "--data=${config_dir}/data"]
  config { root = "${config_dir}/sandboxes" }
}
`)
	cfgs, err := ParseConfig("configs/ts.hcl", src, "bin/plugins")
	require.NoError(t, err)
	require.Len(t, cfgs, 1)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(wd, "bin/plugins/engine.js"), "--data=" + filepath.Join(wd, "configs/data")}, cfgs[0].Args)
	assert.JSONEq(t, `{"root":"`+filepath.Join(wd, "configs/sandboxes")+`"}`, string(cfgs[0].Config))

	_, err = ParseConfig("ts.hcl", src, "")
	assert.ErrorContains(t, err, "plugin_dir", "with no plugin dir the variable is unknown")
	_, err = ParseConfig("ts.hcl", []byte(`
plugin "ts" {
  kind    = "engine"
  command = "${home}/x"
}
`), "bin")
	assert.ErrorContains(t, err, "home")
}

func FuzzParseConfig(f *testing.F) {
	f.Add("plugin \"a\" {\n kind = \"engine\"\n command = \"x\"\n config {\n a = 1\n }\n}\n")
	f.Add("plugin \"b\" {\n kind = \"sandbox\"\n command = \"/abs\"\n env = [\"A\"]\n}\n")
	f.Add(`}}}{{{`)
	f.Fuzz(func(t *testing.T, src string) {
		cfgs, err := ParseConfig("fuzz.hcl", []byte(src), "")
		if err != nil {
			return
		}
		for _, c := range cfgs {
			if !namePattern.MatchString(c.Name) || c.Command == "" {
				t.Fatalf("accepted an invalid config: %+v", c)
			}
		}
	})
}
