package dirfs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// DefaultListLimit caps a listing when the caller sets no limit: enough for
// any app's source tree, small enough that a stray node_modules cannot make
// one answer enormous.
const DefaultListLimit = 10000

// List returns the entries under folder p ("" for the root) sorted by path,
// with paths relative to the root. Recursive listings include folders
// (IsDir). Symlinks are listed as themselves and never followed. Limit 0
// means DefaultListLimit; truncated says entries were left out.
func (f *FS) List(ctx context.Context, p string, opts workspace.ListOptions) ([]workspace.FileInfo, bool, error) {
	rel, err := f.resolve(p, true)
	if err != nil {
		return nil, false, err
	}
	r, err := f.open()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	fi, err := r.Stat(rootName(rel))
	if err != nil {
		return nil, false, mapErr(p, err)
	}
	if !fi.IsDir() {
		return nil, false, plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is not a folder", p)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	out := []workspace.FileInfo{}
	truncated := false
	descend := func(e entry) bool { return opts.Recursive && !skipped(e.d.Name(), opts.SkipDirs) }
	found := 0
	// Only listings keep folders' names: a snapshot (Files) reads every
	// folder, whatever its stat says.
	wo := walkOptions{budget: limit, names: &f.names, found: func(n int) { found = n }}
	if opts.Recursive {
		wo.descend = descend
	}
	if opts.WithHashes {
		// Workers hash (or find in the cache) the files of the folders
		// they read, at most limit of them: a walk stopping at its limit
		// hashes no more than it would alone. A file they leave unhashed,
		// or fail on, is hashed at its visit, where errors are reported.
		var hashed atomic.Int64
		wo.hash = func(list []entry, stopped func() bool) {
			for _, i := range f.hashes.fill(list) {
				if stopped() || hashed.Add(1) > int64(limit) {
					return
				}
				e := &list[i]
				info, err := e.d.Info()
				if err != nil {
					continue
				}
				if sha, err := f.hashCached(r, e.rel, info); err == nil {
					e.sha = sha
				}
			}
		}
	}
	err = walk(ctx, r, rel, wo, func(e entry) (bool, error) {
		if len(out) >= limit {
			truncated = true
			return false, errStop
		}
		info, err := e.d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // removed while we listed
		}
		if err != nil {
			return false, err
		}
		fi := infoOf(e.rel, info)
		if opts.WithHashes && info.Mode().IsRegular() {
			fi.SHA256 = e.sha
			if fi.SHA256 == "" {
				fi.SHA256, err = f.hashCached(r, e.rel, info)
			}
			if plugin.HasCode(err, plugin.CodeNotFound) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
		}
		if len(out) == cap(out) {
			// Grown to what the walk has found, or doubled, rather than
			// by append's quarter for long slices: a listing of 10,000
			// entries otherwise copies itself over and again, five times
			// its size in all.
			out = slices.Grow(out, max(len(out), 64, min(found, limit)-len(out)))
		}
		out = append(out, fi)
		return descend(e), nil
	})
	if err != nil {
		return nil, false, mapErr(p, err)
	}
	return out, truncated, nil
}

// skipped reports whether a folder named name is one of skip (ignoring case).
func skipped(name string, skip []string) bool {
	for _, s := range skip {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// Files passes every regular file of the workspace to emit, one at a time
// in path order, for a sandbox snapshot: only the current file's content is
// held. Folders are implied by their files. What cannot be content of a
// revision is passed as a LeftOut entry rather than failing the snapshot:
// symlinks, devices, FIFOs and sockets, and names that are not valid UTF-8
// (their path Go-quoted, since it must cross gRPC as a proto string; a
// folder so named is reported once and not walked) or that a workspace path
// cannot hold (a backslash). exclude (nil for none) drops a path; an
// excluded folder is not walked at all.
func (f *FS) Files(ctx context.Context, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error) error {
	return f.walkFiles(ctx, exclude, emit, nil, nil)
}

// walkFiles is Files with two hooks for change tracking (FilesSince), each
// nil for none: unchanged may pass a regular file's entry without its
// content being read (ok true), and read sees each file read, with the
// stat it was opened with.
func (f *FS) walkFiles(ctx context.Context, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error,
	unchanged func(rel string, d fs.DirEntry) (sandbox.SnapshotEntry, bool), read func(rel string, fi fs.FileInfo, data []byte)) error {
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	return walk(ctx, r, "", walkOptions{}, f.fileVisitor(r, exclude, emit, unchanged, read))
}

// walkFilesAt is walkFiles over one path of the workspace only: a folder's
// files, or a file itself (nothing when it is gone). The caller checks
// that exclude keeps root and the folders above it.
func (f *FS) walkFilesAt(ctx context.Context, r *os.Root, root string, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error,
	unchanged func(rel string, d fs.DirEntry) (sandbox.SnapshotEntry, bool), read func(rel string, fi fs.FileInfo, data []byte)) error {
	fi, err := r.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return mapErr(root, err)
	}
	visit := f.fileVisitor(r, exclude, emit, unchanged, read)
	if fi.IsDir() {
		return walk(ctx, r, root, walkOptions{}, visit)
	}
	_, err = visit(entry{rel: root, d: fs.FileInfoToDirEntry(fi)})
	return err
}

// fileVisitor is the visit of walkFiles: folders are descended, what a
// revision cannot hold is passed as LeftOut, regular files are passed with
// their content (or as unchanged said).
func (f *FS) fileVisitor(r *os.Root, exclude func(rel string) bool, emit func(sandbox.SnapshotEntry) error,
	unchanged func(rel string, d fs.DirEntry) (sandbox.SnapshotEntry, bool), read func(rel string, fi fs.FileInfo, data []byte)) func(e entry) (bool, error) {
	leftOut := func(p, why string) error {
		return emit(sandbox.SnapshotEntry{File: sandbox.File{Path: p}, LeftOut: why})
	}
	return func(e entry) (bool, error) {
		rel, d := e.rel, e.d
		if exclude != nil && exclude(rel) {
			return false, nil
		}
		if !utf8.ValidString(rel) {
			return false, leftOut(strconv.Quote(rel), "the name is not valid UTF-8")
		}
		if _, err := Clean(rel); err != nil {
			return false, leftOut(rel, "the name cannot be a workspace path: "+err.Error())
		}
		switch t := d.Type(); {
		case d.IsDir():
			return true, nil
		case t&fs.ModeSymlink != 0:
			return false, leftOut(rel, "symlink")
		case !t.IsRegular():
			return false, leftOut(rel, "not a regular file")
		}
		if unchanged != nil {
			if e, ok := unchanged(rel, d); ok {
				return false, emit(e)
			}
		}
		file, fi, err := openRegular(r, rel, rel)
		if err != nil {
			if plugin.HasCode(err, plugin.CodeNotFound) {
				return false, nil
			}
			return false, err
		}
		defer file.Close()
		// Room for the whole file plus ReadFrom's probe for EOF, so the
		// buffer is allocated once.
		buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
		if _, err := buf.ReadFrom(file); err != nil {
			return false, mapErr(rel, err)
		}
		data := buf.Bytes()
		if read != nil {
			read(rel, fi, data)
		}
		return false, emit(sandbox.SnapshotEntry{File: sandbox.File{Path: rel, Mode: uint32(fi.Mode().Perm()), Data: data}, Size: int64(len(data))})
	}
}
