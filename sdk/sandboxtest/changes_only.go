package sandboxtest

import (
	"context"
	"io"
	"maps"
	"testing"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holder is a caller of snapshots of changes: the files it holds (path →
// sha256) and the generation they are.
type holder struct {
	gen   string
	files map[string]string
}

// snapChanges asks for what changed since h's generation, applies it to
// what h holds, and returns whether the backend answered with changes and
// the paths whose content it sent.
func (k *kit) snapChanges(t *testing.T, id string, h *holder) (bool, []string) {
	t.Helper()
	var sent, removed, leftOut, unchanged []string
	got := map[string]string{}
	res, err := k.c.SnapshotChanges(context.Background(), id, sandbox.SnapshotOptions{Since: h.gen, ChangesOnly: true}, func(f sandbox.SnapshotFile) error {
		switch {
		case f.Removed:
			removed = append(removed, f.Path)
		case f.LeftOut != "":
			leftOut = append(leftOut, f.Path)
		case f.Unchanged:
			unchanged = append(unchanged, f.Path)
			got[f.Path] = f.SHA256
		default:
			data, err := io.ReadAll(f.Content)
			if err != nil {
				return err
			}
			sent = append(sent, f.Path)
			got[f.Path] = sum(data)
		}
		return nil
	})
	require.NoError(t, err)
	if res.ChangesOnly {
		assert.Empty(t, unchanged, "a snapshot of changes passes no unchanged file")
		for _, p := range removed {
			assert.Contains(t, h.files, p, "removed a file the caller did not hold")
			delete(h.files, p)
		}
		for _, p := range leftOut {
			delete(h.files, p)
		}
		maps.Copy(h.files, got)
	} else {
		assert.Empty(t, removed, "a whole snapshot passes no removals")
		h.files = got
	}
	h.gen = res.Generation
	return res.ChangesOnly, sent
}

// testSnapshotChanges: a caller that holds a snapshot's files and asks for
// what changed since, each time, ends up holding exactly the sandbox's
// files, through writes, a command's writes and deletions, renames and
// removals; a backend that lists changes answers with them (after the
// first snapshot) and sends the content of the changed files only.
func (k *kit) testSnapshotChanges(t *testing.T) {
	if !k.opts.TracksChanges {
		t.Skip("the backend does not track changes")
	}
	ctx := context.Background()
	want := map[string]string{"a.txt": "alpha\n", "src/b.txt": "bravo\n", "src/c.txt": "charlie\n"}
	id, info := k.createWith(t, want)
	ws := k.c.Workspace(id)
	h := &holder{gen: info.SnapshotGeneration, files: map[string]string{}}
	var before []string // what changed for the last snapshot
	check := func(step string, changed ...string) {
		t.Helper()
		changes, sent := k.snapChanges(t, id, h)
		sums := map[string]string{}
		for p, c := range want {
			sums[p] = sum([]byte(c))
		}
		assert.Equal(t, sums, h.files, step)
		if k.opts.ListsChanges && changes {
			// A file written within the tick of the last snapshot may
			// come again, once; no other file that did not change.
			for _, p := range sent {
				assert.Contains(t, append(changed, before...), p, "%s: sent a file that did not change", step)
			}
		}
		before = changed
	}
	check("first snapshot")
	gen := k.settle(t, id, h.gen)
	h.gen = gen
	check("settled")
	if k.opts.ListsChanges {
		changes, _ := k.snapChanges(t, id, h)
		assert.True(t, changes, "a backend that lists changes answers with them")
	}

	_, err := ws.WriteFile(ctx, "src/b.txt", []byte("BRAVO!\n"), 0)
	require.NoError(t, err)
	want["src/b.txt"] = "BRAVO!\n"
	check("one file written", "src/b.txt")

	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "rm src/c.txt && mkdir -p new && printf 'n\\n' > new/n.txt && printf 'r\\n' > r.txt"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	delete(want, "src/c.txt")
	want["new/n.txt"], want["r.txt"] = "n\n", "r\n"
	check("a command removed one file and wrote two", "new/n.txt", "r.txt")

	require.NoError(t, ws.Rename(ctx, "a.txt", "moved/a.txt"))
	want["moved/a.txt"] = want["a.txt"]
	delete(want, "a.txt")
	check("renamed", "moved/a.txt")

	require.NoError(t, ws.Remove(ctx, "new", true))
	delete(want, "new/n.txt")
	check("a folder removed")

	_, err = ws.WriteFile(ctx, "r.txt", []byte("R\n"), 0)
	require.NoError(t, err)
	want["r.txt"] = "R\n"
	check("written right after a snapshot", "r.txt")
	check("nothing changed")
}
