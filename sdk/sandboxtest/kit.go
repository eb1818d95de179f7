// Package sandboxtest is the sandbox conformance kit: one call from a test
// checks a backend's whole contract through its real gRPC client — create,
// files, confinement, exec limits, snapshot, stop.
package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Options say what the kit may assume about the backend.
type Options struct {
	// LocalProcesses: the sandbox's processes run on this machine, so the
	// kit can check through /proc that stop kills them.
	LocalProcesses bool
}

var seq atomic.Int64

func newID(t *testing.T) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return fmt.Sprintf("kit-%d-%s", seq.Add(1), strings.Trim(name, "-"))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// fileSet has nested folders, an empty file and a file big enough to need
// several chunks.
func fileSet() []sandbox.File {
	big := bytes.Repeat([]byte{0, 1, 2, 3, 250, 251, 252, 253}, (1<<20)/8+3)
	return []sandbox.File{
		{Path: "README.md", Data: []byte("# app\n")},
		{Path: "src/main.ts", Data: []byte("line 1\nline 2\nline 3\n")},
		{Path: "src/deep/nested/x.json", Data: []byte(`{"a":1}`)},
		{Path: "empty.txt", Data: nil},
		{Path: "assets/blob.bin", Data: big},
	}
}

// Run checks the backend behind newClient.
func Run(t *testing.T, newClient func(t *testing.T) *sandbox.Client, opts Options) {
	c := newClient(t)
	ctx := context.Background()
	create := func(t *testing.T, files []sandbox.File) (string, workspace.Workspace) {
		t.Helper()
		id := newID(t)
		info, err := c.Create(ctx, sandbox.CreateSpec{ID: id, ScopeKey: "chat-kit", Files: files})
		require.NoError(t, err)
		assert.Equal(t, id, info.ID)
		assert.Equal(t, sandbox.StatusRunning, info.Status)
		t.Cleanup(func() { _ = c.Stop(context.Background(), id) })
		return id, c.Workspace(id)
	}

	t.Run("info", func(t *testing.T) {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, plugin.KindSandbox, info.Kind)
		assert.NotEmpty(t, info.Name)
		assert.NotEmpty(t, info.Version)
		assert.Equal(t, plugin.APIVersion, info.APIVersion)
		h, err := c.Health(ctx)
		require.NoError(t, err)
		assert.True(t, h.Healthy, h.Reason)
	})

	t.Run("create and read back", func(t *testing.T) {
		id, ws := create(t, fileSet())
		for _, f := range fileSet() {
			data, fi, err := ws.ReadFile(ctx, f.Path, workspace.ReadOptions{})
			require.NoError(t, err, f.Path)
			assert.Equal(t, len(f.Data), len(data), f.Path)
			assert.Equal(t, sum(f.Data), fi.SHA256, f.Path)
			assert.Equal(t, int64(len(f.Data)), fi.Size, f.Path)
		}
		got, err := c.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, id, got.ID)
		_, err = c.Create(ctx, sandbox.CreateSpec{ID: id})
		assert.True(t, plugin.HasCode(err, plugin.CodeAlreadyExists), "create twice: %v", err)
	})

	t.Run("file operations", func(t *testing.T) {
		_, ws := create(t, fileSet())
		part, _, err := ws.ReadFile(ctx, "src/main.ts", workspace.ReadOptions{StartLine: 2, EndLine: 3})
		require.NoError(t, err)
		assert.Equal(t, "line 2\nline 3\n", string(part))
		part, _, err = ws.ReadFile(ctx, "src/main.ts", workspace.ReadOptions{StartLine: 3})
		require.NoError(t, err)
		assert.Equal(t, "line 3\n", string(part))

		fi, err := ws.WriteFile(ctx, "new/dir/file.txt", []byte("hi"), 0)
		require.NoError(t, err)
		assert.Equal(t, sum([]byte("hi")), fi.SHA256)
		st, err := ws.Stat(ctx, "new/dir")
		require.NoError(t, err)
		assert.True(t, st.IsDir)

		entries, truncated, err := ws.List(ctx, "", workspace.ListOptions{Recursive: true, WithHashes: true})
		require.NoError(t, err)
		assert.False(t, truncated)
		paths := map[string]workspace.FileInfo{}
		for _, e := range entries {
			paths[e.Path] = e
		}
		assert.Contains(t, paths, "src/deep/nested/x.json")
		assert.Equal(t, sum([]byte(`{"a":1}`)), paths["src/deep/nested/x.json"].SHA256)
		assert.True(t, paths["src/deep"].IsDir)
		top, _, err := ws.List(ctx, "", workspace.ListOptions{})
		require.NoError(t, err)
		for _, e := range top {
			assert.NotContains(t, e.Path, "/", "a flat listing has only top-level entries")
		}
		limited, truncated, err := ws.List(ctx, "", workspace.ListOptions{Recursive: true, Limit: 2})
		require.NoError(t, err)
		assert.Len(t, limited, 2)
		assert.True(t, truncated)

		require.NoError(t, ws.Rename(ctx, "README.md", "docs/README.md"))
		_, err = ws.Stat(ctx, "README.md")
		assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
		assert.True(t, plugin.HasCode(ws.Rename(ctx, "docs/README.md", "src/main.ts"), plugin.CodeAlreadyExists))

		require.NoError(t, ws.Remove(ctx, "empty.txt", false))
		err = ws.Remove(ctx, "src", false)
		assert.Error(t, err, "a non-empty folder needs recursive")
		require.NoError(t, ws.Remove(ctx, "src", true))
		_, _, err = ws.ReadFile(ctx, "src/main.ts", workspace.ReadOptions{})
		assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
		_, _, err = ws.ReadFile(ctx, "new", workspace.ReadOptions{})
		assert.True(t, plugin.HasCode(err, plugin.CodeIsDirectory), "%v", err)
	})

	t.Run("confinement", func(t *testing.T) {
		_, ws := create(t, fileSet())
		for _, p := range []string{"../escape", "a/../../escape", "/etc/passwd", "src/\x00x", `..\x`} {
			_, _, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
			assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "read %q: %v", p, err)
			_, err = ws.WriteFile(ctx, p, []byte("x"), 0)
			assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "write %q: %v", p, err)
		}
		_, err := c.Create(ctx, sandbox.CreateSpec{ID: newID(t), Files: []sandbox.File{{Path: "../../x", Data: []byte("x")}}})
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "create with an escaping path: %v", err)
		_, err = c.Create(ctx, sandbox.CreateSpec{ID: "../evil"})
		assert.Error(t, err, "an id that is a path")

		// A symlink made by a command, then used through the file API.
		res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "ln -s / rootlink && ln -s /etc/hostname hostlink && ln -s src/main.ts inlink"}})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode, string(res.Stderr))
		for _, p := range []string{"rootlink/etc/hostname", "hostlink"} {
			_, _, err = ws.ReadFile(ctx, p, workspace.ReadOptions{})
			assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "read through %q: %v", p, err)
			_, err = ws.WriteFile(ctx, p, []byte("owned"), 0)
			assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "write through %q: %v", p, err)
		}
		data, _, err := ws.ReadFile(ctx, "inlink", workspace.ReadOptions{})
		require.NoError(t, err, "a symlink inside the workspace is fine")
		assert.Equal(t, "line 1\nline 2\nline 3\n", string(data))
	})

	t.Run("exec", func(t *testing.T) {
		_, ws := create(t, fileSet())
		var live bytes.Buffer
		res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "cat README.md; echo oops >&2; exit 3"}, Stdout: &live})
		require.NoError(t, err)
		assert.Equal(t, 3, res.ExitCode)
		assert.Equal(t, "# app\n", string(res.Stdout))
		assert.Equal(t, "oops\n", string(res.Stderr))
		assert.Equal(t, "# app\n", live.String(), "stdout streams as produced")

		res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "src/deep"})
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(strings.TrimSpace(string(res.Stdout)), "src/deep"), string(res.Stdout))
		_, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"pwd"}, Dir: "../.."})
		assert.True(t, plugin.HasCode(err, plugin.CodePathDenied), "%v", err)

		res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"no-such-command-xyz"}})
		require.NoError(t, err)
		assert.Equal(t, 127, res.ExitCode)

		res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "env"}, Env: []string{"KIT_VAR=1"}})
		require.NoError(t, err)
		assert.Contains(t, string(res.Stdout), "KIT_VAR=1")
		assert.NotContains(t, string(res.Stdout), "AGENTHOST_DATA_DIR", "the host's environment does not leak into commands")
	})

	t.Run("exec limits", func(t *testing.T) {
		_, ws := create(t, nil)
		start := time.Now()
		res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 30 & sleep 30"}, Timeout: 300 * time.Millisecond})
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.Less(t, time.Since(start), 20*time.Second, "a timed-out command (and its children) must be killed")

		res, err = ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero"}, OutputLimit: 1000})
		require.NoError(t, err)
		assert.True(t, res.OutputTruncated)
		assert.Equal(t, 1000, len(res.Stdout))
		assert.Equal(t, 0, res.ExitCode, "dropping output must not fail the command")

		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		start = time.Now()
		_, err = ws.Exec(cctx, workspace.ExecRequest{Argv: []string{"sleep", "30"}})
		assert.Error(t, err, "a cancelled exec reports the cancellation")
		assert.Less(t, time.Since(start), 20*time.Second)
	})

	t.Run("snapshot", func(t *testing.T) {
		files := append(fileSet(),
			sandbox.File{Path: "node_modules/pkg/index.js", Data: []byte("x")},
			sandbox.File{Path: "dist/app.js", Data: []byte("x")},
			sandbox.File{Path: "tsconfig.tsbuildinfo", Data: []byte("x")},
			sandbox.File{Path: "src/dist/keep-me-not.js", Data: []byte("x")})
		id, _ := create(t, files)
		got, err := c.Snapshot(ctx, id, []string{"node_modules", "dist", "*.tsbuildinfo"})
		require.NoError(t, err)
		var paths []string
		for _, f := range got {
			paths = append(paths, f.Path)
		}
		assert.Equal(t, []string{"README.md", "assets/blob.bin", "empty.txt", "src/deep/nested/x.json", "src/main.ts"}, paths)
		for _, f := range got {
			if f.Path == "assets/blob.bin" {
				assert.Equal(t, sum(fileSet()[4].Data), sum(f.Data), "large files survive chunking")
			}
		}
	})

	t.Run("stop", func(t *testing.T) {
		id, ws := create(t, fileSet())
		res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > pid"}})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		raw, _, err := ws.ReadFile(ctx, "pid", workspace.ReadOptions{})
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		require.NoError(t, err)

		require.NoError(t, c.Stop(ctx, id))
		require.NoError(t, c.Stop(ctx, id), "stopping twice is fine")
		_, err = c.Get(ctx, id)
		assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
		_, _, err = ws.ReadFile(ctx, "README.md", workspace.ReadOptions{})
		assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
		if opts.LocalProcesses {
			assert.Eventually(t, func() bool {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				// Gone, or a zombie waiting for its reaper.
				return err != nil || strings.Contains(string(b), ") Z ")
			}, 10*time.Second, 20*time.Millisecond, "a process left running survived stop")
		}
	})

	t.Run("concurrent sandboxes", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := newID(t)
				_, err := c.Create(ctx, sandbox.CreateSpec{ID: id, Files: []sandbox.File{{Path: "n.txt", Data: []byte(id)}}})
				if !assert.NoError(t, err) {
					return
				}
				data, _, err := c.Workspace(id).ReadFile(ctx, "n.txt", workspace.ReadOptions{})
				assert.NoError(t, err)
				assert.Equal(t, id, string(data))
				assert.NoError(t, c.Stop(ctx, id))
			}()
		}
		wg.Wait()
	})
}
