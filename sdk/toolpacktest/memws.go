package toolpacktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// spaces is the kit's side of the host: the workspaces it lends, by id, and
// the workspace.Resolver the toolpack's client serves them through.
type spaces struct {
	mu   sync.Mutex
	next int
	byID map[string]*memWorkspace
}

func newSpaces() *spaces { return &spaces{byID: map[string]*memWorkspace{}} }

// lend creates a workspace holding files and returns its id.
func (s *spaces) lend(files map[string]string) (string, *memWorkspace, error) {
	ws, err := newMemWorkspace(files)
	if err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := fmt.Sprintf("toolpacktest-ws-%d", s.next)
	s.byID[id] = ws
	return id, ws, nil
}

func (s *spaces) resolve(ctx context.Context, id string) (workspace.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.byID[id]
	if !ok {
		return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "no workspace %q", id)
	}
	return ws, nil
}

// memFile is one file of a memWorkspace.
type memFile struct {
	data []byte
	mode uint32
}

// memWorkspace is an in-memory workspace.Workspace with the contract's path
// rules: enough for toolpacks, which only touch files. Folders exist only
// as the parents of files, so an empty folder cannot be represented. Exec is
// unsupported.
type memWorkspace struct {
	mu    sync.Mutex
	files map[string]memFile
	// exec answers Exec when the case gives one; set before the workspace
	// is lent and never changed after.
	exec func(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error)
}

var _ workspace.Workspace = (*memWorkspace)(nil)

// defaultMode is what a write with mode 0 gets, as on a real workspace.
const defaultMode = 0o644

func newMemWorkspace(files map[string]string) (*memWorkspace, error) {
	w := &memWorkspace{files: map[string]memFile{}}
	for p, c := range files {
		if _, err := w.WriteFile(context.Background(), p, []byte(c), 0); err != nil {
			return nil, fmt.Errorf("case file %q: %w", p, err)
		}
	}
	return w, nil
}

// cleanPath validates a workspace path the way the workspace contract asks and
// returns it cleaned, "" for the root.
func cleanPath(p string) (string, error) {
	switch {
	case strings.ContainsRune(p, 0), strings.Contains(p, `\`):
		return "", plugin.Errorf(plugin.CodePathDenied, p, "path %q contains a NUL byte or a backslash", p)
	case strings.HasPrefix(p, "/"):
		return "", plugin.Errorf(plugin.CodePathDenied, p, "path %q is absolute", p)
	}
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return "", plugin.Errorf(plugin.CodePathDenied, p, "path %q climbs out of the workspace", p)
			}
		default:
			depth++
		}
	}
	c := path.Clean(p)
	if c == "." {
		c = ""
	}
	return c, nil
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileInfo(p string, f memFile) workspace.FileInfo {
	return workspace.FileInfo{Path: p, Size: int64(len(f.data)), SHA256: hashOf(f.data), Mode: f.mode}
}

// isDir reports whether p is a folder: the root, or the parent of a file.
// Callers hold mu.
func (w *memWorkspace) isDir(p string) bool {
	if p == "" {
		return true
	}
	for f := range w.files {
		if strings.HasPrefix(f, p+"/") {
			return true
		}
	}
	return false
}

// fileInTheWay refuses a path under a file (a/b when a is a file), which a
// real filesystem cannot hold either. Callers hold mu.
func (w *memWorkspace) fileInTheWay(p string) error {
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if _, ok := w.files[dir]; ok {
			return plugin.Errorf(plugin.CodeAlreadyExists, p, "%q is a file, so it cannot hold %q", dir, p)
		}
	}
	return nil
}

func (w *memWorkspace) ReadFile(ctx context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, workspace.FileInfo{}, err
	}
	c, err := cleanPath(p)
	if err != nil {
		return nil, workspace.FileInfo{}, err
	}
	if opts.StartLine < 0 || opts.EndLine < 0 || (opts.EndLine > 0 && opts.EndLine < opts.StartLine) {
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeInvalidArgument, "start_line", "invalid line range %d-%d", opts.StartLine, opts.EndLine)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.files[c]
	switch {
	case !ok && w.isDir(c):
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	case !ok:
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	// FileInfo describes the whole file even when a range is asked for.
	data := f.data
	if opts.StartLine > 1 || opts.EndLine > 0 {
		lines := strings.SplitAfter(string(data), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		start, end := max(opts.StartLine, 1), opts.EndLine
		if end == 0 || end > len(lines) {
			end = len(lines)
		}
		if start > end {
			return []byte{}, fileInfo(c, f), nil
		}
		return []byte(strings.Join(lines[start-1:end], "")), fileInfo(c, f), nil
	}
	return append([]byte(nil), data...), fileInfo(c, f), nil
}

func (w *memWorkspace) WriteFile(ctx context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return workspace.FileInfo{}, err
	}
	c, err := cleanPath(p)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	if c == "" {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodePathDenied, p, "path %q is the workspace root", p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.isDir(c) {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	}
	if err := w.fileInTheWay(c); err != nil {
		return workspace.FileInfo{}, err
	}
	if mode == 0 {
		mode = defaultMode
	}
	f := memFile{data: append([]byte(nil), data...), mode: mode}
	w.files[c] = f
	return fileInfo(c, f), nil
}

func (w *memWorkspace) List(ctx context.Context, p string, opts workspace.ListOptions) ([]workspace.FileInfo, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	c, err := cleanPath(p)
	if err != nil {
		return nil, false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.files[c]; ok {
		return nil, false, plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is not a folder", p)
	}
	if !w.isDir(c) {
		return nil, false, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	seen := map[string]workspace.FileInfo{}
	for name, f := range w.files {
		rest := name
		if c != "" {
			var ok bool
			if rest, ok = strings.CutPrefix(name, c+"/"); !ok {
				continue
			}
		}
		// Every folder between c and the file is an entry too.
		parts := strings.Split(rest, "/")
		for i := range parts {
			if i > 0 && slices.ContainsFunc(opts.SkipDirs, func(s string) bool { return strings.EqualFold(s, parts[i-1]) }) {
				break // inside a skipped folder: the folder is listed, not its contents
			}
			entry := path.Join(c, strings.Join(parts[:i+1], "/"))
			if i == len(parts)-1 {
				fi := fileInfo(entry, f)
				if !opts.WithHashes {
					fi.SHA256 = ""
				}
				seen[entry] = fi
			} else {
				seen[entry] = workspace.FileInfo{Path: entry, IsDir: true, Mode: 0o755}
			}
			if !opts.Recursive {
				break
			}
		}
	}
	out := make([]workspace.FileInfo, 0, len(seen))
	for _, fi := range seen {
		out = append(out, fi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if opts.Limit > 0 && len(out) > opts.Limit {
		return out[:opts.Limit], true, nil
	}
	return out, false, nil
}

func (w *memWorkspace) Stat(ctx context.Context, p string) (workspace.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return workspace.FileInfo{}, err
	}
	c, err := cleanPath(p)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if f, ok := w.files[c]; ok {
		return fileInfo(c, f), nil
	}
	if w.isDir(c) {
		return workspace.FileInfo{Path: c, IsDir: true, Mode: 0o755}, nil
	}
	return workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
}

func (w *memWorkspace) Remove(ctx context.Context, p string, recursive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := cleanPath(p)
	if err != nil {
		return err
	}
	if c == "" {
		return plugin.Errorf(plugin.CodePathDenied, p, "the workspace root cannot be removed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.files[c]; ok {
		delete(w.files, c)
		return nil
	}
	if !w.isDir(c) {
		return plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	if !recursive {
		// Folders here always hold a file, so they are never empty.
		return plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is a folder that is not empty", p)
	}
	for f := range w.files {
		if strings.HasPrefix(f, c+"/") {
			delete(w.files, f)
		}
	}
	return nil
}

func (w *memWorkspace) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := cleanPath(from)
	if err != nil {
		return err
	}
	t, err := cleanPath(to)
	if err != nil {
		return err
	}
	if f == "" || t == "" {
		return plugin.Errorf(plugin.CodePathDenied, from, "the workspace root cannot be renamed or replaced")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, exists := w.files[t]; exists || w.isDir(t) {
		return plugin.Errorf(plugin.CodeAlreadyExists, to, "%q exists", to)
	}
	if err := w.fileInTheWay(t); err != nil {
		return err
	}
	if file, ok := w.files[f]; ok {
		delete(w.files, f)
		w.files[t] = file
		return nil
	}
	if !w.isDir(f) {
		return plugin.Errorf(plugin.CodeNotFound, from, "%q does not exist", from)
	}
	if strings.HasPrefix(t, f+"/") {
		return plugin.Errorf(plugin.CodeInvalidArgument, to, "cannot move %q into itself", from)
	}
	moved := map[string]memFile{}
	for name, file := range w.files {
		if rest, ok := strings.CutPrefix(name, f+"/"); ok {
			delete(w.files, name)
			moved[t+"/"+rest] = file
		}
	}
	for name, file := range moved {
		w.files[name] = file
	}
	return nil
}

func (w *memWorkspace) Exec(ctx context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
	if w.exec != nil {
		return w.exec(ctx, req)
	}
	return workspace.ExecResult{}, plugin.Errorf(plugin.CodeUnsupported, "", "the conformance kit's workspace cannot run commands")
}
