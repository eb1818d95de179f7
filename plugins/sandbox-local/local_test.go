package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/sandboxtest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testProvider(testing.TB) *Provider {
	return NewWithLogger(hclog.New(&hclog.LoggerOptions{Output: hclog.DefaultOutput, Level: hclog.Warn}))
}

// reachableDir is a temporary folder sandbox uids can pass through
// (t.TempDir's parents are 0700): roots of sandboxes whose commands run
// live under it.
func reachableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "local-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = removeTree(dir) })
	return dir
}

func configured(t *testing.T, root string) *Provider {
	t.Helper()
	p := testProvider(t)
	cfg, err := json.Marshal(Config{Root: root})
	require.NoError(t, err)
	require.NoError(t, p.Configure(context.Background(), cfg))
	return p
}

// TestConformance runs the SDK's kit; as root (CI's case) commands run as
// sandbox uids, so the root lies where they can reach it, and a sandbox in
// which nothing runs is vouched for (at the plugin's own uid, never).
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(t *testing.T) *sandbox.Client {
		cfg, err := json.Marshal(Config{Root: filepath.Join(reachableDir(t), "sandboxes")})
		require.NoError(t, err)
		return plugintest.Sandbox(t, testProvider(t), cfg)
	}, sandboxtest.Options{LocalProcesses: true, TracksChanges: true, ListsChanges: true, Settles: dropping()})
}

func TestInfo(t *testing.T) {
	info := New().Info()
	assert.Equal(t, "local", info.Name)
	assert.Equal(t, plugin.KindSandbox, info.Kind)
	assert.Equal(t, "0.1.0", info.Version)
	assert.Equal(t, plugin.APIVersion, info.APIVersion)
	want := plugin.IsolationNone
	if dropping() {
		want = plugin.IsolationUID
	}
	assert.Equal(t, want, info.Capabilities[plugin.CapabilityIsolation], "root drops to sandbox uids; another user cannot")
	assert.Contains(t, info.Description, "not isolated")
}

func TestConfigure(t *testing.T) {
	ctx := context.Background()
	dir := reachableDir(t) // as root a private default root would move (TestUnreachableDefaultRootFallsBack)
	cases := []struct {
		name string
		raw  string
		code string
		want func(t *testing.T, c Config)
	}{
		{"empty means defaults", ``, "", func(t *testing.T, c Config) {
			assert.Equal(t, filepath.Join(dir, "data", "sandboxes", "local"), c.Root)
			assert.Equal(t, int64(DefaultMaxFileBytes), c.MaxFileBytes)
		}},
		{"null means defaults", `null`, "", func(t *testing.T, c Config) {
			assert.Equal(t, filepath.Join(dir, "data", "sandboxes", "local"), c.Root)
		}},
		{"every key", `{"root":"` + dir + `/r","exec_timeout_s":5,"output_limit_bytes":10,"max_file_bytes":20,"exec_cpu_s":30,"exec_file_size_bytes":40}`, "",
			func(t *testing.T, c Config) {
				want := Config{Root: dir + "/r", ExecTimeoutS: 5, OutputLimitBytes: 10, MaxFileBytes: 20, ExecCPUS: 30, ExecFileSizeBytes: 40}
				if dropping() {
					want.UIDBase, want.UIDCount = DefaultUIDBase, DefaultUIDCount
				}
				assert.Equal(t, want, c)
			}},
		{"relative root is made absolute", `{"root":"rel/x"}`, "", func(t *testing.T, c Config) {
			assert.Equal(t, filepath.Join(dir, "rel", "x"), c.Root)
		}},
		{"unknown key", `{"rooot":"/x"}`, plugin.CodeInvalidArgument, nil},
		{"negative uid_base", `{"uid_base":-1}`, plugin.CodeInvalidArgument, nil},
		{"uid range past 32 bits", `{"uid_base":4294967000,"uid_count":1000}`, plugin.CodeInvalidArgument, nil},
		{"wrong type", `{"exec_timeout_s":"5"}`, plugin.CodeInvalidArgument, nil},
		{"negative", `{"output_limit_bytes":-1}`, plugin.CodeInvalidArgument, nil},
		{"root under a file", `{"root":"` + dir + `/file/x"}`, plugin.CodeInvalidArgument, nil},
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
	t.Chdir(dir)
	t.Setenv("AGENTHOST_DATA_DIR", "")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testProvider(t)
			err := p.Configure(ctx, json.RawMessage(tc.raw))
			if tc.code != "" {
				assert.True(t, plugin.HasCode(err, tc.code), "%v", err)
				return
			}
			require.NoError(t, err)
			tc.want(t, p.config())
		})
	}
	// The default root is under the data dir (a reachable one: as root a
	// private one moves elsewhere, TestUnreachableDefaultRootFallsBack).
	data := filepath.Join(reachableDir(t), "datadir")
	t.Setenv("AGENTHOST_DATA_DIR", data)
	p := testProvider(t)
	require.NoError(t, p.Configure(ctx, nil))
	assert.Equal(t, filepath.Join(data, "sandboxes", "local"), p.config().Root)
}

func TestIDs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	p := configured(t, root)
	for _, id := range []string{"", ".", "..", "a/b", "../x", "a b", "é", strings.Repeat("a", 129), "~staging-x"} {
		_, err := p.Create(ctx, sandbox.CreateSpec{ID: id})
		assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "create %q: %v", id, err)
		_, err = p.Get(ctx, id)
		assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "get %q: %v", id, err)
		assert.NoError(t, p.Stop(ctx, id), "stop %q", id)
	}
	assert.DirExists(t, root, "stopping '..' or '.' removed nothing")
	for _, id := range []string{"a", "A.b-c_d", "..a", strings.Repeat("z", 128)} {
		_, err := p.Create(ctx, sandbox.CreateSpec{ID: id})
		require.NoError(t, err, id)
		assert.DirExists(t, filepath.Join(root, id, "workspace"))
		require.NoError(t, p.Stop(ctx, id))
		assert.NoDirExists(t, filepath.Join(root, id))
	}
}

func TestCreateLeavesNothingOnFailure(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	p := configured(t, root)
	_, err := p.Create(ctx, sandbox.CreateSpec{ID: "bad", Files: []sandbox.File{{Path: "a"}, {Path: "a/b"}}})
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "a file where a folder must go: %v", err)
	_, err = p.Create(ctx, sandbox.CreateSpec{ID: "big", Files: []sandbox.File{{Path: "a", Data: make([]byte, DefaultMaxFileBytes+1)}}})
	assert.True(t, plugin.HasCode(err, plugin.CodeTooLarge), "%v", err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, entries, "no sandbox and no staging folder remain")
}

// TestRediscovery: a relaunched plugin (a new Provider on the same root)
// serves a sandbox created before, as it was.
func TestRediscovery(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	first := configured(t, root)
	created, err := first.Create(ctx, sandbox.CreateSpec{ID: "sb1", ScopeKey: "chat-1", Files: []sandbox.File{{Path: "a.txt", Data: []byte("kept")}}})
	require.NoError(t, err)

	second := configured(t, root)
	got, err := second.Get(ctx, "sb1")
	require.NoError(t, err)
	assert.Equal(t, created.ScopeKey, got.ScopeKey)
	assert.True(t, created.CreatedAt.Equal(got.CreatedAt), "%v vs %v", created.CreatedAt, got.CreatedAt)
	ws, err := second.Workspace(ctx, "sb1")
	require.NoError(t, err)
	data, _, err := ws.ReadFile(ctx, "a.txt", workspace.ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kept", string(data))
	_, err = second.Create(ctx, sandbox.CreateSpec{ID: "sb1"})
	assert.True(t, plugin.HasCode(err, plugin.CodeAlreadyExists), "%v", err)

	// A folder without its record (an older layout) is still served.
	require.NoError(t, os.Remove(filepath.Join(root, "sb1", "meta.json")))
	third := configured(t, root)
	got, err = third.Get(ctx, "sb1")
	require.NoError(t, err)
	assert.False(t, got.CreatedAt.IsZero())

	require.NoError(t, third.Stop(ctx, "sb1"))
	assert.NoDirExists(t, filepath.Join(root, "sb1"))
	_, err = third.Get(ctx, "sb1")
	assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
}

func TestHealthAndPorts(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(reachableDir(t), "sandboxes")
	p := configured(t, root)
	assert.True(t, p.Health(ctx).Healthy, p.Health(ctx).Reason)
	if dropping() {
		// Commands run as sandbox uids, which cannot pass a 0700 folder.
		closed := configured(t, filepath.Join(t.TempDir(), "sandboxes"))
		h := closed.Health(ctx)
		assert.False(t, h.Healthy)
		assert.Contains(t, h.Reason, "not reachable by uid")
	}

	_, err := p.Create(ctx, sandbox.CreateSpec{ID: "web"})
	require.NoError(t, err)
	ep, err := p.ExposePort(ctx, "web", 5173)
	require.NoError(t, err)
	assert.Equal(t, sandbox.Endpoint{Address: "127.0.0.1:5173", URL: "http://127.0.0.1:5173"}, ep)
	_, err = p.ExposePort(ctx, "web", 70000)
	assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "%v", err)

	// A root that cannot be a folder.
	require.NoError(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	p.mu.Lock()
	p.cfg.Root = filepath.Join(root, "file", "sub")
	p.mu.Unlock()
	h := p.Health(ctx)
	assert.False(t, h.Healthy)
	assert.Contains(t, h.Reason, "sandbox root")
}

func TestLeftoversAreSwept(t *testing.T) {
	root := t.TempDir()
	old := filepath.Join(root, stagingPrefix+"x-1")
	fresh := filepath.Join(root, trashPrefix+"y-2")
	require.NoError(t, os.MkdirAll(filepath.Join(old, "workspace"), 0o755))
	require.NoError(t, os.MkdirAll(fresh, 0o755))
	longAgo := time.Now().Add(-2 * leftoverAge)
	require.NoError(t, os.Chtimes(old, longAgo, longAgo))
	configured(t, root)
	assert.NoDirExists(t, old, "an old staging folder is removed")
	assert.DirExists(t, fresh, "a recent one may belong to another process")
}

// TestUnreachableDefaultRootFallsBack: as root, with the data dir under a
// private folder (a checkout in /root), the default root would be out of
// the sandbox uids' reach; the plugin moves it under FallbackRootDir and
// its commands run.
func TestUnreachableDefaultRootFallsBack(t *testing.T) {
	requireRoot(t) // only a root plugin runs commands as other uids
	ctx := context.Background()
	// The state folder closed, as the uid claims' MkdirAll of an earlier
	// version left it when it came first: the fallback opens it to pass.
	require.NoError(t, prepareStateDir())
	require.NoError(t, os.Chmod(StateDir, 0o700))
	private := filepath.Join(t.TempDir(), "home")
	require.NoError(t, os.MkdirAll(private, 0o700))
	t.Setenv("AGENTHOST_DATA_DIR", filepath.Join(private, "data"))
	p := testProvider(t)
	require.NoError(t, p.Configure(ctx, nil))
	root := p.config().Root
	t.Cleanup(func() { _ = removeTree(root) })
	assert.True(t, strings.HasPrefix(root, FallbackRootDir+"/"), root)
	require.True(t, p.Health(ctx).Healthy, p.Health(ctx).Reason)

	_, err := p.Create(ctx, sandbox.CreateSpec{ID: "fallback", Files: []sandbox.File{{Path: "a.txt", Data: []byte("a\n"), Mode: 0o644}}})
	require.NoError(t, err)
	defer func() { _ = p.Stop(ctx, "fallback") }()
	ws, err := p.Workspace(ctx, "fallback")
	require.NoError(t, err)
	res, err := ws.Exec(ctx, workspace.ExecRequest{Argv: []string{"sh", "-c", "cat a.txt && echo b > b.txt"}})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	assert.Equal(t, "a\n", string(res.Stdout))
}
