package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/plugins/engine-native/fakellm"
	opencode "github.com/agenthost/agenthost/plugins/engine-opencode"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/require"
)

// TestOpenCodeConformance runs the OpenCode engine through the engine kit,
// like every other engine: the real opencode binary in a real sandbox (the
// local plugin binary, or bwrap with AGENTHOST_TEST_SANDBOX=bwrap), a fake model scripted per scenario, and the
// kit's tools bridged to OpenCode (bridge_tools). It declines only the
// optional state scenario: OpenCode keeps its own sessions.
func TestOpenCodeConformance(t *testing.T) {
	bin := testenv.OpenCodeBinary(t)
	srv := fakellm.New()
	defer srv.Close()
	const model = "oc-kit"
	scripts := map[enginetest.Scenario][]fakellm.Turn{
		enginetest.Text: {{Text: []string{"hello ", "world"}}},
		enginetest.Tool: {{Calls: []fakellm.Call{{ID: "call_k1", Name: enginetest.EchoTool, Args: []string{`{"text":"ping"}`}}}},
			{Text: []string{"pong"}}},
		enginetest.ToolFailure: {{Calls: []fakellm.Call{{ID: "call_k2", Name: enginetest.FailTool, Args: []string{"{}"}}}},
			{Text: []string{"carried on"}}},
		enginetest.Permission: {{Calls: []fakellm.Call{bashCall("call_k3", "echo asked")}}, {Text: []string{"allowed"}}},
		enginetest.Fail:       {{Status: 400, Message: "model not found"}},
		enginetest.Cancel:     {{Text: []string{"working"}, Hang: true}},
	}
	for s, turns := range scripts {
		srv.ScriptWhen(model, "kit-scenario-"+string(s)+":", turns...)
	}

	// One sandbox for every run: its one OpenCode server serves them all,
	// concurrent ones included, each in a session of its own.
	sbCfg, err := json.Marshal(map[string]string{"root": testenv.LocalSandboxRoot(t)})
	require.NoError(t, err)
	// The sandbox the suite runs on: local, or bwrap (loopback) in the
	// bwrap pass of make test.
	sbCmd := exec.Command(filepath.Join(binDir, "agenthost-sandbox-local"))
	if os.Getenv(testenv.SandboxEnv) == "bwrap" {
		testenv.RequireBwrap(t)
		sbCmd = exec.Command(filepath.Join(binDir, testenv.BwrapBinary), "-network=loopback")
	}
	sb, _ := plugintest.SandboxBinary(t, sbCmd, sbCfg)
	_, err = sb.Create(context.Background(), sandbox.CreateSpec{ID: "kit", Files: []sandbox.File{{Path: "README.md", Data: []byte("kit\n")}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sb.Stop(context.Background(), "kit") })

	engCfg, err := json.Marshal(map[string]any{
		"opencode_path": bin, "cancel_timeout_s": 15,
		"bridge_tools": []string{enginetest.EchoTool, enginetest.FailTool},
	})
	require.NoError(t, err)
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
	tools := []engine.ToolDescriptor{
		{Name: enginetest.EchoTool, Description: "echo its input", InputSchema: schema},
		{Name: enginetest.FailTool, Description: "always fails", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	enginetest.Run(t, func(t *testing.T, host engine.HostServices) *engine.Client {
		return plugintest.Engine(t, opencode.New(), engCfg, host)
	}, func(s enginetest.Scenario) (engine.RunRequest, bool) {
		if _, ok := scripts[s]; !ok {
			return engine.RunRequest{}, false
		}
		return engine.RunRequest{
			Prompt: fmt.Sprintf("kit-scenario-%s: do the task", s), WorkspaceID: "kit", Tools: tools,
			Model: engine.Model{ID: "m", Provider: "openai", ProviderModel: model, BaseURL: srv.BaseURL(), EngineModelID: "fake/" + model},
		}, true
	}, enginetest.WithWorkspaces(func(_ context.Context, id string) (workspace.Workspace, error) {
		return sb.Workspace(id), nil
	}))
}
