// Command crashhost is the host under test in the crash test: the real
// store, plugin manager, plugins and orchestrator, running mock runs that
// stream events without end. It prints "ack RUN SEQ" for every event the log
// has committed, so the test knows what must survive a SIGKILL.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/privtmp"
	"github.com/hashicorp/go-hclog"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: crashhost DATABASE_URL DATA_DIR PLUGIN_DIR PLUGIN_CONFIG_DIR RUNS")
		os.Exit(2)
	}
	runs, _ := strconv.Atoi(os.Args[5])
	cfg := config.Host{DatabaseURL: os.Args[1], DataDir: os.Args[2], PluginDir: os.Args[3], PluginConfigDir: os.Args[4]}
	ctx := context.Background()
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr})
	// As agenthost serve does: the plugins' sockets go into a folder of
	// this process's own, which the test's SIGKILL leaves behind and the
	// next host (or the test's end) sweeps, instead of loose in /tmp.
	tmp, err := privtmp.Open(os.TempDir())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Setenv("TMPDIR", tmp.Path()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h, err := hostapp.Start(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h.Store.OnAppend(func(e core.Envelope) { fmt.Printf("ack %s %d\n", e.RunID, e.Seq) })
	for i := 0; i < runs; i++ {
		if _, err := h.Orch.Start(ctx, orchestrator.StartRequest{AppID: "app", Prompt: "deltas 100000000", Engine: "mock", Sandbox: "local"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	select {}
}
