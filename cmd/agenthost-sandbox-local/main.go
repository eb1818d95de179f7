// Command agenthost-sandbox-local is the local sandbox plugin binary.
package main

import (
	"github.com/agenthost/agenthost/plugins/sandbox-local"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeSandbox(local.New()) }
