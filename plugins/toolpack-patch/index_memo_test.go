package patch

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexBytes runs coding_agent_workspace_index on ws and returns its output.
func indexBytes(t *testing.T, ws workspace.Workspace, input string) []byte {
	t.Helper()
	res, err := New().Call(t.Context(), toolpack.Call{Tool: "coding_agent_workspace_index", Input: json.RawMessage(input)}, ws)
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res.Error)
	return res.Output
}

// forgetIndexes empties the last index and the outline cache, as in a
// fresh process.
func forgetIndexes(t *testing.T) {
	t.Helper()
	lastIndex.keep(0, nil)
	outlines = newOutlineCache(maxOutlineEntries)
}

// An index served from the last one (every file unchanged) is the same
// bytes as one computed afresh, for each symbol cap, and a changed symbol
// cap is not served another's outlines.
func TestWorkspaceIndexFromLastIndex(t *testing.T) {
	ws, _ := realWorkspace(t, indexedApp)
	forgetIndexes(t)
	cold := indexBytes(t, ws, `{}`)
	forgetIndexes(t)
	capped := indexBytes(t, ws, `{"max_symbols":1}`)
	require.NotEqual(t, string(cold), string(capped))

	forgetIndexes(t)
	for _, input := range []string{`{}`, `{}`, `{"max_symbols":1}`, `{"max_symbols":1}`, `{}`, `{"max_files":3}`, `{}`} {
		want := cold
		if input == `{"max_symbols":1}` {
			want = capped
		}
		got := indexBytes(t, ws, input)
		if input == `{"max_files":3}` {
			var out workspaceIndexOutput
			require.NoError(t, json.Unmarshal(got, &out))
			require.Len(t, out.Files, 3)
			continue
		}
		assert.Equal(t, string(want), string(got), input)
	}
}

// readFails is a workspace whose ReadFile of one path answers NotFound
// while fail is set: the file removed between the listing and its read.
type readFails struct {
	workspace.Workspace
	path string
	fail bool
}

func (w *readFails) ReadFile(ctx context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	if w.fail && p == w.path {
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	return w.Workspace.ReadFile(ctx, p, opts)
}

// A file the index could not read has no outline in it; the next index
// reads it rather than taking the last index's lack of one for its
// outline.
func TestWorkspaceIndexRetriesUnreadFile(t *testing.T) {
	// Content no other test outlines, so that no cached outline hides
	// the read.
	dfs, _ := realWorkspace(t, map[string]string{"src/only.ts": "export function OnlyHereRetried() {}\n", "src/b.ts": "export const B = 2\n"})
	ws := &readFails{Workspace: dfs, path: "src/only.ts", fail: true}
	only := func() indexedFile {
		var out workspaceIndexOutput
		require.NoError(t, json.Unmarshal(indexBytes(t, ws, `{}`), &out))
		require.Len(t, out.Files, 2)
		require.Equal(t, "src/only.ts", out.Files[1].Path)
		return out.Files[1]
	}
	assert.Empty(t, only().Symbols, "not read, not outlined")
	ws.fail = false
	f := only()
	require.NotEmpty(t, f.Symbols)
	assert.Equal(t, "OnlyHereRetried", f.Symbols[0].Name)
}

// Indexes of two workspaces running at once each get their own files,
// whichever of them the last index holds.
func TestWorkspaceIndexConcurrent(t *testing.T) {
	one, _ := realWorkspace(t, map[string]string{"src/a.ts": "export function One() {}\n", "src/b.ts": "export const B = 1\n"})
	two, _ := realWorkspace(t, map[string]string{"src/a.ts": "export function Two() {}\n", "src/c.ts": "export const C = 1\n"})
	wantOne, wantTwo := indexBytes(t, one, `{}`), indexBytes(t, two, `{}`)
	var wg sync.WaitGroup
	for _, w := range []struct {
		ws   workspace.Workspace
		want []byte
	}{{one, wantOne}, {two, wantTwo}, {one, wantOne}, {two, wantTwo}} {
		wg.Go(func() {
			for range 20 {
				res, err := New().Call(t.Context(), toolpack.Call{Tool: "coding_agent_workspace_index", Input: json.RawMessage(`{}`)}, w.ws)
				if assert.NoError(t, err) && assert.True(t, res.OK) {
					assert.Equal(t, string(w.want), string(res.Output))
				}
			}
		})
	}
	wg.Wait()
}
