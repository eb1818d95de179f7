package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// Snapshots proportional to what changed. The host keeps, per sandbox
// (sandboxRef, which a chat's warm sandbox keeps across runs), the
// generation the backend named for the last file set the host stored and
// each file's digest. The next snapshot is asked since that generation: a
// backend that tracks changes passes the files unchanged since then as
// headers, and the host takes their digests from its own record, their
// content stored already. A backend that does not track, or no longer
// knows the generation (it restarted), sends everything, which is handled
// the same as a first snapshot.
//
// The host never trusts a digest for a path it has no record of, or that
// differs from its record: it then asks again for everything.
//
// A backend that can (sandbox.ChangeLister) answers with only what changed
// since that generation: the changed files with their content, the paths
// gone, and nothing at all for the rest, which the host takes from its
// record. A warm turn that changed one file of a 500-file app then passes
// one file over the wire instead of 500 headers.

// sandboxFiles is what the host holds of a sandbox's files: the generation
// of the file set and each of its files as the last snapshot passed it
// (with its digest, whose content is stored, or TooLarge without one).
type sandboxFiles struct {
	gen string
	// files are in path order: the next snapshot of changes merges into
	// them without a sort, and a path is found by binary search.
	files []snapshotFile
}

// heldFiles is the record of a complete snapshot's files (left-out paths
// are not files) under generation gen.
func heldFiles(gen string, files []snapshotFile) *sandboxFiles {
	k := &sandboxFiles{gen: gen, files: make([]snapshotFile, 0, len(files))}
	for _, f := range files {
		if f.LeftOut == "" {
			k.files = append(k.files, f)
		}
	}
	if !slices.IsSortedFunc(k.files, byPath) {
		slices.SortFunc(k.files, byPath)
	}
	return k
}

func byPath(a, b snapshotFile) int { return strings.Compare(a.Path, b.Path) }

// digest is the recorded digest of the file at path ("" when there is no
// such file, or it was TooLarge).
func (k *sandboxFiles) digest(path string) string {
	i, found := slices.BinarySearchFunc(k.files, path, func(f snapshotFile, p string) int { return strings.Compare(f.Path, p) })
	if !found {
		return ""
	}
	return k.files[i].sha
}

// snapshotFile is one path of a snapshot as the host stored it: a file
// with its digest (none when TooLarge), or a path the sandbox left out.
// Its Content is nil.
type snapshotFile struct {
	sandbox.SnapshotFile
	sha string
}

// errUnknownDigest says a sandbox passed a file as unchanged that the host
// holds no such record of.
var errUnknownDigest = errors.New("the sandbox passed a file as unchanged that the host holds no record of")

func (r *sandboxRef) knownFiles() *sandboxFiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.known
}

func (r *sandboxRef) setKnown(k *sandboxFiles) {
	r.mu.Lock()
	r.known = k
	r.mu.Unlock()
}

// streamSnapshot snapshots the sandbox's files (generated artifacts
// excluded), storing each file's content as it arrives, and returns every
// path with its digest. A file over the per-file limit, found so by its
// header or while it streamed, comes TooLarge with no digest; paths the
// sandbox left out come with LeftOut set. Files the sandbox passes as
// unchanged since the last snapshot the host stored take their digests
// from the host's record.
func (o *Orchestrator) streamSnapshot(ctx context.Context, ref *sandboxRef) ([]snapshotFile, error) {
	if files, ok := ref.untouched(); ok {
		o.countSnapshot(SnapshotSkipped)
		return files, nil
	}
	known := ref.knownFiles()
	files, err := o.snapshotSince(ctx, ref, known)
	if known != nil && errors.Is(err, errUnknownDigest) {
		o.log.Warn("sandbox snapshot does not match the host's record; taking it whole", "sandbox", ref.id, "error", err)
		files, err = o.snapshotSince(ctx, ref, nil)
	}
	return files, err
}

// snapshotSince takes one snapshot since the file set known (nil: a whole
// one) and, once it is complete, records its file set as known.
func (o *Orchestrator) snapshotSince(ctx context.Context, ref *sandboxRef, known *sandboxFiles) ([]snapshotFile, error) {
	opts := sandbox.SnapshotOptions{Exclude: core.GeneratedArtifacts, MaxBytes: o.opts.Limits.MaxFileBytes}
	if known != nil {
		opts.Since, opts.ChangesOnly = known.gen, true
	}
	var files []snapshotFile
	var removed []string
	// Read before asking: a call counted after this may not be in the
	// snapshot, so it must keep the next one from being skipped.
	calls := ref.calls.now()
	res, err := ref.client.SnapshotChanges(ctx, ref.id, opts, func(f sandbox.SnapshotFile) error {
		switch {
		case f.Removed:
			removed = append(removed, f.Path)
			return nil
		case f.Unchanged:
			var sha string
			if known != nil {
				sha = known.digest(f.Path)
			}
			if sha == "" || sha != f.SHA256 {
				return fmt.Errorf("%s: %w", f.Path, errUnknownDigest)
			}
			f.Unchanged, f.SHA256 = false, ""
			files = append(files, snapshotFile{f, sha})
			return nil
		case f.Content == nil:
			files = append(files, snapshotFile{SnapshotFile: f})
			return nil
		}
		sha, size, err := o.results.PutBlobFrom(ctx, f.Content)
		f.Content = nil
		var tooLarge *sandbox.FileTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			f.TooLarge, f.Size = true, tooLarge.Size
			files = append(files, snapshotFile{SnapshotFile: f})
			return nil
		case err != nil:
			return &blobWriteError{path: f.Path, err: err}
		}
		f.Size = size
		files = append(files, snapshotFile{f, sha})
		return nil
	})
	if err != nil {
		ref.forgetSettled()
		return nil, err
	}
	kind := SnapshotWhole
	if res.ChangesOnly {
		if known == nil {
			ref.forgetSettled()
			return nil, fmt.Errorf("%w (a snapshot of changes, asked for none)", errUnknownDigest)
		}
		files = withHeld(files, removed, known)
		kind = SnapshotChanges
	}
	// A later snapshot is asked since this one only if the backend named
	// it; the record of an older generation is of no use any more.
	if res.Generation == "" {
		ref.setKnown(nil)
	} else {
		ref.setKnown(heldFiles(res.Generation, files))
	}
	ref.markSettled(calls, res, files)
	o.countSnapshot(kind)
	return files, nil
}

// withHeld completes a snapshot of changes (passed: the paths it passed)
// with the known files it did not pass nor remove, in path order, as a
// whole snapshot would have passed them: a merge of the few passed into
// the known files, already in order.
func withHeld(passed []snapshotFile, removed []string, known *sandboxFiles) []snapshotFile {
	gone := make(map[string]bool, len(passed)+len(removed))
	for _, p := range removed {
		gone[p] = true
	}
	for _, f := range passed {
		gone[f.Path] = true // passed again: changed, or left out now
	}
	slices.SortFunc(passed, byPath)
	out := make([]snapshotFile, 0, len(known.files)+len(passed))
	i := 0
	for _, f := range known.files {
		if gone[f.Path] {
			continue
		}
		for ; i < len(passed) && passed[i].Path < f.Path; i++ {
			out = append(out, passed[i])
		}
		out = append(out, f)
	}
	return append(out, passed[i:]...)
}

// knowCreated records a new sandbox's files, as the host sent them to
// Create, under the generation Create named, so that its first snapshot
// sends only what the run changed. A digest in the host's record must name
// stored content: the few files of a run whose content is not stored yet
// (made for the run, such as the agent contract) are stored here. It is
// only an optimisation: without a generation or a BlobIndex, or on any
// error, the first snapshot is whole.
func (o *Orchestrator) knowCreated(ctx context.Context, ref *sandboxRef, gen string, files []sandbox.File) {
	idx, ok := o.results.(BlobIndex)
	if gen == "" || !ok || len(files) == 0 {
		return
	}
	shaOf := make(map[string]string, len(files))
	held := make([]snapshotFile, 0, len(files))
	all := make([]string, 0, len(files))
	for _, f := range files {
		sha := sha256Hex(f.Data)
		shaOf[f.Path] = sha
		held = append(held, snapshotFile{sandbox.SnapshotFile{Path: f.Path, Mode: f.Mode, Size: int64(len(f.Data))}, sha})
		all = append(all, sha)
	}
	stored, err := idx.StoredBlobs(ctx, all)
	if err != nil {
		o.log.Warn("check stored contents; the sandbox's first snapshot will be whole", "sandbox", ref.id, "error", err)
		return
	}
	for _, f := range files {
		if stored[shaOf[f.Path]] {
			continue
		}
		sha, _, err := o.results.PutBlobFrom(ctx, bytes.NewReader(f.Data))
		if err != nil || sha != shaOf[f.Path] {
			o.log.Warn("store a run's file; the sandbox's first snapshot will be whole", "sandbox", ref.id, "path", f.Path, "error", err)
			return
		}
		stored[sha] = true
	}
	ref.setKnown(heldFiles(gen, held))
}
