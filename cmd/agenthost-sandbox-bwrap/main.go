//go:build linux

// Command agenthost-sandbox-bwrap is the bubblewrap sandbox plugin binary.
//
//	-name     the plugin's name, which must equal its config block's label
//	          (default "bwrap"; "local" takes the default sandbox's place)
//	-network  none (default), loopback or host
//
// The same binary doubles as the exec helper the plugin runs before bwrap
// (bwrap.HelperArg).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/plugins/sandbox-bwrap"
	"github.com/agenthost/agenthost/sdk"
)

func main() {
	bwrap.MaybeRunHelper()
	name := flag.String("name", "bwrap", "plugin name (the config block's label)")
	network := flag.String("network", bwrap.NetworkNone, "network policy: none, loopback or host")
	flag.Parse()
	p, err := bwrap.New(bwrap.Options{Name: *name, Network: *network})
	if err != nil {
		// Before the handshake, so stderr only: the host reports it.
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sdk.ServeSandbox(p)
}
