package patch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/require"
)

// fakeWorkspace is a map of files whose calls a test can replace one by one
// (ReadFileF, StatF, WriteFileF) to fail them the way a sandbox would. The
// tools use nothing else, so the other methods refuse.
type fakeWorkspace struct {
	mu    sync.Mutex
	files map[string]string
	modes map[string]uint32
	// writeModes records the mode each WriteFile was given, by path.
	writeModes map[string]uint32

	ReadFileF  func(ctx context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error)
	StatF      func(ctx context.Context, p string) (workspace.FileInfo, error)
	WriteFileF func(ctx context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error)
}

func newFake(files map[string]string) *fakeWorkspace {
	f := &fakeWorkspace{files: map[string]string{}, modes: map[string]uint32{}, writeModes: map[string]uint32{}}
	for p, c := range files {
		f.files[p] = c
		f.modes[p] = 0o644
	}
	return f
}

// untouchable fails the test on any workspace call: for inputs the pack
// must refuse before reaching the workspace.
func untouchable(t *testing.T) *fakeWorkspace {
	f := newFake(nil)
	f.ReadFileF = func(_ context.Context, p string, _ workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
		t.Errorf("ReadFile(%q) reached the workspace", p)
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeInternal, "", "untouchable")
	}
	f.StatF = func(_ context.Context, p string) (workspace.FileInfo, error) {
		t.Errorf("Stat(%q) reached the workspace", p)
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeInternal, "", "untouchable")
	}
	f.WriteFileF = func(_ context.Context, p string, _ []byte, _ uint32) (workspace.FileInfo, error) {
		t.Errorf("WriteFile(%q) reached the workspace", p)
		return workspace.FileInfo{}, plugin.Errorf(plugin.CodeInternal, "", "untouchable")
	}
	return f
}

func (f *fakeWorkspace) content(p string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.files[p]
	return c, ok
}

// isDir reports a folder: the parent of some file. Callers hold mu.
func (f *fakeWorkspace) isDir(p string) bool {
	for name := range f.files {
		if strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

func (f *fakeWorkspace) ReadFile(ctx context.Context, p string, opts workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
	if f.ReadFileF != nil {
		return f.ReadFileF(ctx, p, opts)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.files[p]
	switch {
	case !ok && f.isDir(p):
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeIsDirectory, p, "%q is a folder", p)
	case !ok:
		return nil, workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
	}
	return []byte(c), workspace.FileInfo{Path: p, Size: int64(len(c)), Mode: f.modes[p]}, nil
}

func (f *fakeWorkspace) Stat(ctx context.Context, p string) (workspace.FileInfo, error) {
	if f.StatF != nil {
		return f.StatF(ctx, p)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.files[p]; ok {
		return workspace.FileInfo{Path: p, Size: int64(len(c)), Mode: f.modes[p]}, nil
	}
	if f.isDir(p) {
		return workspace.FileInfo{Path: p, IsDir: true, Mode: 0o755}, nil
	}
	return workspace.FileInfo{}, plugin.Errorf(plugin.CodeNotFound, p, "%q does not exist", p)
}

func (f *fakeWorkspace) WriteFile(ctx context.Context, p string, data []byte, mode uint32) (workspace.FileInfo, error) {
	if f.WriteFileF != nil {
		return f.WriteFileF(ctx, p, data, mode)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p] = string(data)
	f.writeModes[p] = mode
	if mode == 0 {
		mode = 0o644
	}
	f.modes[p] = mode
	return workspace.FileInfo{Path: p, Size: int64(len(data)), Mode: mode}, nil
}

func (f *fakeWorkspace) List(context.Context, string, workspace.ListOptions) ([]workspace.FileInfo, bool, error) {
	return nil, false, plugin.Errorf(plugin.CodeUnsupported, "", "fake: List")
}

func (f *fakeWorkspace) Remove(context.Context, string, bool) error {
	return plugin.Errorf(plugin.CodeUnsupported, "", "fake: Remove")
}

func (f *fakeWorkspace) Rename(context.Context, string, string) error {
	return plugin.Errorf(plugin.CodeUnsupported, "", "fake: Rename")
}

func (f *fakeWorkspace) Exec(context.Context, workspace.ExecRequest) (workspace.ExecResult, error) {
	return workspace.ExecResult{}, plugin.Errorf(plugin.CodeUnsupported, "", "fake: Exec")
}

// call runs one tool of a fresh pack in-process against ws.
func call(t *testing.T, ws workspace.Workspace, tool, input string) plugin.ToolResult {
	t.Helper()
	res, err := New().Call(t.Context(), toolpack.Call{Tool: tool, Input: json.RawMessage(input)}, ws)
	require.NoError(t, err)
	return res
}

// jsonInput marshals a tool input, for values (NULs, huge strings) that are
// awkward to write as JSON literals.
func jsonInput(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// requireFailure asserts a failed result with code and field.
func requireFailure(t *testing.T, res plugin.ToolResult, code, field string) {
	t.Helper()
	require.False(t, res.OK, "want %s, got success: %s", code, res.Output)
	require.NotNil(t, res.Error)
	require.Equal(t, code, res.Error.Code, res.Error.Message)
	require.Equal(t, field, res.Error.Field, res.Error.Message)
}
