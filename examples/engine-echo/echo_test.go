package echo_test

import (
	"testing"

	echo "github.com/agenthost/agenthost/examples/engine-echo"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
	"github.com/agenthost/agenthost/sdk/plugintest"
)

// scripts make the echo engine perform each scenario of the kit.
var scripts = map[enginetest.Scenario]string{
	enginetest.Text:        "say hello\nsay world",
	enginetest.Tool:        "tool " + enginetest.EchoTool + ` {"text":"ping"}` + "\nsay pong",
	enginetest.ToolFailure: "tool " + enginetest.FailTool + " {}\nsay carried on",
	enginetest.Permission:  "ask deploy\nsay deployed",
	enginetest.Fail:        "fail ECHO_FAILED",
	enginetest.Cancel:      "say working\nwait",
}

// TestConformance: the whole engine kit, over real gRPC. The echo engine
// keeps no state, so it declines the one optional scenario.
func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, host engine.HostServices) *engine.Client {
		return plugintest.Engine(t, echo.Engine{}, nil, host)
	}, func(s enginetest.Scenario) (engine.RunRequest, bool) {
		script, ok := scripts[s]
		return engine.RunRequest{Prompt: script}, ok
	})
}
