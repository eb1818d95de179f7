//go:build linux

package bwrap

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// benchApp is a 500-file, 5 MB app: 10 KiB files in 25 folders, the size
// of a small web app's sources without node_modules.
func benchApp() []sandbox.File {
	files := make([]sandbox.File, 500)
	data := make([]byte, 5<<20/500)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for i := range files {
		files[i] = sandbox.File{Path: fmt.Sprintf("src/dir%02d/file%03d.ts", i%25, i), Data: data}
	}
	return files
}

// backend launches a backend's real binary, as the host does.
func backend(b *testing.B, name string) *sandbox.Client {
	if name == "local" {
		return launch(b, "agenthost-sandbox-local", nil, map[string]any{"root": filepath.Join(reachableDir(b), "local")})
	}
	return bwrapPlugin(b, NetworkNone, Config{})
}

// BenchmarkCreate: creating (and stopping) a sandbox for a 500-file, 5 MB
// app, through the plugin's gRPC API.
func BenchmarkCreate(b *testing.B) {
	files := benchApp()
	for _, name := range []string{"local", "bwrap"} {
		b.Run(name, func(b *testing.B) {
			c := backend(b, name)
			ctx := context.Background()
			b.SetBytes(5 << 20)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprintf("bench-%d", i)
				if _, err := c.Create(ctx, sandbox.CreateSpec{ID: id, Files: files}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := c.Stop(ctx, id); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkExecTrue: the latency of running `true` in a sandbox, which is
// what every command pays before doing anything.
func BenchmarkExecTrue(b *testing.B) {
	for _, name := range []string{"local", "bwrap"} {
		b.Run(name, func(b *testing.B) {
			c := backend(b, name)
			ctx := context.Background()
			if _, err := c.Create(ctx, sandbox.CreateSpec{ID: "bench"}); err != nil {
				b.Fatal(err)
			}
			defer c.Stop(ctx, "bench")
			ws := c.Workspace("bench")
			for b.Loop() {
				res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec true: %v %+v", err, res)
				}
			}
		})
	}
}
