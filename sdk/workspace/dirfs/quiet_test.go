package dirfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shot is what a snapshot says of the workspace: each file's digest and
// mode, the paths left out, and the order they came in.
type shot struct {
	files   map[string]string // path → sha256 and mode
	leftOut map[string]string
	order   []string
	removed []string
}

func takeShot(t *testing.T, walk func(emit func(sandbox.SnapshotEntry) error) error) shot {
	t.Helper()
	s := shot{files: map[string]string{}, leftOut: map[string]string{}}
	require.NoError(t, walk(func(e sandbox.SnapshotEntry) error {
		s.order = append(s.order, e.Path)
		switch {
		case e.Removed:
			s.removed = append(s.removed, e.Path)
		case e.LeftOut != "":
			s.leftOut[e.Path] = e.LeftOut
		case e.Unchanged:
			s.files[e.Path] = fmt.Sprintf("%s %o", e.SHA256, e.Mode)
		default:
			sum := sha256.Sum256(e.Data)
			s.files[e.Path] = fmt.Sprintf("%s %o", hex.EncodeToString(sum[:]), e.Mode)
		}
		return nil
	}))
	return s
}

// TestQuietSnapshotsMatchAWalk: whatever happens to a workspace between
// two snapshots (writes, removals and renames through the FS, files and
// symlinks a command makes behind its back, writes in the same clock tick
// as a snapshot, a process that lingered at the last snapshot writing
// after it), a snapshot since the last one passes exactly what a whole walk
// finds, in the same order; and it skips the walk whenever only the FS's
// own writes happened since a snapshot taken with nothing lingering. A
// snapshot of changes (FilesChanged) applied to what the caller held
// since the last one gives that same file set, every time.
func TestQuietSnapshotsMatchAWalk(t *testing.T) {
	for _, changes := range []bool{false, true} {
		t.Run(fmt.Sprintf("changes_only=%v", changes), func(t *testing.T) { quietSnapshotsMatchAWalk(t, changes) })
	}
}

func quietSnapshotsMatchAWalk(t *testing.T, changesOnly bool) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))
	// The "command": writes a file, or makes a symlink, straight on disk;
	// "linger" leaves a process behind that the backend reports (see
	// Quiet) until the test says it ended.
	var lingering atomic.Bool
	// The symlinks the "command" makes point out of the workspace, at a
	// file of the test's own: a later "write" to the same path follows the
	// link, as a real command would, and the test runs as root in CI (a
	// link to /etc/passwd once had that file overwritten).
	outside := filepath.Join(base, "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("outside the workspace\n"), 0o644))
	exec := func(_ context.Context, root, _ string, req workspace.ExecRequest) (workspace.ExecResult, error) {
		p := filepath.Join(root, filepath.FromSlash(req.Argv[1]))
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		switch req.Argv[0] {
		case "symlink":
			_ = os.Remove(p)
			return workspace.ExecResult{}, os.Symlink(outside, p)
		case "linger":
			lingering.Store(true)
		}
		return workspace.ExecResult{}, os.WriteFile(p, []byte(req.Argv[2]), 0o644)
	}
	f, err := New(ws, exec, StampDir(base), Quiet(func() bool { return !lingering.Load() }))
	require.NoError(t, err)
	ctx := context.Background()
	exclude := func(rel string) bool { return rel == "node_modules" }

	rng := rand.New(rand.NewPCG(7, 11))
	names := []string{"a", "a.txt", "a-b", "src", "src/x.ts", "src/y.ts", "src/deep/z.ts", "node_modules/dep.js", "b/c/d.txt", "b.txt"}
	pick := func() string { return names[rng.IntN(len(names))] }
	var gen string
	held := map[string]string{} // what the caller holds (changesOnly)
	quietWanted := 0
	settled := false // the last snapshot's record was made with nothing lingering
	lateWrite := false
	for step := 0; step < 300; step++ {
		onlyAPI := true
		if lateWrite {
			// The process that lingered at the last snapshot writes after
			// it, then ends: the backend now says nothing lingers.
			p := filepath.Join(ws, "src/late.ts")
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			_ = os.WriteFile(p, []byte(fmt.Sprintf("late%d", step)), 0o644)
			lateWrite = false
		}
		for range 1 + rng.IntN(3) {
			switch op := rng.IntN(10); {
			case op < 4:
				_, _ = f.WriteFile(ctx, pick(), []byte(fmt.Sprintf("v%d-%d", step, rng.IntN(3))), []uint32{0o644, 0o755}[rng.IntN(2)])
			case op < 5:
				_ = f.Remove(ctx, pick(), rng.IntN(2) == 0)
			case op < 6:
				_ = f.Rename(ctx, pick(), pick())
			case op < 7:
				onlyAPI = false
				_, _ = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"write", pick(), fmt.Sprintf("cmd%d", step)}})
			case op < 8:
				onlyAPI = false
				_, _ = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"symlink", pick()}})
			case op < 9:
				// A command leaves a process behind, which writes again
				// after the snapshot.
				onlyAPI = false
				lateWrite = true
				_, _ = f.Exec(ctx, workspace.ExecRequest{Argv: []string{"linger", "b/c/d.txt", fmt.Sprintf("bg%d", step)}})
			}
		}
		before := f.quietSnapshots.Load()
		prevGen := gen
		var delta bool
		got := takeShot(t, func(emit func(sandbox.SnapshotEntry) error) error {
			if changesOnly {
				g, d, err := f.FilesChanged(ctx, gen, exclude, emit)
				gen, delta = g, d
				return err
			}
			g, err := f.FilesSince(ctx, gen, exclude, emit)
			gen = g
			return err
		})
		want := takeShot(t, func(emit func(sandbox.SnapshotEntry) error) error { return f.Files(ctx, exclude, emit) })
		if changesOnly {
			require.Equal(t, step > 0, delta, "step %d: changes since every snapshot but the first", step)
			if !delta {
				held = map[string]string{}
			}
			for _, p := range got.removed {
				require.Contains(t, held, p, "step %d: removed a file it held", step)
				delete(held, p)
			}
			for p := range got.leftOut {
				delete(held, p)
			}
			maps.Copy(held, got.files)
			got.files = maps.Clone(held)
			got.order = want.order // the caller puts them in order
		} else {
			require.Empty(t, got.removed, "step %d", step)
		}
		require.Equal(t, want.files, got.files, "step %d", step)
		require.Equal(t, want.leftOut, got.leftOut, "step %d", step)
		require.Equal(t, want.order, got.order, "step %d: the walk's order", step)
		require.True(t, slices.IsSorted(got.order), "step %d", step)
		switch {
		case onlyAPI && settled:
			assert.Equal(t, before+1, f.quietSnapshots.Load(), "step %d: only the FS wrote: no walk", step)
			quietWanted++
		case !settled:
			assert.Equal(t, before, f.quietSnapshots.Load(), "step %d: the last record was made while a process lingered: a walk", step)
		}
		settled = !lingering.Load()
		// What the backend vouches for the host (sandbox.Settler): this
		// snapshot's record, made with nothing lingering; never an older
		// one.
		assert.Equal(t, settled, f.Settled(gen), "step %d: settled as the record was made", step)
		if prevGen != "" {
			assert.False(t, f.Settled(prevGen), "step %d: an older generation is never settled", step)
		}
		lingering.Store(false)
	}
	assert.Greater(t, quietWanted, 30, "the quiet path was exercised")
}

// TestSettledNeedsQuietAndNothingRunning: a snapshot's generation is
// settled only when the backend can vouch that nothing lingers (Quiet), no
// command ran while the snapshot began, and the generation is the latest
// one; a backend without Quiet never vouches.
func TestSettledNeedsQuietAndNothingRunning(t *testing.T) {
	ctx := context.Background()
	snapshot := func(f *FS, since string) string {
		gen, _, err := f.FilesChanged(ctx, since, nil, func(sandbox.SnapshotEntry) error { return nil })
		require.NoError(t, err)
		return gen
	}
	newFS := func(exec ExecFunc, opts ...Option) *FS {
		base := t.TempDir()
		ws := filepath.Join(base, "ws")
		require.NoError(t, os.Mkdir(ws, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644))
		f, err := New(ws, exec, append([]Option{StampDir(base)}, opts...)...)
		require.NoError(t, err)
		return f
	}

	f := newFS(nil)
	gen := snapshot(f, "")
	require.NotEmpty(t, gen)
	assert.False(t, f.Settled(gen), "without Quiet the backend cannot vouch")

	f = newFS(nil, Quiet(func() bool { return true }))
	first := snapshot(f, "")
	assert.True(t, f.Settled(first))
	assert.False(t, f.Settled(""), "no generation")
	assert.False(t, f.Settled("g-unknown"), "an unknown generation")
	_, err := f.WriteFile(ctx, "b.txt", []byte("b"), 0o644)
	require.NoError(t, err)
	second := snapshot(f, first)
	assert.True(t, f.Settled(second), "the FS's own write leaves it settled")
	assert.False(t, f.Settled(first), "only the latest generation")

	// A command in flight as the snapshot begins: not settled, whatever
	// the backend says of leftovers.
	started, release := make(chan struct{}), make(chan struct{})
	f = newFS(func(context.Context, string, string, workspace.ExecRequest) (workspace.ExecResult, error) {
		close(started)
		<-release
		return workspace.ExecResult{}, nil
	}, Quiet(func() bool { return true }))
	done := make(chan error, 1)
	go func() {
		_, err := f.Exec(ctx, workspace.ExecRequest{Argv: []string{"true"}})
		done <- err
	}()
	<-started
	during := snapshot(f, "")
	assert.False(t, f.Settled(during), "a command ran as the snapshot began")
	close(release)
	require.NoError(t, <-done)
	after := snapshot(f, during)
	assert.True(t, f.Settled(after), "the command ended and left nothing")

	// A backend that finds a process left: not settled.
	f = newFS(nil, Quiet(func() bool { return false }))
	assert.False(t, f.Settled(snapshot(f, "")))
}

// BenchmarkQuietSnapshot500: a warm sandbox of 500 files where one file is
// written through the FS between snapshots, as a turn that patches one
// file: the snapshot since the last one (the write is not timed), passing
// every file (FilesSince, the unchanged ones from the record) or only what
// changed (FilesChanged).
func BenchmarkQuietSnapshot500(b *testing.B) {
	for _, mode := range []string{"since", "changes"} {
		b.Run(mode, func(b *testing.B) {
			base := b.TempDir()
			ws := filepath.Join(base, "ws")
			require.NoError(b, os.Mkdir(ws, 0o755))
			f, err := New(ws, nil, StampDir(base), Quiet(func() bool { return true }))
			require.NoError(b, err)
			ctx := context.Background()
			for i := range 500 {
				_, err := f.WriteFile(ctx, fmt.Sprintf("src/dir%d/file%d.ts", i%20, i), []byte(fmt.Sprintf("export const n = %d\n", i)), 0)
				require.NoError(b, err)
			}
			snap := func(gen string) (string, int) {
				passed := 0
				emit := func(sandbox.SnapshotEntry) error { passed++; return nil }
				if mode == "changes" {
					g, _, err := f.FilesChanged(ctx, gen, nil, emit)
					require.NoError(b, err)
					return g, passed
				}
				g, err := f.FilesSince(ctx, gen, nil, emit)
				require.NoError(b, err)
				return g, passed
			}
			gen, _ := snap("")
			pastTick(b, ws)
			gen, _ = snap(gen)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The write is the turn's, not the snapshot's.
				b.StopTimer()
				if _, err := f.WriteFile(ctx, "src/counter.txt", []byte(fmt.Sprintf("%d\n", i)), 0); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var passed int
				gen, passed = snap(gen)
				if mode == "changes" && passed > 3 {
					b.Fatalf("a snapshot of changes passed %d entries for one written file", passed)
				}
			}
		})
	}
}
