package toolpack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/agenthost/agenthost/sdk/workspace/dirfs"
)

// readPack is a toolpack of one tool that returns a.txt of its workspace.
type readPack struct{}

func (readPack) Info() plugin.Info {
	return plugin.Info{Name: "read", Kind: plugin.KindToolpack, Version: "test", APIVersion: plugin.APIVersion}
}

func (readPack) Tools(context.Context) ([]plugin.ToolSpec, error) {
	return []plugin.ToolSpec{{Name: "read_a", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (readPack) Call(ctx context.Context, _ toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error) {
	data, _, err := ws.ReadFile(ctx, "a.txt", workspace.ReadOptions{})
	if err != nil {
		return plugin.ToolResult{}, err
	}
	return plugin.ToolOK(string(data)), nil
}

// oneBox is a sandbox backend of one sandbox, "box", whose files are fs's.
type oneBox struct{ fs *dirfs.FS }

func (oneBox) Info() plugin.Info {
	return plugin.Info{Name: "onebox", Kind: plugin.KindSandbox, Version: "test", APIVersion: plugin.APIVersion}
}
func (oneBox) Create(context.Context, sandbox.CreateSpec) (sandbox.Info, error) {
	return sandbox.Info{}, plugin.Errorf(plugin.CodeUnsupported, "", "one box only")
}
func (oneBox) Get(context.Context, string) (sandbox.Info, error) {
	return sandbox.Info{ID: "box", Status: sandbox.StatusRunning}, nil
}
func (oneBox) Stop(context.Context, string) error { return nil }
func (b oneBox) Workspace(_ context.Context, id string) (workspace.Workspace, error) {
	if id != "box" {
		return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "no sandbox %q", id)
	}
	return b.fs, nil
}
func (oneBox) Snapshot(context.Context, string, []string, func(sandbox.SnapshotEntry) error) error {
	return nil
}

// folderWith is a dirfs workspace holding a.txt with content.
func folderWith(t *testing.T, content string) *dirfs.FS {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := dirfs.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestCallDirect: a call granted the sandbox plugin's own socket reads the
// sandbox there; one whose socket is not there (a plugin on another
// machine, a socket a temp cleaner removed) reads the same workspace
// through the host, as does a call without a grant.
func TestCallDirect(t *testing.T) {
	ctx := context.Background()
	viaHost := folderWith(t, "through the host")
	pack := plugintest.Toolpack(t, readPack{}, nil, func(_ context.Context, id string) (workspace.Workspace, error) {
		if id != "ws_lent" {
			return nil, plugin.Errorf(plugin.CodeNotFound, "workspace_id", "not lent: %q", id)
		}
		return viaHost, nil
	})
	box := plugintest.Sandbox(t, oneBox{fs: folderWith(t, "from the sandbox itself")}, nil)
	if err := box.EnableDirect(ctx); err != nil {
		t.Fatal(err)
	}
	grant, ok := box.Direct("box", time.Now().Add(time.Minute))
	if !ok {
		t.Fatal("no grant after EnableDirect")
	}
	call := toolpack.Call{RunID: "run_1", CallID: "call_1", Tool: "read_a", Input: json.RawMessage(`{}`)}
	read := func(name string, do func() (plugin.ToolResult, error)) string {
		t.Helper()
		res, err := do()
		if err != nil || !res.OK {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
		var got string
		if err := json.Unmarshal(res.Output, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	if got := read("direct", func() (plugin.ToolResult, error) { return pack.CallDirect(ctx, call, "ws_lent", grant) }); got != "from the sandbox itself" {
		t.Errorf("a granted call read %q", got)
	}
	gone := grant
	gone.Address = filepath.Join(t.TempDir(), "no-such.sock")
	if got := read("socket gone", func() (plugin.ToolResult, error) { return pack.CallDirect(ctx, call, "ws_lent", gone) }); got != "through the host" {
		t.Errorf("a call whose socket is gone read %q", got)
	}
	if got := read("no grant", func() (plugin.ToolResult, error) { return pack.Call(ctx, call, "ws_lent") }); got != "through the host" {
		t.Errorf("a call without a grant read %q", got)
	}
}
