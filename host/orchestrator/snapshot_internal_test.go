package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sort"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSnapshots is a sandbox client whose snapshots a test scripts: with
// SnapshotF a backend that sends whole snapshots (Unchanged entries
// allowed), with ChangesF one that answers what it is asked.
type fakeSnapshots struct {
	SnapshotF func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (string, error)
	ChangesF  func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error)
	since     []string
}

func (f *fakeSnapshots) Stop(context.Context, string) error { return nil }

func (f *fakeSnapshots) SnapshotChanges(_ context.Context, _ string, opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error) {
	f.since = append(f.since, opts.Since)
	if f.ChangesF != nil {
		return f.ChangesF(opts, fn)
	}
	gen, err := f.SnapshotF(opts, fn)
	return sandbox.SnapshotResult{Generation: gen}, err
}

// fakeBlobs is a ResultSink and BlobIndex keeping contents in memory.
type fakeBlobs struct{ blobs map[string][]byte }

func (b *fakeBlobs) PutBlobFrom(_ context.Context, r io.Reader) (string, int64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", 0, err
	}
	sha := sha256Hex(data)
	b.blobs[sha] = data
	return sha, int64(len(data)), nil
}

func (b *fakeBlobs) ApplyResult(context.Context, *core.Run, RunResult) (ApplyOutcome, error) {
	return ApplyOutcome{}, nil
}

func (b *fakeBlobs) StoredBlobs(_ context.Context, shas []string) (map[string]bool, error) {
	have := map[string]bool{}
	for _, s := range shas {
		_, have[s] = b.blobs[s]
	}
	return have, nil
}

func snapOrch(t *testing.T) (*Orchestrator, *fakeBlobs) {
	blobs := &fakeBlobs{blobs: map[string][]byte{}}
	return &Orchestrator{results: blobs, opts: Options{Limits: core.FileLimits{}.WithDefaults()}, log: hclog.NewNullLogger()}, blobs
}

func sent(path, content string) sandbox.SnapshotFile {
	return sandbox.SnapshotFile{Path: path, Mode: 0o644, Size: int64(len(content)), Content: bytes.NewReader([]byte(content))}
}

func same(path, content string) sandbox.SnapshotFile {
	s := sha256.Sum256([]byte(content))
	return sandbox.SnapshotFile{Path: path, Mode: 0o644, Size: int64(len(content)), Unchanged: true, SHA256: hex.EncodeToString(s[:])}
}

// backend scripts snapshots: whole is the file set as it is; when asked
// since a generation it knows, it passes those of unchanged as Unchanged.
func backend(gen string, knows string, whole map[string]string, unchanged ...string) func(sandbox.SnapshotOptions, func(sandbox.SnapshotFile) error) (string, error) {
	return func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (string, error) {
		paths := make([]string, 0, len(whole))
		for p := range whole {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			f := sent(p, whole[p])
			if opts.Since != "" && opts.Since == knows {
				for _, u := range unchanged {
					if u == p {
						f = same(p, whole[p])
					}
				}
			}
			if err := fn(f); err != nil {
				return "", err
			}
		}
		return gen, nil
	}
}

func digests(files []snapshotFile) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		out[f.Path] = f.sha
	}
	return out
}

func hexOf(s string) string { return sha256Hex([]byte(s)) }

// TestSnapshotSinceUsesTheHostsRecord: after a whole snapshot the next is
// asked since its generation; unchanged files take the host's digests,
// changed ones are stored, and a deleted file is simply not in the result.
func TestSnapshotSinceUsesTheHostsRecord(t *testing.T) {
	o, blobs := snapOrch(t)
	c := &fakeSnapshots{}
	ref := &sandboxRef{client: c, id: "sbx"}
	ctx := context.Background()

	c.SnapshotF = backend("g1", "", map[string]string{"a": "A", "b": "B", "c": "C"})
	files, err := o.streamSnapshot(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": hexOf("A"), "b": hexOf("B"), "c": hexOf("C")}, digests(files))

	c.SnapshotF = backend("g2", "g1", map[string]string{"a": "A", "b": "B2"}, "a")
	delete(blobs.blobs, hexOf("A")) // not read again: proves "a" did not travel
	files, err = o.streamSnapshot(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": hexOf("A"), "b": hexOf("B2")}, digests(files), "c was deleted")
	assert.Equal(t, []string{"", "g1"}, c.since)
	assert.Equal(t, "g2", ref.knownFiles().gen)
	assert.Equal(t, map[string]string{"a": hexOf("A"), "b": hexOf("B2")}, ref.knownFiles().digests())
}

// TestSnapshotSinceDistrustsUnknownDigests: an unchanged file the host has
// no record of, or whose digest is not the one recorded, makes the host
// take the snapshot again, whole.
func TestSnapshotSinceDistrustsUnknownDigests(t *testing.T) {
	for name, f := range map[string]sandbox.SnapshotFile{
		"unknown path":   same("new", "N"),
		"another digest": same("a", "not A"),
	} {
		t.Run(name, func(t *testing.T) {
			o, _ := snapOrch(t)
			c := &fakeSnapshots{}
			ref := &sandboxRef{client: c, id: "sbx", known: heldFiles("g1", []snapshotFile{{sandbox.SnapshotFile{Path: "a", Mode: 0o644, Size: 1}, hexOf("A")}})}
			c.SnapshotF = func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (string, error) {
				if opts.Since != "" {
					return "g2", fn(f)
				}
				return "g3", fn(sent("a", "A"))
			}
			files, err := o.streamSnapshot(context.Background(), ref)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"a": hexOf("A")}, digests(files))
			assert.Equal(t, []string{"g1", ""}, c.since)
			assert.Equal(t, "g3", ref.knownFiles().gen)
		})
	}
}

// TestSnapshotFromAnOldBackend: a backend that names no generation sends
// everything every time, and the host keeps no record.
func TestSnapshotFromAnOldBackend(t *testing.T) {
	o, _ := snapOrch(t)
	c := &fakeSnapshots{SnapshotF: backend("", "", map[string]string{"a": "A"})}
	ref := &sandboxRef{client: c, id: "sbx", known: heldFiles("g0", nil)}
	for range 2 {
		files, err := o.streamSnapshot(context.Background(), ref)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"a": hexOf("A")}, digests(files))
		assert.Nil(t, ref.knownFiles())
	}
	assert.Equal(t, []string{"g0", ""}, c.since)
}

// TestKnowCreated: the files a sandbox was created with are known under
// Create's generation, those not stored yet stored first.
func TestKnowCreated(t *testing.T) {
	o, blobs := snapOrch(t)
	blobs.blobs[hexOf("A")] = []byte("A")
	ref := &sandboxRef{id: "sbx"}
	o.knowCreated(context.Background(), ref, "g0", []sandbox.File{{Path: "a", Data: []byte("A")}, {Path: "contract.json", Data: []byte("{}")}})
	require.NotNil(t, ref.knownFiles())
	assert.Equal(t, "g0", ref.knownFiles().gen)
	assert.Equal(t, map[string]string{"a": hexOf("A"), "contract.json": hexOf("{}")}, ref.knownFiles().digests())
	assert.Equal(t, []byte("{}"), blobs.blobs[hexOf("{}")], "a digest the host records names stored content")

	o.knowCreated(context.Background(), ref, "", nil)
	assert.Equal(t, "g0", ref.knownFiles().gen, "no generation: nothing to record")
}

// TestSnapshotOfChanges: once the host holds a file set, it asks for what
// changed since; a backend that answers so passes only the changed and
// added files and the removed paths, and the host completes the snapshot
// from its record — same paths, modes, sizes and digests, in path order,
// as a whole one — then holds the new set. A file over the limit stays
// held without content, and a path now left out is no longer a file.
func TestSnapshotOfChanges(t *testing.T) {
	o, blobs := snapOrch(t)
	o.opts.Limits.MaxFileBytes = 8
	c := &fakeSnapshots{SnapshotF: backend("g1", "", map[string]string{"a": "A", "b/x": "BX", "b/y": "BY", "c": "C", "d": "D"})}
	ref := &sandboxRef{client: c, id: "sbx"}
	ctx := context.Background()
	whole, err := o.streamSnapshot(ctx, ref)
	require.NoError(t, err)
	require.Len(t, whole, 5)
	// A file too large for the host, passed once: held without a digest.
	c.ChangesF = func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error) {
		require.True(t, opts.ChangesOnly)
		require.Equal(t, "g1", opts.Since)
		return sandbox.SnapshotResult{Generation: "g2", ChangesOnly: true}, fn(sandbox.SnapshotFile{Path: "big", Mode: 0o600, Size: 100, TooLarge: true})
	}
	_, err = o.streamSnapshot(ctx, ref)
	require.NoError(t, err)

	c.ChangesF = func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error) {
		require.True(t, opts.ChangesOnly)
		require.Equal(t, "g2", opts.Since)
		for _, f := range []sandbox.SnapshotFile{
			sent("b/y", "BY2"), sent("e", "E"),
			{Path: "c", LeftOut: "symlink"},
			{Path: "d", Removed: true},
		} {
			if err := fn(f); err != nil {
				return sandbox.SnapshotResult{}, err
			}
		}
		return sandbox.SnapshotResult{Generation: "g3", ChangesOnly: true}, nil
	}
	delete(blobs.blobs, hexOf("A")) // not read again: proves "a" did not travel
	files, err := o.streamSnapshot(ctx, ref)
	require.NoError(t, err)
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"a", "b/x", "b/y", "big", "c", "e"}, paths, "path order, d removed")
	assert.Equal(t, map[string]string{"a": hexOf("A"), "b/x": hexOf("BX"), "b/y": hexOf("BY2"), "big": "", "c": "", "e": hexOf("E")}, digests(files))
	byPath := map[string]snapshotFile{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	assert.Equal(t, sandbox.SnapshotFile{Path: "a", Mode: 0o644, Size: 1}, byPath["a"].SnapshotFile, "held from the record")
	assert.Equal(t, sandbox.SnapshotFile{Path: "big", Mode: 0o600, Size: 100, TooLarge: true}, byPath["big"].SnapshotFile)
	assert.Equal(t, "symlink", byPath["c"].LeftOut)
	assert.Equal(t, "g3", ref.knownFiles().gen)
	var held []string
	for _, f := range ref.knownFiles().files {
		held = append(held, f.Path)
	}
	assert.Equal(t, []string{"a", "b/x", "b/y", "big", "e"}, held, "a left-out path is no longer held")
	assert.Equal(t, []string{"", "g1", "g2"}, c.since)

	// A backend that no longer knows the generation answers whole.
	c.ChangesF = func(opts sandbox.SnapshotOptions, fn func(sandbox.SnapshotFile) error) (sandbox.SnapshotResult, error) {
		return sandbox.SnapshotResult{Generation: "g4"}, fn(sent("a", "A"))
	}
	files, err = o.streamSnapshot(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": hexOf("A")}, digests(files), "a whole snapshot: what it did not pass is gone")
	assert.Equal(t, map[string]string{"a": hexOf("A")}, ref.knownFiles().digests())
}

// digests are the known files' digests by path (TooLarge ones have none).
func (k *sandboxFiles) digests() map[string]string {
	out := make(map[string]string, len(k.files))
	for _, f := range k.files {
		if f.sha != "" {
			out[f.Path] = f.sha
		}
	}
	return out
}
