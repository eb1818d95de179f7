package dirfs

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"golang.org/x/sys/unix"
)

// ExecFunc runs a command for a workspace. root is the host path of the
// workspace and dir the host path of the working folder, already confined to
// it; req.Argv is non-empty. Backends differ only here.
type ExecFunc func(ctx context.Context, root, dir string, req workspace.ExecRequest) (workspace.ExecResult, error)

// FS is a workspace over one host directory. It is safe for concurrent use;
// like any directory, concurrent writers to one file race (last rename wins).
type FS struct {
	root     string
	exec     ExecFunc
	maxBytes int64
	hashes   hashCache
	names    nameCache
	changes  changes
	services *Services
	// writes follows what the FS itself changed, and quiet (Quiet) says
	// whether the backend's processes are all gone: see quiet.go.
	writes writeLog
	quiet  func() bool
	// quietSnapshots counts the snapshots taken without a walk.
	quietSnapshots atomic.Int64
}

// Option adjusts an FS.
type Option func(*FS)

// MaxFileBytes makes WriteFile refuse, and ReadFile refuse to return, more
// than n bytes (plugin.CodeTooLarge). 0 means no limit.
func MaxFileBytes(n int64) Option { return func(f *FS) { f.maxBytes = n } }

// New returns a workspace rooted at dir, which must exist. exec runs
// commands; nil makes Exec answer plugin.CodeUnsupported.
func New(dir string, exec ExecFunc, opts ...Option) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Resolve the root itself once so that confinement compares real paths
	// (the root may sit under a symlinked /tmp, say).
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root %s: %w", dir, err)
	}
	f := &FS{root: real, exec: exec}
	for _, o := range opts {
		o(f)
	}
	return f, nil
}

// Root is the host path of the workspace (symlinks resolved).
func (f *FS) Root() string { return f.root }

var (
	_ workspace.Workspace = (*FS)(nil)
	_ workspace.Services  = (*FS)(nil)
)

func (f *FS) svc() (*Services, error) {
	if f.services == nil {
		return nil, plugin.Errorf(plugin.CodeUnsupported, "", "this sandbox cannot run services")
	}
	return f.services, nil
}

// StartService implements workspace.Services (WithServices).
func (f *FS) StartService(ctx context.Context, spec workspace.ServiceSpec) (workspace.ServiceInfo, error) {
	s, err := f.svc()
	if err != nil {
		return workspace.ServiceInfo{}, err
	}
	f.writes.serviceStarted()
	return s.StartService(ctx, spec)
}

// ServiceStatus implements workspace.Services (WithServices).
func (f *FS) ServiceStatus(ctx context.Context, name string) (workspace.ServiceInfo, error) {
	s, err := f.svc()
	if err != nil {
		return workspace.ServiceInfo{}, err
	}
	return s.ServiceStatus(ctx, name)
}

// StopService implements workspace.Services (WithServices).
func (f *FS) StopService(ctx context.Context, name string, grace time.Duration) error {
	s, err := f.svc()
	if err != nil {
		return err
	}
	return s.StopService(ctx, name, grace)
}

// open opens the root for one operation. Opening per call (one syscall)
// rather than holding a descriptor means a workspace whose folder was
// removed answers NotFound instead of operating on a deleted directory.
func (f *FS) open() (*os.Root, error) {
	r, err := os.OpenRoot(f.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, plugin.Errorf(plugin.CodeNotFound, "", "the workspace no longer exists")
	}
	return r, err
}

// mapErr turns an OS error about workspace path p into a coded error.
func mapErr(p string, err error) error {
	var pe *plugin.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return err
	case isEscape(err):
		return denied(p, "leads outside the workspace")
	case errors.Is(err, fs.ErrNotExist):
		return plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	case errors.Is(err, fs.ErrExist):
		return plugin.Errorf(plugin.CodeAlreadyExists, p, "%q already exists", p)
	case errors.Is(err, syscall.ENOTDIR):
		return plugin.Errorf(plugin.CodeInvalidArgument, p, "a parent of %q is a file, not a folder", p)
	case errors.Is(err, syscall.EISDIR):
		return plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	case errors.Is(err, syscall.ELOOP):
		return denied(p, "has too many levels of symlinks")
	case errors.Is(err, syscall.ENAMETOOLONG):
		return plugin.Errorf(plugin.CodeInvalidArgument, p, "%q has a name that is too long", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

func infoOf(rel string, fi fs.FileInfo) workspace.FileInfo {
	out := workspace.FileInfo{Path: rel, IsDir: fi.IsDir(), Mode: uint32(fi.Mode().Perm()), ModTime: fi.ModTime()}
	if !fi.IsDir() {
		out.Size = fi.Size()
	}
	return out
}

// openRegular opens a regular file for reading. O_NONBLOCK keeps a FIFO or
// device a command left in the workspace from hanging the call at open; it
// changes nothing for regular files. Folders are reported as CodeIsDirectory.
func openRegular(r *os.Root, p, rel string) (*os.File, fs.FileInfo, error) {
	file, err := r.OpenFile(rootName(rel), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, mapErr(p, err)
	}
	fi, err := file.Stat()
	switch {
	case err != nil:
		err = mapErr(p, err)
	case fi.IsDir():
		err = plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	case !fi.Mode().IsRegular():
		err = plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is not a regular file", p)
	}
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	return file, fi, nil
}

// hashFile returns the hex sha256 of a regular file under r.
func hashFile(r *os.Root, rel string) (string, error) {
	file, _, err := openRegular(r, rel, rel)
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	// A pooled buffer: io.Copy would allocate 32 KiB per file, which for a
	// listing of 10,000 files with hashes was most of its cost.
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	if _, err := io.CopyBuffer(h, onlyReader{file}, *buf); err != nil {
		return "", mapErr(rel, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// onlyReader hides *os.File's WriteTo, which io.CopyBuffer would prefer to
// the buffer given and which, for a hash, falls back to io.Copy and a fresh
// 32 KiB buffer per file.
type onlyReader struct{ io.Reader }

// copyBuffers are the buffers files are hashed through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFile reads a file, or a 1-based inclusive line range of it (line
// endings kept; a start past the end gives no data). FileInfo describes the
// whole file: size and sha256 of all of it, and Path as resolved through any
// in-workspace symlinks. The file is streamed, so a small range of a large
// file costs little memory.
func (f *FS) ReadFile(ctx context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	if opts.StartLine < 0 || opts.EndLine < 0 || (opts.EndLine > 0 && opts.EndLine < opts.StartLine) {
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeInvalidArgument, "start_line",
			"invalid line range %d-%d (1-based, inclusive, 0 = open end)", opts.StartLine, opts.EndLine)
	}
	rel, err := f.resolve(p, true)
	if err != nil {
		return nil, workspace.FileInfo{}, err
	}
	r, err := f.open()
	if err != nil {
		return nil, workspace.FileInfo{}, err
	}
	defer r.Close()
	file, fi, err := openRegular(r, p, rel)
	if err != nil {
		return nil, workspace.FileInfo{}, err
	}
	defer file.Close()
	whole := opts.StartLine <= 1 && opts.EndLine == 0
	if whole && f.maxBytes > 0 && fi.Size() > f.maxBytes {
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeTooLarge, p, "%q has %d bytes; the limit is %d; read a line range", p, fi.Size(), f.maxBytes)
	}
	info := infoOf(rel, fi)
	if whole {
		// The common case, read in one go: no line splitting and no
		// intermediate buffers (this is what a workspace index does for
		// every file of an app).
		data, err := readWhole(file, fi.Size(), f.maxBytes)
		if err != nil {
			return nil, workspace.FileInfo{}, mapErr(p, err)
		}
		sum := sha256.Sum256(data)
		info.Size, info.SHA256 = int64(len(data)), hex.EncodeToString(sum[:])
		return data, info, nil
	}
	h := sha256.New()
	data, err := readLines(ctx, io.TeeReader(file, h), opts.StartLine, opts.EndLine, f.maxBytes, 0)
	if err != nil {
		return nil, workspace.FileInfo{}, mapErr(p, err)
	}
	// Hash what the range did not need to read.
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	if _, err := io.CopyBuffer(h, onlyReader{file}, *buf); err != nil {
		return nil, workspace.FileInfo{}, mapErr(p, err)
	}
	info.SHA256 = hex.EncodeToString(h.Sum(nil))
	return data, info, nil
}

// readWhole reads all of file, expected to hold size bytes; it copes with a
// file that grew or shrank since its stat, and refuses one that grew past
// max (> 0).
func readWhole(file io.Reader, size, max int64) ([]byte, error) {
	// One byte more than the stat said, so growth shows without a second
	// allocation in the usual case.
	data := make([]byte, 0, size+1)
	for {
		n, err := file.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if max > 0 && int64(len(data)) > max {
			return nil, plugin.Errorf(plugin.CodeTooLarge, "", "the file grew past %d bytes while it was read", max)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grow
		}
	}
}

// readLines keeps lines start..end (1-based, inclusive; 0 = open) of r and
// stops reading after end. max > 0 caps the bytes kept; hint sizes the
// buffer when the caller knows roughly how much will be kept.
func readLines(ctx context.Context, r io.Reader, start, end int, max int64, hint int) ([]byte, error) {
	if start < 1 {
		start = 1
	}
	br := bufio.NewReaderSize(r, 64<<10)
	out := make([]byte, 0, hint)
	for line := 1; end == 0 || line <= end; line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// ReadSlice avoids a copy per line; a line longer than the buffer
		// comes back in pieces (ErrBufferFull), handled by looping.
		for {
			chunk, err := br.ReadSlice('\n')
			if line >= start {
				if max > 0 && int64(len(out)+len(chunk)) > max {
					return nil, plugin.Errorf(plugin.CodeTooLarge, "", "the selected lines exceed %d bytes; read a smaller range", max)
				}
				out = append(out, chunk...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				return nil, err
			}
			break
		}
	}
	return out, nil
}

// WriteFile replaces a file atomically: the data goes to a temp file in the
// same folder which is then renamed over the target, so a reader sees the old
// content or the new, never a mix. Parents are created (0755); mode 0
// means 0644 and only permission bits are kept (no setuid from a tool). A
// final symlink is followed only when it stays in the workspace. There is no
// fsync: the working copy is scratch, durable state is the host's snapshot.
func (f *FS) WriteFile(_ context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	rel, err := f.resolve(p, true)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	if rel == "" {
		return workspace.FileInfo{}, denied(p, "is the workspace root")
	}
	if err := f.checkSize(p, data); err != nil {
		return workspace.FileInfo{}, err
	}
	r, err := f.open()
	if err != nil {
		return workspace.FileInfo{}, err
	}
	defer r.Close()
	if fi, err := r.Lstat(rel); err == nil && fi.IsDir() {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	}
	dir := path.Dir(rel)
	if err := mkdirAll(r, dir); err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	// Marked before and after the write: a snapshot that began before
	// either reads the file again next time, whatever it saw.
	f.writes.touch(rel)
	defer f.writes.touch(rel)
	tmp := path.Join(dir, ".agenthost-tmp-"+rand.Text()[:16])
	err = createFile(r, tmp, os.O_EXCL, data, mode)
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
		return workspace.FileInfo{}, mapErr(p, err)
	}
	fi, err := r.Lstat(rel)
	if err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	info := infoOf(rel, fi)
	sum := sha256.Sum256(data)
	info.SHA256 = hex.EncodeToString(sum[:])
	return info, nil
}

// Stat describes a file or folder (following in-workspace symlinks); files
// carry their sha256.
func (f *FS) Stat(_ context.Context, p string) (workspace.FileInfo, error) {
	rel, err := f.resolve(p, true)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	r, err := f.open()
	if err != nil {
		return workspace.FileInfo{}, err
	}
	defer r.Close()
	fi, err := r.Stat(rootName(rel))
	if err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	info := infoOf(rel, fi)
	if fi.Mode().IsRegular() {
		if info.SHA256, err = hashFile(r, rel); err != nil {
			return workspace.FileInfo{}, err
		}
	}
	return info, nil
}

// Remove deletes a file, a symlink (not its target) or a folder; a folder
// that is not empty needs recursive. The root itself cannot be removed.
func (f *FS) Remove(_ context.Context, p string, recursive bool) error {
	rel, err := f.resolve(p, false)
	if err != nil {
		return err
	}
	if rel == "" {
		return denied(p, "is the workspace root")
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Lstat(rel); err != nil {
		return mapErr(p, err)
	}
	f.writes.touch(rel) // before and after, as WriteFile
	defer f.writes.touch(rel)
	if recursive {
		return mapErr(p, r.RemoveAll(rel))
	}
	if err := r.Remove(rel); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is a folder that is not empty; remove it recursively", p)
		}
		return mapErr(p, err)
	}
	return nil
}

// Rename moves a file, symlink or folder, creating the target's parents. The
// target must not exist (plugin.CodeAlreadyExists); on Linux and macOS the
// check and the move are one step (RENAME_NOREPLACE, RENAME_EXCL), so a
// concurrent writer cannot be overwritten.
func (f *FS) Rename(_ context.Context, from, to string) error {
	src, err := f.resolve(from, false)
	if err != nil {
		return err
	}
	dst, err := f.resolve(to, false)
	if err != nil {
		return err
	}
	if src == "" {
		return denied(from, "is the workspace root")
	}
	if dst == "" {
		return denied(to, "is the workspace root")
	}
	if dst == src || len(dst) > len(src) && dst[:len(src)+1] == src+"/" {
		return plugin.Errorf(plugin.CodeInvalidArgument, to, "cannot move %q into itself", from)
	}
	r, err := f.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Lstat(src); err != nil {
		return mapErr(from, err)
	}
	if _, err := r.Lstat(dst); err == nil {
		return plugin.Errorf(plugin.CodeAlreadyExists, to, "%q already exists", to)
	}
	f.writes.touch(src) // before and after, as WriteFile
	f.writes.touch(dst)
	defer func() {
		f.writes.touch(src)
		f.writes.touch(dst)
	}()
	if err := r.MkdirAll(path.Dir(dst), 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			err = syscall.ENOTDIR
		}
		return mapErr(to, err)
	}
	return renameNoReplace(r, src, dst, from, to)
}

// renameNoReplace renames within r without replacing an existing target,
// through renameAt (sys_*.go) on folders opened through r.
func renameNoReplace(r *os.Root, src, dst, from, to string) error {
	sd, err := r.Open(path.Dir(src))
	if err != nil {
		return mapErr(from, err)
	}
	defer sd.Close()
	dd, err := r.Open(path.Dir(dst))
	if err != nil {
		return mapErr(to, err)
	}
	defer dd.Close()
	return renameAt(r, sd, dd, src, dst, from, to)
}

// Exec runs a command through the backend's ExecFunc, in req.Dir confined
// like any path. Env entries must be KEY=VALUE.
func (f *FS) Exec(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	if f.exec == nil {
		return workspace.ExecResult{}, plugin.Errorf(plugin.CodeUnsupported, "", "this workspace cannot run commands")
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return workspace.ExecResult{}, plugin.Errorf(plugin.CodeInvalidArgument, "argv", "argv is empty")
	}
	for _, a := range req.Argv {
		if strings.ContainsRune(a, 0) {
			return workspace.ExecResult{}, plugin.Errorf(plugin.CodeInvalidArgument, "argv", "an argument contains a NUL byte")
		}
	}
	for _, e := range req.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" || strings.ContainsRune(e, 0) {
			return workspace.ExecResult{}, plugin.Errorf(plugin.CodeInvalidArgument, "env", "env entry %q is not KEY=VALUE", e)
		}
	}
	rel, err := f.resolve(req.Dir, true)
	if err != nil {
		return workspace.ExecResult{}, err
	}
	dir := filepath.Join(f.root, filepath.FromSlash(rel))
	if fi, err := os.Stat(dir); err != nil {
		return workspace.ExecResult{}, mapErr(req.Dir, err)
	} else if !fi.IsDir() {
		return workspace.ExecResult{}, plugin.Errorf(plugin.CodeInvalidArgument, "dir", "%q is not a folder", req.Dir)
	}
	f.writes.execStart()
	defer f.writes.execEnd()
	return f.exec(ctx, f.root, dir, req)
}
