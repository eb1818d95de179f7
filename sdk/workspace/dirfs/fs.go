package dirfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// DefaultListLimit caps a listing when the caller sets no limit.
const DefaultListLimit = 10000

// ExecFunc runs a command with its working folder already resolved to a host
// path inside the workspace.
type ExecFunc func(ctx context.Context, root, dir string, req workspace.ExecRequest) (workspace.ExecResult, error)

// FS is a workspace over one host directory.
type FS struct {
	root string
	exec ExecFunc
}

// New returns a workspace rooted at dir (which must exist); exec runs
// commands, or nil to refuse them with plugin.CodeUnsupported.
func New(dir string, exec ExecFunc) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// Resolve the root itself once so that confinement checks compare real
	// paths (the root may sit under a symlinked /tmp, say).
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root %s: %w", dir, err)
	}
	return &FS{root: real, exec: exec}, nil
}

// Root is the host path of the workspace.
func (f *FS) Root() string { return f.root }

var _ workspace.Workspace = (*FS)(nil)

func mapErr(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	case errors.Is(err, fs.ErrExist):
		return plugin.Errorf(plugin.CodeAlreadyExists, p, "%q already exists", p)
	}
	var pe *plugin.Error
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s: %w", p, err)
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func infoOf(rel string, fi fs.FileInfo) workspace.FileInfo {
	out := workspace.FileInfo{Path: rel, IsDir: fi.IsDir(), Mode: uint32(fi.Mode().Perm()), ModTime: fi.ModTime()}
	if !fi.IsDir() {
		out.Size = fi.Size()
	}
	return out
}

// ReadFile reads a file, or a 1-based inclusive line range of it. FileInfo
// describes the whole file (its size and sha256), not the range.
func (f *FS) ReadFile(_ context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	full, err := f.resolve(p)
	if err != nil {
		return nil, workspace.FileInfo{}, err
	}
	fi, err := os.Stat(full)
	if err != nil {
		return nil, workspace.FileInfo{}, mapErr(p, err)
	}
	if fi.IsDir() {
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return nil, workspace.FileInfo{}, mapErr(p, err)
	}
	info := infoOf(f.relOf(full), fi)
	info.SHA256 = hashOf(data)
	if opts.StartLine < 0 || opts.EndLine < 0 || (opts.EndLine > 0 && opts.EndLine < opts.StartLine) {
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeInvalidArgument, "start_line", "invalid line range %d-%d", opts.StartLine, opts.EndLine)
	}
	if opts.StartLine > 1 || opts.EndLine > 0 {
		data = lineRange(data, opts.StartLine, opts.EndLine)
	}
	return data, info, nil
}

// lineRange cuts lines start..end (1-based, inclusive; 0 = open) keeping
// their line endings.
func lineRange(data []byte, start, end int) []byte {
	if start < 1 {
		start = 1
	}
	line, from := 1, -1
	for i := 0; i <= len(data); i++ {
		if line == start && from < 0 {
			from = i
		}
		if i == len(data) {
			break
		}
		if data[i] == '\n' {
			if end > 0 && line == end {
				return data[from : i+1]
			}
			line++
		}
	}
	if from < 0 || from >= len(data) {
		return []byte{}
	}
	return data[from:]
}

// WriteFile replaces a file atomically (temp file + rename), creating
// parent folders.
func (f *FS) WriteFile(_ context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	full, err := f.resolve(p)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	if full == f.root {
		return workspace.FileInfo{}, denied(p, "is the workspace root")
	}
	if fi, err := os.Stat(full); err == nil && fi.IsDir() {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	}
	if mode == 0 {
		mode = 0o644
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(full), ".agenthost-write-*")
	if err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return workspace.FileInfo{}, err
	}
	if err := tmp.Chmod(fs.FileMode(mode).Perm()); err != nil {
		tmp.Close()
		return workspace.FileInfo{}, err
	}
	if err := tmp.Close(); err != nil {
		return workspace.FileInfo{}, err
	}
	if err := os.Rename(tmp.Name(), full); err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	fi, err := os.Stat(full)
	if err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	info := infoOf(f.relOf(full), fi)
	info.SHA256 = hashOf(data)
	return info, nil
}

// Stat describes a file or folder.
func (f *FS) Stat(_ context.Context, p string) (workspace.FileInfo, error) {
	full, err := f.resolve(p)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	fi, err := os.Stat(full)
	if err != nil {
		return workspace.FileInfo{}, mapErr(p, err)
	}
	info := infoOf(f.relOf(full), fi)
	if !fi.IsDir() {
		data, err := os.ReadFile(full)
		if err != nil {
			return workspace.FileInfo{}, mapErr(p, err)
		}
		info.SHA256 = hashOf(data)
	}
	return info, nil
}

// List returns the entries under p in path order. Symlinks are listed as
// files without following them, so a listing never leaves the workspace.
func (f *FS) List(_ context.Context, p string, opts workspace.ListOptions) ([]workspace.FileInfo, bool, error) {
	full, err := f.resolve(p)
	if err != nil {
		return nil, false, err
	}
	fi, err := os.Stat(full)
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
	var out []workspace.FileInfo
	truncated := false
	errStop := errors.New("stop")
	err = filepath.WalkDir(full, func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fp == full {
			return nil
		}
		if len(out) >= limit {
			truncated = true
			return errStop
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := infoOf(f.relOf(fp), info)
		if opts.WithHashes && info.Mode().IsRegular() {
			data, err := os.ReadFile(fp)
			if err != nil {
				return err
			}
			e.SHA256 = hashOf(data)
		}
		out = append(out, e)
		if d.IsDir() && !opts.Recursive {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, false, mapErr(p, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, truncated, nil
}

// Remove deletes a file, or a folder (recursive is needed when it is not
// empty). The root itself cannot be removed.
func (f *FS) Remove(_ context.Context, p string, recursive bool) error {
	full, err := f.resolve(p)
	if err != nil {
		return err
	}
	if full == f.root {
		return denied(p, "is the workspace root")
	}
	if _, err := os.Lstat(full); err != nil {
		return mapErr(p, err)
	}
	if recursive {
		return mapErr(p, os.RemoveAll(full))
	}
	if err := os.Remove(full); err != nil {
		if errors.Is(err, fs.ErrExist) || strings.Contains(err.Error(), "directory not empty") {
			return plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is a folder that is not empty; remove it recursively", p)
		}
		return mapErr(p, err)
	}
	return nil
}

// Rename moves a file or folder; the target must not exist.
func (f *FS) Rename(_ context.Context, from, to string) error {
	src, err := f.resolve(from)
	if err != nil {
		return err
	}
	dst, err := f.resolve(to)
	if err != nil {
		return err
	}
	if src == f.root || dst == f.root {
		return denied(from, "is the workspace root")
	}
	if _, err := os.Lstat(src); err != nil {
		return mapErr(from, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return plugin.Errorf(plugin.CodeAlreadyExists, to, "%q already exists", to)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return mapErr(to, err)
	}
	return mapErr(from, os.Rename(src, dst))
}

// Exec runs a command through the backend's ExecFunc.
func (f *FS) Exec(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	if f.exec == nil {
		return workspace.ExecResult{}, plugin.Errorf(plugin.CodeUnsupported, "", "this workspace cannot run commands")
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return workspace.ExecResult{}, plugin.Errorf(plugin.CodeInvalidArgument, "argv", "argv is empty")
	}
	dir, err := f.resolve(req.Dir)
	if err != nil {
		return workspace.ExecResult{}, err
	}
	return f.exec(ctx, f.root, dir, req)
}

// Files reads every regular file under the root, except excluded ones, in
// path order: a sandbox snapshot.
func (f *FS) Files(exclude func(rel string) bool) ([]sandbox.File, error) {
	var out []sandbox.File
	err := filepath.WalkDir(f.root, func(fp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fp == f.root {
			return nil
		}
		rel := f.relOf(fp)
		if exclude != nil && exclude(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // folders are implied; symlinks and devices are not content
		}
		data, err := os.ReadFile(fp)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, sandbox.File{Path: rel, Mode: uint32(info.Mode().Perm()), Data: data})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}
