// Command agenthost-engine-native is the native engine plugin binary: the
// tool-calling loop over OpenAI-compatible and Anthropic APIs.
package main

import (
	"github.com/agenthost/agenthost/plugins/engine-native"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeEngine(native.New()) }
