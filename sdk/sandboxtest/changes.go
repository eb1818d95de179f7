package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changeSnap is what one snapshot since a generation passed: content by
// path for files sent, digest by path for files passed unchanged.
type changeSnap struct {
	gen       string
	sent      map[string]string
	unchanged map[string]string
}

func (k *kit) snapSince(t *testing.T, id, since string) changeSnap {
	t.Helper()
	s := changeSnap{sent: map[string]string{}, unchanged: map[string]string{}}
	gen, err := k.c.SnapshotFrom(context.Background(), id, sandbox.SnapshotOptions{Since: since}, func(f sandbox.SnapshotFile) error {
		switch {
		case f.Unchanged:
			assert.Nil(t, f.Content, f.Path)
			s.unchanged[f.Path] = f.SHA256
		case f.LeftOut == "":
			data, err := io.ReadAll(f.Content)
			if err != nil {
				return err
			}
			s.sent[f.Path] = string(data)
		}
		return nil
	})
	require.NoError(t, err)
	s.gen = gen
	return s
}

// holds asserts that a snapshot, read with what the caller held at the
// generation asked since, is exactly want (path → content): sent files
// with their content, unchanged ones with their digest.
func (s changeSnap) holds(t *testing.T, want map[string]string, msg string) {
	t.Helper()
	got := map[string]string{}
	for p, c := range s.sent {
		got[p] = sum([]byte(c))
	}
	for p, sha := range s.unchanged {
		_, dup := got[p]
		assert.False(t, dup, "%s: %s both sent and unchanged", msg, p)
		got[p] = sha
	}
	wantSums := map[string]string{}
	for p, c := range want {
		wantSums[p] = sum([]byte(c))
	}
	assert.Equal(t, wantSums, got, msg)
}

// createWith creates a sandbox holding files (path → content), stopped
// when the test ends.
func (k *kit) createWith(t *testing.T, files map[string]string) (string, sandbox.Info) {
	t.Helper()
	var list []sandbox.File
	for p, c := range files {
		list = append(list, sandbox.File{Path: p, Data: []byte(c)})
	}
	id := newID(t)
	info, err := k.c.Create(context.Background(), sandbox.CreateSpec{ID: id, Files: list})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.c.Stop(context.Background(), id) })
	return id, info
}

// settle snapshots since gen until a snapshot sends no file (a backend may
// send a file written within its timestamp tick again, once) and returns
// the generation of that snapshot.
func (k *kit) settle(t *testing.T, id, gen string) string {
	t.Helper()
	require.Eventually(t, func() bool {
		s := k.snapSince(t, id, gen)
		gen = s.gen
		return len(s.sent) == 0
	}, promptly, 20*time.Millisecond, "snapshots since the last one keep sending files nobody wrote")
	return gen
}

// testSnapshotSince: a snapshot since an earlier generation holds the same
// files as a whole one; with a backend that tracks changes it sends the
// content of exactly the files that changed (a same-size rewrite that puts
// the old mtime back included, and a rewrite within the tick of the last
// snapshot), leaves deleted files out, and an unknown generation gets
// everything.
func (k *kit) testSnapshotSince(t *testing.T) {
	ctx := context.Background()
	want := map[string]string{"a.txt": "alpha\n", "src/b.txt": "bravo\n", "src/c.txt": "charlie\n", "assets/big.bin": string(bigFile())}
	id, info := k.createWith(t, want)
	ws := k.c.Workspace(id)
	if k.opts.TracksChanges {
		require.NotEmpty(t, info.SnapshotGeneration, "Create names the generation of the files it wrote")
	}
	first := k.snapSince(t, id, info.SnapshotGeneration)
	first.holds(t, want, "since create")
	if first.gen == "" {
		require.False(t, k.opts.TracksChanges, "a backend that tracks changes names a snapshot's generation")
		assert.Empty(t, first.unchanged)
		t.Skip("the backend does not track changes")
	}
	gen := k.settle(t, id, first.gen)

	_, err := ws.WriteFile(ctx, "src/b.txt", []byte("BRAVO!\n"), 0)
	require.NoError(t, err)
	want["src/b.txt"] = "BRAVO!\n"
	s := k.snapSince(t, id, gen)
	s.holds(t, want, "one file changed")
	assert.Equal(t, map[string]string{"src/b.txt": "BRAVO!\n"}, s.sent, "exactly the changed file's content travels")
	gen = k.settle(t, id, s.gen)

	// In place, same size, old times put back: only ctime moved.
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c",
		`touch -r src/c.txt ref.tmp && printf 'CHARLIE\n' > src/c.txt && touch -r ref.tmp src/c.txt && rm ref.tmp`}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	want["src/c.txt"] = "CHARLIE\n"
	s = k.snapSince(t, id, gen)
	s.holds(t, want, "same-size rewrite with its mtime put back")
	assert.Equal(t, map[string]string{"src/c.txt": "CHARLIE\n"}, s.sent)
	gen = s.gen

	// Rewrites in place at the same size right after each snapshot: some
	// land within the timestamp tick of the snapshot's record.
	for i := range 20 {
		content := fmt.Sprintf("%02d\n", i)
		res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "printf '" + content[:2] + `\n' > r.txt`}})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		want["r.txt"] = content
		s = k.snapSince(t, id, gen)
		s.holds(t, want, fmt.Sprintf("quick rewrite %d", i))
		gen = s.gen
	}
	gen = k.settle(t, id, gen)

	require.NoError(t, ws.Remove(ctx, "a.txt", false))
	delete(want, "a.txt")
	s = k.snapSince(t, id, gen)
	s.holds(t, want, "a deleted file is not passed")
	assert.Empty(t, s.sent)

	unknown := k.snapSince(t, id, "no-such-generation")
	unknown.holds(t, want, "since an unknown generation")
	assert.Empty(t, unknown.unchanged, "an unknown generation gets every file's content")
	assert.NotEmpty(t, unknown.gen)
}

// testSnapshotSeesBackgroundWrites: a process a command left running writes
// after the command returned and after a snapshot was taken; once it has
// written (and exited), a snapshot since that one sends what it wrote,
// however little the backend saw happen since (no command, one file of
// its own written).
func (k *kit) testSnapshotSeesBackgroundWrites(t *testing.T) {
	if !k.opts.TracksChanges {
		t.Skip("the backend does not track changes")
	}
	ctx := context.Background()
	id := newID(t)
	info, err := k.c.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "a.txt", Data: []byte("alpha\n")}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = k.c.Stop(context.Background(), id) })
	ws := k.c.Workspace(id)
	gen := k.settle(t, id, k.snapSince(t, id, info.SnapshotGeneration).gen)
	// "up" and "done" appear whole (written aside, then renamed): the
	// test looks for them by name, and a snapshot taken between a file's
	// creation and its write would rightly see it empty.
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c",
		"(sleep 0.5; echo up > up.part; mv up.part up; while [ ! -f go ]; do sleep 0.05; done; echo late > late.txt; echo done > done.part; mv done.part done) >/dev/null 2>&1 &"}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))
	if !within(3*time.Second, exists(ws, "up")) {
		t.Skip("background processes do not outlive their command on this backend")
	}
	before := k.snapSince(t, id, gen)
	before.holds(t, map[string]string{"a.txt": "alpha\n", "up": "up\n"}, "taken while the background process waits")
	_, err = ws.WriteFile(ctx, "go", nil, 0)
	require.NoError(t, err)
	require.Eventually(t, exists(ws, "done"), promptly, 20*time.Millisecond, "the background process never finished")
	after := k.snapSince(t, id, before.gen)
	after.holds(t, map[string]string{"a.txt": "alpha\n", "up": "up\n", "go": "", "late.txt": "late\n", "done": "done\n"}, "taken after it wrote")
}

// exists is a condition for within and require.Eventually: the workspace
// holds path p.
func exists(ws workspace.Workspace, p string) func() bool {
	return func() bool { _, err := ws.Stat(context.Background(), p); return err == nil }
}

// within polls cond until it holds or d has passed, and says which.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond) // polling the sandbox: it has nothing to wait on
	}
	return cond()
}
