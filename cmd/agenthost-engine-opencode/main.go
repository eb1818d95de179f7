// Command agenthost-engine-opencode is the OpenCode engine plugin binary: it
// drives a real `opencode serve` inside each run's sandbox.
package main

import (
	"github.com/agenthost/agenthost/plugins/engine-opencode"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeEngine(opencode.New()) }
