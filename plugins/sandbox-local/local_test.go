package local

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) *sandbox.Client {
		cfg, _ := json.Marshal(Config{Root: t.TempDir()})
		return plugintest.Sandbox(t, New(), cfg)
	}, sandboxtest.Options{LocalProcesses: true})
}
