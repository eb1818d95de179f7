// Command agenthost-noop is the no-op plugin (package noopplugin) that the
// bare plugin hop benchmark launches; it is never installed.
package main

import "github.com/agenthost/agenthost/host/internal/noopplugin"

func main() { noopplugin.Serve() }
