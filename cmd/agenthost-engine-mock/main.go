// Command agenthost-engine-mock is the mock engine plugin binary.
//
// Flags (set with `args` in its plugin config): -name replaces the plugin
// name "mock" and -requires sets the sandbox features it claims to need, so
// tests can configure the one binary as several engines.
package main

import (
	"flag"

	"github.com/agenthost/agenthost/plugins/engine-mock"
	"github.com/agenthost/agenthost/sdk"
)

func main() {
	name := flag.String("name", "", "plugin name to report instead of mock")
	requires := flag.String("requires", "", "comma-separated sandbox features to require")
	flag.Parse()
	sdk.ServeEngine(mock.New(mock.Options{AllowCrash: true, Name: *name, Requires: *requires}))
}
