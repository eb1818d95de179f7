// Package echo is the smallest complete agenthost engine: it follows a
// script in the prompt, a command per line (say TEXT, tool NAME JSON,
// ask ACTION, fail CODE, wait), and passes the whole engine kit.
package echo

import (
	"context"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
)

// Engine runs scripts; it keeps no state between runs.
type Engine struct{}

// Info names the plugin to the host.
func (Engine) Info() plugin.Info {
	return plugin.Info{Name: "echo", Kind: plugin.KindEngine, Version: "0.1.0", APIVersion: plugin.APIVersion}
}

// Run follows req.Prompt; a cancel ends ctx, and the run with it.
func (Engine) Run(ctx context.Context, req engine.RunRequest, host engine.Host) (engine.Result, error) {
	var err error
	for i, line := range strings.Split(req.Prompt, "\n") {
		verb, arg, _ := strings.Cut(line, " ")
		name, input, _ := strings.Cut(arg, " ")
		switch verb {
		case "say":
			err = host.Emit(engine.Delta(arg))
		case "tool":
			_, err = host.CallTool(ctx, engine.ToolCall{CallID: fmt.Sprint(i), Tool: name, Input: []byte(input)})
		case "ask":
			_, err = host.RequestPermission(ctx, engine.PermissionRequest{Action: arg, Title: "Allow " + arg + "?"})
		case "fail":
			return engine.Failed(arg, "the script failed the run"), nil
		case "wait":
			<-ctx.Done()
		}
		if ctx.Err() != nil {
			return engine.Cancelled(), nil
		} else if err != nil {
			return engine.Result{}, err
		}
	}
	return engine.Completed(""), nil
}
