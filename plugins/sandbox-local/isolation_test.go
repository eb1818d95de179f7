package local

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireRootEnv, set to 1 (.ci/run sets it), makes the root-only tests
// fail instead of skipping when the suite does not run as root, so CI
// never silently skips the isolation checks.
const requireRootEnv = "AGENTHOST_REQUIRE_ROOT"

func requireRoot(t *testing.T) {
	t.Helper()
	if dropping() {
		return
	}
	if os.Getenv(requireRootEnv) == "1" {
		t.Fatalf("%s=1 but the tests do not run as root: the uid isolation tests cannot run", requireRootEnv)
	}
	t.Skip("the plugin drops to sandbox uids only when it runs as root; run the tests as root on Linux (CI does)")
}

// exec runs argv in a sandbox and fails the test on a transport error.
func run(t *testing.T, c *sandbox.Client, id string, argv ...string) workspace.ExecResult {
	t.Helper()
	res, err := c.Workspace(id).Exec(context.Background(), workspace.ExecRequest{Argv: argv, Timeout: 30 * time.Second})
	require.NoError(t, err, "%v", argv)
	return res
}

// TestCommandsCannotReachTheHost: run as root, the plugin runs a command as
// a sandbox uid, which cannot read the host's environment (through a
// host-like process and the plugin itself), its database and private
// folders, or another sandbox, and cannot signal the host, while it still
// edits its own workspace, files the plugin wrote included.
func TestCommandsCannotReachTheHost(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	secret := "s3cret-" + rand.Text()

	// The host's data dir, laid out and with the modes the host uses: the
	// sandboxes' root inside it, the database beside them.
	data := reachableDir(t)
	require.NoError(t, os.Chmod(data, 0o711))
	db := filepath.Join(data, "agenthost.db")
	require.NoError(t, os.WriteFile(db, []byte("DATABASE "+secret), 0o600))
	private := filepath.Join(data, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(private, "key"), []byte(secret), 0o644))

	// A host-like process holding the secret in its environment.
	host := exec.Command("sleep", "300")
	host.Env = []string{"OPENAI_API_KEY=" + secret}
	require.NoError(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })

	p := launch(t, Config{Root: filepath.Join(data, "sandboxes", "local")}, []string{"AGENTHOST_BOOTSTRAP_TOKEN=" + secret}, nil)
	info, err := p.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, plugin.IsolationUID, info.Capabilities[plugin.CapabilityIsolation])
	_, err = p.Create(ctx, sandbox.CreateSpec{ID: "a", Files: []sandbox.File{{Path: "d/e/f.txt", Data: []byte("from the host\n")}}})
	require.NoError(t, err)
	_, err = p.Create(ctx, sandbox.CreateSpec{ID: "b", Files: []sandbox.File{{Path: "secret.txt", Data: []byte(secret)}}})
	require.NoError(t, err)
	otherWS := filepath.Join(data, "sandboxes", "local", "b", "workspace")

	probes := []struct {
		name string
		argv []string
		// file the probe reads; the test (root, like the host) can, so the
		// probe's failure is the uid's doing, not a wrong path.
		file string
	}{
		{"host-like process's environment", []string{"cat", "/proc/" + strconv.Itoa(host.Process.Pid) + "/environ"}, "/proc/" + strconv.Itoa(host.Process.Pid) + "/environ"},
		{"plugin's environment", []string{"cat", "/proc/" + strconv.Itoa(p.pid) + "/environ"}, "/proc/" + strconv.Itoa(p.pid) + "/environ"},
		{"database file", []string{"cat", db}, db},
		{"file in a private folder of the host", []string{"cat", filepath.Join(private, "key")}, filepath.Join(private, "key")},
		{"another sandbox's workspace", []string{"cat", filepath.Join(otherWS, "secret.txt")}, filepath.Join(otherWS, "secret.txt")},
		{"listing the sandboxes", []string{"ls", filepath.Join(data, "sandboxes", "local")}, ""},
		{"signal the host-like process", []string{"kill", "-0", strconv.Itoa(host.Process.Pid)}, ""},
		{"signal the plugin", []string{"kill", "-0", strconv.Itoa(p.pid)}, ""},
		{"signal the test (the host)", []string{"kill", "-0", strconv.Itoa(os.Getpid())}, ""},
	}
	for _, pr := range probes {
		if pr.file != "" {
			b, err := os.ReadFile(pr.file)
			require.NoError(t, err, pr.name)
			require.Contains(t, string(b), secret, "%s: the probe's target holds the secret", pr.name)
		}
		res := run(t, p.Client, "a", pr.argv...)
		assert.NotEqual(t, 0, res.ExitCode, "%s: the command could (stdout %q)", pr.name, res.Stdout)
		assert.NotContains(t, string(res.Stdout), secret, pr.name)
		assert.NotContains(t, string(res.Stdout), "b", "%s: nothing listed", pr.name)
	}

	// Each sandbox runs as its own uid from the range.
	uids := map[string]int{}
	for _, id := range []string{"a", "b"} {
		res := run(t, p.Client, id, "id", "-u")
		require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
		uid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, uid, DefaultUIDBase, id)
		assert.Less(t, uid, DefaultUIDBase+DefaultUIDCount, id)
		uids[id] = uid
	}
	assert.NotEqual(t, uids["a"], uids["b"], "sandboxes do not share a uid")

	// The command edits what the plugin wrote, makes folders beside it, and
	// the plugin reads what the command wrote.
	res := run(t, p.Client, "a", "sh", "-c", "echo from the command >> d/e/f.txt && mkdir d/e/g && echo new > d/e/g/n.txt && echo home > $HOME/h.txt")
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	_, err = p.Workspace("a").WriteFile(ctx, "d/x/y.txt", []byte("later\n"), 0o644)
	require.NoError(t, err)
	res = run(t, p.Client, "a", "sh", "-c", "echo edited >> d/x/y.txt && touch d/x/z")
	require.Equal(t, 0, res.ExitCode, "a file and folder the plugin wrote after create: %s", res.Stderr)
	for path, want := range map[string]string{
		"d/e/f.txt": "from the host\nfrom the command\n", "d/e/g/n.txt": "new\n", "h.txt": "home\n", "d/x/y.txt": "later\nedited\n",
	} {
		got, _, err := p.Workspace("a").ReadFile(ctx, path, workspace.ReadOptions{})
		require.NoError(t, err, path)
		assert.Equal(t, want, string(got), path)
	}
}

// TestLeftoversKilledAfterPluginSIGKILL: background processes of a command
// outlive a plugin killed with SIGKILL (the host's SIGKILL takes the plugin
// with it); the next start of the plugin kills them. As root the sandbox
// uid finds them wherever they went (setsid included); as an ordinary user
// the recorded process groups do.
func TestLeftoversKilledAfterPluginSIGKILL(t *testing.T) {
	requireRoot(t) // the ordinary user's case runs its plugin as nobody
	cases := []struct {
		name string
		cred *syscall.Credential
		// escape adds a process that leaves the command's process group.
		escape bool
	}{
		{"as root", nil, true},
		{"as an ordinary user", &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root := filepath.Join(reachableDir(t), "sandboxes")
			require.NoError(t, os.Mkdir(root, 0o755))
			if tc.cred != nil {
				require.NoError(t, os.Chown(root, int(tc.cred.Uid), int(tc.cred.Gid)))
			}
			marker := "leftover-" + rand.Text()
			bg := "sh -c 'sleep 300; : " + marker + "' & "
			script := bg + bg + bg
			want := 3
			if tc.escape {
				script += "setsid " + bg
				want++
			}
			first := launch(t, Config{Root: root}, nil, tc.cred)
			_, err := first.Create(ctx, sandbox.CreateSpec{ID: "box"})
			require.NoError(t, err)
			res := run(t, first.Client, "box", "sh", "-c", script+"echo started")
			require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
			require.Eventually(t, func() bool { return len(markerPids(marker)) == want }, 10*time.Second, 20*time.Millisecond,
				"the command left %d background processes", want)
			t.Cleanup(func() {
				for _, pid := range markerPids(marker) {
					n, _ := strconv.Atoi(pid)
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			})

			require.NoError(t, syscall.Kill(first.pid, syscall.SIGKILL))
			require.Eventually(t, func() bool { return syscall.Kill(first.pid, 0) == syscall.ESRCH }, 10*time.Second, 20*time.Millisecond, "the plugin died")
			assert.Len(t, markerPids(marker), want, "the background processes outlive the plugin")

			second := launch(t, Config{Root: root}, nil, tc.cred)
			assert.Eventually(t, func() bool { return len(markerPids(marker)) == 0 }, 10*time.Second, 20*time.Millisecond,
				"the relaunched plugin killed the leftovers; still running: %v", markerPids(marker))
			// The sandbox itself is still served, and runs commands.
			res = run(t, second.Client, "box", "echo", "ok")
			assert.Equal(t, "ok\n", string(res.Stdout))
		})
	}
}

// TestStopKillsWhatLeftTheGroup: as root, Stop kills a sandbox's processes
// by uid, so one that left its process group (setsid) goes too.
func TestStopKillsWhatLeftTheGroup(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	p := launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, nil, nil)
	_, err := p.Create(ctx, sandbox.CreateSpec{ID: "box"})
	require.NoError(t, err)
	marker := "escaped-" + rand.Text()
	res := run(t, p.Client, "box", "sh", "-c", "setsid sh -c 'sleep 300; : "+marker+"' & echo started")
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	require.Eventually(t, func() bool { return len(markerPids(marker)) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, p.Stop(ctx, "box"))
	assert.Eventually(t, func() bool { return len(markerPids(marker)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"still running after Stop: %v", markerPids(marker))
}

// TestPluginsOnOneMachineKeepToTheirOwn: several root plugins on one
// machine (several hosts, or a test suite's many hosts) share the uid
// range. A plugin starting must not kill another live plugin's commands,
// and two sandboxes never get the same uid; a plugin whose root is gone
// leaves nobody to stop its commands, so the next start kills them.
func TestPluginsOnOneMachineKeepToTheirOwn(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	rootA := filepath.Join(reachableDir(t), "sandboxes")
	a := launch(t, Config{Root: rootA}, nil, nil)
	_, err := a.Create(ctx, sandbox.CreateSpec{ID: "box"})
	require.NoError(t, err)
	marker := "neighbour-" + rand.Text()
	res := run(t, a.Client, "box", "sh", "-c", "sh -c 'sleep 300; : "+marker+"' & echo started")
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr)
	require.Eventually(t, func() bool { return len(markerPids(marker)) == 1 }, 10*time.Second, 20*time.Millisecond)
	t.Cleanup(func() {
		for _, pid := range markerPids(marker) {
			n, _ := strconv.Atoi(pid)
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	})
	uidA := run(t, a.Client, "box", "id", "-u")

	// Another plugin starts (its own root): A's command lives on.
	b := launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, nil, nil)
	_, err = b.Create(ctx, sandbox.CreateSpec{ID: "box"})
	require.NoError(t, err)
	uidB := run(t, b.Client, "box", "id", "-u")
	assert.NotEqual(t, string(uidA.Stdout), string(uidB.Stdout), "two plugins never share a uid")
	assert.Len(t, markerPids(marker), 1, "a plugin's start left the other plugin's command alone")

	// A dies and its root goes: the next plugin to start kills what A's
	// commands left.
	require.NoError(t, syscall.Kill(a.pid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return syscall.Kill(a.pid, 0) == syscall.ESRCH }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, removeTree(rootA))
	launch(t, Config{Root: filepath.Join(reachableDir(t), "sandboxes")}, nil, nil)
	assert.Eventually(t, func() bool { return len(markerPids(marker)) == 0 }, 10*time.Second, 20*time.Millisecond,
		"the orphaned command was killed; still running: %v", markerPids(marker))
}
