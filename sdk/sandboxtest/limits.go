package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSnapshotLeftOut: what a command makes that a revision cannot hold (a
// symlink, a name that is not UTF-8) is reported as left out, never failing
// the snapshot, and everything else still comes.
func (k *kit) testSnapshotLeftOut(t *testing.T) {
	ctx := context.Background()
	id, ws := k.create(t, []sandbox.File{{Path: "keep.txt", Data: []byte("keep\n")}})
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c",
		`ln -s keep.txt link && printf 'x' > "$(printf 'bad\377name')" && echo new > new.txt`}})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, string(res.Stderr))

	var files []string
	leftOut := map[string]string{}
	err = k.c.SnapshotEach(ctx, id, nil, 0, func(e sandbox.SnapshotEntry) error {
		if e.LeftOut != "" {
			leftOut[e.Path] = e.LeftOut
		} else {
			files = append(files, e.Path)
		}
		return nil
	})
	require.NoError(t, err, "a bad name must not fail the snapshot")
	assert.Equal(t, []string{"keep.txt", "new.txt"}, files)
	assert.Equal(t, map[string]string{"link": "symlink", `"bad\xffname"`: "the name is not valid UTF-8"}, leftOut)
	for p := range leftOut {
		assert.True(t, utf8.ValidString(p))
	}
}

// testHostFileLimit: the host's per-file limit given at create replaces the
// backend's own: bigger files are refused, and a command writing one is held
// to a byte past the limit (RLIMIT_FSIZE), so the file shows as over it and
// is never silently cut at the limit. (A backend that sets the rlimit just
// after start, as local does, may let a fast writer past it; the host's
// check of the result catches the file either way.)
func (k *kit) testHostFileLimit(t *testing.T) {
	ctx := context.Background()
	const limit = 4096
	_, err := k.c.Create(ctx, sandbox.CreateSpec{ID: newID(t), MaxFileBytes: limit,
		Files: []sandbox.File{{Path: "big.bin", Data: make([]byte, limit+1)}}})
	code(t, err, plugin.CodeTooLarge, "a file over the host's limit at create")

	id := newID(t)
	_, err = k.c.Create(ctx, sandbox.CreateSpec{ID: id, MaxFileBytes: limit,
		Files: []sandbox.File{{Path: "exact.bin", Data: make([]byte, limit)}}})
	require.NoError(t, err, "a file at the limit is fine")
	t.Cleanup(func() { _ = k.c.Stop(context.Background(), id) })
	ws := k.c.Workspace(id)
	_, err = ws.WriteFile(ctx, "w.bin", make([]byte, limit+1), 0)
	code(t, err, plugin.CodeTooLarge, "a write over the host's limit")

	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero > big.bin; echo done"}})
	require.NoError(t, err)
	assert.Contains(t, string(res.Stdout), "done", "the shell goes on; only the writer is stopped")
	var sizes = map[string]int64{}
	var tooLarge []string
	require.NoError(t, k.c.SnapshotEach(ctx, id, nil, limit, func(e sandbox.SnapshotEntry) error {
		sizes[e.Path] = e.Size
		if e.TooLarge {
			assert.Nil(t, e.Data, "an oversized file's content is not kept")
			tooLarge = append(tooLarge, e.Path)
		}
		return nil
	}))
	assert.Greater(t, sizes["big.bin"], int64(limit), "over the limit, not cut at it")
	assert.Equal(t, int64(limit), sizes["exact.bin"])
	assert.Equal(t, []string{"big.bin"}, tooLarge)
}

// testSnapshotStream: SnapshotStream hands every file's content over as a
// reader of the arriving chunks; content left unread does not leak into
// the next file, and a file over the limit comes without content.
func (k *kit) testSnapshotStream(t *testing.T) {
	ctx := context.Background()
	big := bigFile()
	id, _ := k.create(t, []sandbox.File{
		{Path: "a/big.bin", Data: big}, {Path: "a/empty", Data: []byte{}},
		{Path: "b/skipped.bin", Data: big}, {Path: "c/small.txt", Data: []byte("small\n")},
	})
	got := map[string]string{}
	require.NoError(t, k.c.SnapshotStream(ctx, id, nil, 0, func(f sandbox.SnapshotFile) error {
		require.NotNil(t, f.Content, f.Path)
		if f.Path == "b/skipped.bin" {
			// Read a little and leave the rest to be dropped.
			_, err := io.ReadFull(f.Content, make([]byte, 10))
			return err
		}
		h := sha256.New()
		n, err := io.Copy(h, f.Content)
		require.NoError(t, err)
		assert.Equal(t, f.Size, n, f.Path)
		got[f.Path] = hex.EncodeToString(h.Sum(nil))
		return nil
	}))
	assert.Equal(t, map[string]string{"a/big.bin": sum(big), "a/empty": sum(nil), "c/small.txt": sum([]byte("small\n"))}, got)

	var tooLarge []string
	require.NoError(t, k.c.SnapshotStream(ctx, id, nil, 1000, func(f sandbox.SnapshotFile) error {
		if f.TooLarge {
			assert.Nil(t, f.Content)
			assert.Equal(t, int64(len(big)), f.Size)
			tooLarge = append(tooLarge, f.Path)
		}
		return nil
	}))
	assert.Equal(t, []string{"a/big.bin", "b/skipped.bin"}, tooLarge)
}
