//go:build !linux

// Command agenthost-sandbox-bwrap is the bubblewrap sandbox plugin binary;
// bubblewrap needs Linux namespaces, so elsewhere it only says so.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "agenthost-sandbox-bwrap: bubblewrap needs Linux; use the local sandbox on this system")
	os.Exit(2)
}
