package pluginmgr_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tsScripts make the TypeScript echo engine perform each scenario of the
// kit, the optional state scenario included.
var tsScripts = map[enginetest.Scenario]string{
	enginetest.Text:        "say hello\nsay world",
	enginetest.Tool:        "tool " + enginetest.EchoTool + ` {"text":"ping"}` + "\nsay pong",
	enginetest.ToolFailure: "tool " + enginetest.FailTool + " {}\nsay carried on",
	enginetest.Permission:  "ask deploy\nsay deployed",
	enginetest.Fail:        "fail ECHO_FAILED",
	enginetest.Cancel:      "say working\nwait",
	enginetest.State:       `save {"step":1}` + "\nsay saved",
}

// TestTypeScriptEngineKit: the echo engine written in TypeScript on
// sdk/typescript, launched by the real plugin manager from its own HCL
// file (command = "node", its bundle under ${plugin_dir}), passes the whole
// engine kit: the go-plugin handshake, AutoMTLS both ways, the broker for
// the host's callbacks, cancellation and errors, all in Node.js.
func TestTypeScriptEngineKit(t *testing.T) {
	pluginDir := t.TempDir()
	testenv.BuildTypeScriptEcho(t, pluginDir)
	configDir := t.TempDir()
	hcl, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "engine-echo-ts", "echo-ts.hcl"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(configDir, "echo-ts.hcl"), hcl, 0o644))

	enginetest.Run(t, func(t *testing.T, services engine.HostServices) *engine.Client {
		return startEchoTS(t, configDir, pluginDir, services)
	}, func(s enginetest.Scenario) (engine.RunRequest, bool) {
		script, ok := tsScripts[s]
		return engine.RunRequest{Prompt: script}, ok
	})

	t.Run("workspace and host errors", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the workspace"), 0o644))
		ws, err := dirfs.New(dir, nil)
		require.NoError(t, err)
		rec := enginetest.NewRecorder(enginetest.WithWorkspaces(func(_ context.Context, id string) (workspace.Workspace, error) {
			if id != "ws" {
				return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "no workspace %q", id)
			}
			return ws, nil
		}))
		client := startEchoTS(t, configDir, pluginDir, rec)
		run := func(id, prompt string) (engine.Result, []string) {
			var texts []string
			res, err := client.Run(context.Background(), engine.RunRequest{RunID: id, Prompt: prompt, WorkspaceID: "ws"}, func(e engine.Event) error {
				texts = append(texts, e.Text)
				return nil
			})
			require.NoError(t, err)
			return res, texts
		}
		res, texts := run("read-ok", "read hello.txt")
		assert.Equal(t, engine.StatusCompleted, res.Status, "%+v", res)
		assert.Equal(t, []string{"hello from the workspace"}, texts)
		// The host's refusals reach the TypeScript engine with their codes,
		// which it hands back as the run's error code.
		res, _ = run("read-out", "read ../outside.txt")
		assert.Equal(t, engine.StatusFailed, res.Status)
		assert.Equal(t, plugin.CodePathDenied, res.ErrorCode, "%+v", res)
		res, _ = run("read-missing", "read missing.txt")
		assert.Equal(t, plugin.CodeNotFound, res.ErrorCode, "%+v", res)
		// A run without an id is refused, with a code the host reads.
		_, err = client.Run(context.Background(), engine.RunRequest{RunID: "", Prompt: "say x"}, func(engine.Event) error { return nil })
		assert.Equal(t, plugin.CodeInvalidArgument, plugin.CodeOf(err), "%v", err)
	})

	t.Run("config refused with its code", func(t *testing.T) {
		dir := t.TempDir()
		bad := strings.Replace(string(hcl), "  kind", "  config {\n    colour = \"red\"\n  }\n  kind", 1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "echo-ts.hcl"), []byte(bad), 0o644))
		configs, err := pluginmgr.LoadConfigDir(dir, pluginDir)
		require.NoError(t, err)
		m := pluginmgr.New(configs, pluginmgr.Options{PluginDir: pluginDir})
		m.SetCallbacks(enginetest.NewRecorder(), nil)
		require.NoError(t, m.Start(context.Background()))
		t.Cleanup(m.Close)
		st := m.Statuses()
		require.Len(t, st, 1)
		assert.Equal(t, pluginmgr.StateFailed, st[0].State)
		// The code and field crossed the wire in the status details.
		assert.Contains(t, st[0].Reason, "INVALID_ARGUMENT: unknown config keys: colour (colour)")
	})

	t.Run("refuses to run by hand", func(t *testing.T) {
		cmd := exec.Command("node", filepath.Join(pluginDir, testenv.TypeScriptEchoBundle))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		assert.Equal(t, 1, exit.ExitCode())
		assert.Contains(t, string(out), "agenthost plugin")
	})
}

// startEchoTS launches the TypeScript echo engine through a plugin manager
// whose engine callbacks go to services.
func startEchoTS(t *testing.T, configDir, pluginDir string, services engine.HostServices) *engine.Client {
	t.Helper()
	return startEngine(t, configDir, pluginDir, "echo-ts", services)
}

// startEngine launches the engine plugin name of configDir through a
// plugin manager whose engine callbacks go to services.
func startEngine(t testing.TB, configDir, pluginDir, name string, services engine.HostServices) *engine.Client {
	t.Helper()
	configs, err := pluginmgr.LoadConfigDir(configDir, pluginDir)
	require.NoError(t, err)
	m := pluginmgr.New(configs, pluginmgr.Options{
		PluginDir: pluginDir,
		Logger:    hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
	})
	m.SetCallbacks(services, nil)
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(m.Close)
	client, _, err := m.Engine(name)
	require.NoError(t, err, "%+v", m.Statuses())
	return client
}
