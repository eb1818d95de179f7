package toolpacktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// memWorkspace is an in-memory workspace: enough for toolpacks that only
// touch files. Exec is unsupported.
type memWorkspace struct {
	mu    sync.Mutex
	files map[string][]byte
}

// NewMemoryWorkspace returns a workspace holding files (path → content).
func NewMemoryWorkspace(files map[string]string) workspace.Workspace {
	w := &memWorkspace{files: map[string][]byte{}}
	for p, c := range files {
		w.files[p] = []byte(c)
	}
	return w
}

func clean(p string) (string, error) {
	if strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
		return "", plugin.Errorf(plugin.CodePathDenied, p, "path %q is not a relative workspace path", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", plugin.Errorf(plugin.CodePathDenied, p, "path %q climbs out", p)
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

func (w *memWorkspace) isDir(p string) bool {
	for f := range w.files {
		if p == "" || strings.HasPrefix(f, p+"/") {
			return true
		}
	}
	return false
}

func (w *memWorkspace) ReadFile(_ context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	c, err := clean(p)
	if err != nil {
		return nil, workspace.FileInfo{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	data, ok := w.files[c]
	if !ok {
		if w.isDir(c) {
			return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
		}
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	fi := workspace.FileInfo{Path: c, Size: int64(len(data)), SHA256: hashOf(data), Mode: 0o644}
	if opts.StartLine > 1 || opts.EndLine > 0 {
		lines := strings.SplitAfter(string(data), "\n")
		start, end := max(opts.StartLine, 1), opts.EndLine
		if end == 0 || end > len(lines) {
			end = len(lines)
		}
		if start > end {
			return []byte{}, fi, nil
		}
		return []byte(strings.Join(lines[start-1:end], "")), fi, nil
	}
	return append([]byte(nil), data...), fi, nil
}

func (w *memWorkspace) WriteFile(_ context.Context, p string, data []byte, _ uint32) (workspace.FileInfo, error) {
	c, err := clean(p)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c == "" || w.isDir(c) {
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	}
	w.files[c] = append([]byte(nil), data...)
	return workspace.FileInfo{Path: c, Size: int64(len(data)), SHA256: hashOf(data), Mode: 0o644}, nil
}

func (w *memWorkspace) List(_ context.Context, p string, opts workspace.ListOptions) ([]workspace.FileInfo, bool, error) {
	c, err := clean(p)
	if err != nil {
		return nil, false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]workspace.FileInfo{}
	for f, data := range w.files {
		if c != "" && !strings.HasPrefix(f, c+"/") {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(f, c), "/")
		parts := strings.Split(rest, "/")
		prefix := c
		for i, part := range parts {
			prefix = path.Join(prefix, part)
			if i == len(parts)-1 {
				seen[prefix] = workspace.FileInfo{Path: prefix, Size: int64(len(data)), SHA256: hashOf(data), Mode: 0o644}
			} else {
				seen[prefix] = workspace.FileInfo{Path: prefix, IsDir: true, Mode: 0o755}
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
	c, err := clean(p)
	if err != nil {
		return workspace.FileInfo{}, err
	}
	w.mu.Lock()
	data, ok := w.files[c]
	dir := w.isDir(c)
	w.mu.Unlock()
	switch {
	case ok:
		return workspace.FileInfo{Path: c, Size: int64(len(data)), SHA256: hashOf(data), Mode: 0o644}, nil
	case dir:
		return workspace.FileInfo{Path: c, IsDir: true, Mode: 0o755}, nil
	}
	return workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
}

func (w *memWorkspace) Remove(_ context.Context, p string, recursive bool) error {
	c, err := clean(p)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.files[c]; ok {
		delete(w.files, c)
		return nil
	}
	if !w.isDir(c) || c == "" {
		return plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	if !recursive {
		return plugin.Errorf(plugin.CodeInvalidArgument, p, "%q is a folder that is not empty", p)
	}
	for f := range w.files {
		if strings.HasPrefix(f, c+"/") {
			delete(w.files, f)
		}
	}
	return nil
}

func (w *memWorkspace) Rename(_ context.Context, from, to string) error {
	f, err := clean(from)
	if err != nil {
		return err
	}
	t, err := clean(to)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	data, ok := w.files[f]
	if !ok {
		return plugin.Errorf(plugin.CodeNotFound, from, "%q does not exist", from)
	}
	if _, exists := w.files[t]; exists || w.isDir(t) {
		return plugin.Errorf(plugin.CodeAlreadyExists, to, "%q exists", to)
	}
	delete(w.files, f)
	w.files[t] = data
	return nil
}

func (w *memWorkspace) Exec(context.Context, workspace.ExecRequest) (workspace.ExecResult, error) {
	return workspace.ExecResult{}, plugin.Errorf(plugin.CodeUnsupported, "", "the conformance workspace cannot run commands")
}

// Files returns a copy of the workspace's content.
func Files(ws workspace.Workspace) map[string]string {
	w, ok := ws.(*memWorkspace)
	if !ok {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for p, d := range w.files {
		out[p] = string(d)
	}
	return out
}
