// Command agenthost-toolpack-patch is the patch toolpack plugin binary.
package main

import (
	"github.com/agenthost/agenthost/plugins/toolpack-patch"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeToolpack(patch.New()) }
