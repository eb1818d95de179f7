package apply

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// result streams files into the store as the orchestrator does and returns
// their manifest.
func result(t *testing.T, s *store.Store, files []sandbox.File) orchestrator.RunResult {
	t.Helper()
	var res orchestrator.RunResult
	for _, f := range files {
		sha, err := s.PutBlob(context.Background(), f.Data)
		require.NoError(t, err)
		res.Files = append(res.Files, orchestrator.ResultFile{Path: f.Path, Mode: f.Mode, Size: int64(len(f.Data)), SHA256: sha})
	}
	return res
}

func TestResultOverTheLimitsIsNotApplied(t *testing.T) {
	limits := core.FileLimits{MaxFileBytes: 100, MaxWorkspaceBytes: 1000, MaxFiles: 10}
	eachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: []byte("a\n")}})
		a := NewWithLimits(s, limits)

		cases := map[string]orchestrator.RunResult{
			"a file over the limit": result(t, s, []sandbox.File{{Path: "a.ts", Data: []byte("a\n")}, {Path: "big.bin", Data: make([]byte, 101)}}),
			"a file never read":     {Files: []orchestrator.ResultFile{{Path: "a.ts", Size: 2, SHA256: "x"}, {Path: "huge.bin", Size: 1 << 30, TooLarge: true}}},
			"too many files":        result(t, s, manyFiles(11)),
		}
		for name, res := range cases {
			out, err := a.ApplyResult(ctx, f.run("run-"+name), res)
			require.Error(t, err, name)
			assert.Equal(t, core.CodeResultTooLarge, core.CodeOf(err), name)
			assert.NotEmpty(t, out.Diagnostics, name)
			assert.Equal(t, f.base, f.head(t), "%s: the draft is unchanged", name)
		}
		out, err := a.ApplyResult(ctx, f.run("run-big"), cases["a file over the limit"])
		require.Error(t, err)
		assert.Contains(t, err.Error(), "big.bin")
		assert.Contains(t, string(out.Diagnostics), `"path":"big.bin"`)
	})
}

func manyFiles(n int) []sandbox.File {
	out := make([]sandbox.File, n)
	for i := range out {
		out[i] = sandbox.File{Path: string(rune('a'+i)) + ".txt", Data: []byte{byte(i)}}
	}
	return out
}

// TestKeptOutFilesAreCarriedOver: base files kept out of the sandbox (over
// the limits) stay in the result unless the run made its own file there,
// and paths the sandbox left out are reported.
func TestKeptOutFilesAreCarriedOver(t *testing.T) {
	limits := core.FileLimits{MaxFileBytes: 100}
	eachDialect(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		big := make([]byte, 500)
		f := newApp(t, s, []sandbox.File{{Path: "a.ts", Data: []byte("a\n")}, {Path: "media/big.bin", Data: big}, {Path: "old.bin", Data: big[:200]}})
		a := NewWithLimits(s, limits)
		res := result(t, s, []sandbox.File{{Path: "a.ts", Data: []byte("A\n")}, {Path: "old.bin", Data: []byte("replaced by the run")}})
		res.KeptOut = []string{"media/big.bin", "old.bin"}
		res.LeftOut = []orchestrator.LeftOut{{Path: "link", Reason: "symlink"}}
		out, err := a.ApplyResult(ctx, f.run("run1"), res)
		require.NoError(t, err)
		r := decodeResult(t, out.Result)
		assert.Equal(t, KindApplied, r.Kind)
		assert.Equal(t, res.LeftOut, r.LeftOut)
		assert.Equal(t, []string{"a.ts", "old.bin"}, r.Changes.Modified)
		assert.Empty(t, r.Changes.Deleted, "a file kept out is not deleted")
		got := f.files(t, f.head(t))
		assert.Len(t, got["media/big.bin"], 500)
		assert.Equal(t, "replaced by the run", got["old.bin"])
	})
}
