package local

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agenthost/agenthost/sdk/sandbox"
)

// BenchmarkSandboxLifecycle: what a run without a warm sandbox costs the
// plugin, in process: create a sandbox holding one file, take its first
// snapshot (since the creation), stop it. As root (CI, make bench) each
// sandbox gets a uid of its own, claimed and given back.
func BenchmarkSandboxLifecycle(b *testing.B) {
	ctx := context.Background()
	p := testProvider(b)
	dir := reachableDir(b)
	cfg := []byte(`{"root":` + strconv.Quote(filepath.Join(dir, "sandboxes")) + `}`)
	if err := p.Configure(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	files := []sandbox.File{{Path: "README.md", Data: []byte("# app\n")}}
	i := 0
	for b.Loop() {
		id := "box" + strconv.Itoa(i)
		i++
		info, err := p.Create(ctx, sandbox.CreateSpec{ID: id, Files: files})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.SnapshotSince(ctx, id, nil, info.SnapshotGeneration, func(sandbox.SnapshotEntry) error { return nil }); err != nil {
			b.Fatal(err)
		}
		if err := p.Stop(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
