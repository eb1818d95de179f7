package pluginmgr_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/internal/testenv"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/enginetest"
)

// BenchmarkEngineRun is one short run (a delta, then a tool call through
// the host's callbacks, then a delta) on an engine launched by the plugin
// manager: the echo example in Go and the same engine in TypeScript on
// Node.js, side by side, so the SDK's cost per run shows beside Go's.
func BenchmarkEngineRun(b *testing.B) {
	const script = "say hello\ntool " + enginetest.EchoTool + ` {"text":"ping"}` + "\nsay done"
	root := testenv.RepoRoot(b)
	for _, tc := range []struct{ name, hcl string }{
		{"go", `plugin "echo" {
  kind    = "engine"
  command = "agenthost-engine-echo"
}
`},
		{"typescript", ""},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pluginDir, configDir := b.TempDir(), b.TempDir()
			hcl := []byte(tc.hcl)
			name := "echo"
			if tc.name == "typescript" {
				testenv.BuildTypeScriptEcho(b, pluginDir)
				var err error
				if hcl, err = os.ReadFile(filepath.Join(root, "examples", "engine-echo-ts", "echo-ts.hcl")); err != nil {
					b.Fatal(err)
				}
				name = "echo-ts"
			} else {
				built, err := testenv.BuildBinaries("examples/engine-echo/cmd/agenthost-engine-echo")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(built) })
				if err := os.Rename(filepath.Join(built, "agenthost-engine-echo"), filepath.Join(pluginDir, "agenthost-engine-echo")); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(configDir, name+".hcl"), hcl, 0o644); err != nil {
				b.Fatal(err)
			}
			client := startEngine(b, configDir, pluginDir, name, enginetest.NewRecorder())
			ctx := context.Background()
			run := func(i int) {
				res, err := client.Run(ctx, engine.RunRequest{RunID: fmt.Sprintf("bench-%d", i), Prompt: script},
					func(engine.Event) error { return nil })
				if err != nil || res.Status != engine.StatusCompleted {
					b.Fatalf("run %d: %+v %v", i, res, err)
				}
			}
			run(-1)
			i := 0
			for b.Loop() {
				run(i)
				i++
			}
		})
	}
}
