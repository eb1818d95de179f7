// Command agenthost-engine-mock is the mock engine plugin binary.
package main

import (
	"github.com/agenthost/agenthost/plugins/engine-mock"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeEngine(mock.New(mock.Options{AllowCrash: true})) }
