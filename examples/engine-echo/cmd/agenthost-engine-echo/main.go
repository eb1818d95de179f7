// Command agenthost-engine-echo serves the echo example engine as a
// plugin binary (see ../../echo.hcl).
package main

import (
	echo "github.com/agenthost/agenthost/examples/engine-echo"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeEngine(echo.Engine{}) }
