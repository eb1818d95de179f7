//go:build linux

package bwrap

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingListener accepts on the host's 127.0.0.1 and counts connections.
func countingListener(t *testing.T) (port string, accepted chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	accepted = make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	_, port, _ = net.SplitHostPort(l.Addr().String())
	return port, accepted
}

// getWhenServed GETs url until a server in a sandbox answers 200 and
// returns the body.
func getWhenServed(t *testing.T, url string) string {
	t.Helper()
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "%s never answered", url)
	return string(body)
}

// services returns the sandbox's workspace as workspace.Services.
func services(t *testing.T, ws workspace.Workspace) workspace.Services {
	t.Helper()
	svc, ok := ws.(workspace.Services)
	require.True(t, ok)
	return svc
}

// waitFile waits for a file a service writes into the workspace, ending
// in a line "done".
func waitFile(t *testing.T, ws workspace.Workspace, path string) string {
	t.Helper()
	var out string
	require.Eventually(t, func() bool {
		b, _, err := ws.ReadFile(context.Background(), path, workspace.ReadOptions{})
		out = string(b)
		return err == nil && strings.HasSuffix(out, "done\n")
	}, 30*time.Second, 20*time.Millisecond, "the service never wrote %s", path)
	return out
}

// TestServiceIsolation: a service on the loopback policy reaches exactly
// its Connect addresses (a loopback IP as is, a host name through its
// alias), nothing else on the host, none of the host's files, environment
// or other sandboxes; plugins reach its port; its state folder is its own.
func TestServiceIsolation(t *testing.T) {
	data := reachableDir(t)
	root := filepath.Join(data, "sandboxes")
	db := filepath.Join(data, "agenthost.db")
	require.NoError(t, os.WriteFile(db, []byte("host secrets"), 0o644))
	allowed, allowedHits := countingListener(t)
	named, namedHits := countingListener(t)
	forbidden, forbiddenHits := countingListener(t)

	c, _ := launchProcess(t, "agenthost-sandbox-bwrap", []string{"-network=" + NetworkLoopback},
		[]string{"AGENTHOST_TEST_HOST_SECRET=leaked"}, Config{Root: root})
	ctx := context.Background()
	_, ws := create(t, c, sandbox.File{Path: "www/index.html", Data: []byte("served by the service")})
	otherID, _ := create(t, c, sandbox.File{Path: "secret.txt", Data: []byte("other sandbox")})

	probe := func(what, cmd string) string {
		return fmt.Sprintf("if %s >/dev/null 2>&1; then echo '%s: yes'; else echo '%s: no'; fi\n", cmd, what, what)
	}
	script := "set +e\n" +
		probe("allowed ip", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/"+allowed+"; head -1 <&3'") +
		probe("allowed name", "bash -c 'exec 3<>/dev/tcp/localhost/"+named+"; head -1 <&3'") +
		probe("forbidden port", "bash -c 'exec 3<>/dev/tcp/127.0.0.1/"+forbidden+"'") +
		probe("internet", "bash -c 'exec 3<>/dev/tcp/1.1.1.1/53'") +
		probe("shadow", "cat /etc/shadow") +
		probe("database", "cat "+db) +
		probe("other sandbox", "cat "+filepath.Join(root, otherID, "workspace", "secret.txt")) +
		probe("root listing", "ls "+root) +
		probe("state writable", "touch \"$HOME/mark\"") +
		probe("workspace writable", "touch ws-mark") +
		"echo \"uid: $(id -u)\"\n" +
		"echo \"host secret: ${AGENTHOST_TEST_HOST_SECRET:-none}\"\n" +
		"echo done\n"
	svc := services(t, ws)
	// The probe goes through the workspace: the service sees only that.
	_, err := ws.WriteFile(ctx, "probe.sh", []byte(script), 0)
	require.NoError(t, err)
	info, err := svc.StartService(ctx, workspace.ServiceSpec{
		Name:    "web",
		Argv:    []string{"sh", "-c", "sh probe.sh > probe.out 2>&1; exec python3 -m http.server -d www -b 127.0.0.1 {port}"},
		Connect: []string{"127.0.0.1:" + allowed, "localhost:" + named},
	})
	require.NoError(t, err)
	require.NotEmpty(t, info.Address)

	out := waitFile(t, ws, "probe.out")
	for _, want := range []string{
		"allowed ip: yes", "allowed name: yes", "forbidden port: no", "internet: no", "shadow: no",
		"database: no", "other sandbox: no", "root listing: no", "state writable: yes", "workspace writable: yes",
		"uid: 1000", "host secret: none",
	} {
		assert.Contains(t, out, want+"\n")
	}
	assert.Len(t, allowedHits, 1, "the allowed address was reached once")
	assert.Len(t, namedHits, 1, "the allowed name was reached once")
	assert.Empty(t, forbiddenHits, "a port not in Connect was reached")

	assert.Equal(t, "served by the service", getWhenServed(t, "http://"+info.Address+"/index.html"))

	si, err := svc.ServiceStatus(ctx, "web")
	require.NoError(t, err)
	assert.True(t, si.Running)
	assert.Positive(t, si.RSSBytes, "its memory is measured")
	require.NoError(t, svc.StopService(ctx, "web", 5*time.Second))
	si, err = svc.ServiceStatus(ctx, "web")
	require.NoError(t, err)
	assert.False(t, si.Running)
	_, err = http.Get("http://" + info.Address + "/index.html")
	assert.Error(t, err, "the forwarded port closes with the service")
}

// TestServiceRefusals: a Connect IP that is not loopback, a malformed
// address and a read-only path that would show the sandbox root are
// refused before anything starts.
func TestServiceRefusals(t *testing.T) {
	root := filepath.Join(reachableDir(t), "sandboxes")
	_, ws := create(t, bwrapPlugin(t, NetworkLoopback, Config{Root: root}))
	svc := services(t, ws)
	ctx := context.Background()
	for _, tc := range []struct {
		spec workspace.ServiceSpec
		code string
	}{
		{workspace.ServiceSpec{Name: "a", Argv: []string{"true"}, Connect: []string{"10.1.2.3:80"}}, plugin.CodeInvalidArgument},
		{workspace.ServiceSpec{Name: "a", Argv: []string{"true"}, Connect: []string{"no-port"}}, plugin.CodeInvalidArgument},
		{workspace.ServiceSpec{Name: "a", Argv: []string{"true"}, Connect: []string{"host:99999"}}, plugin.CodeInvalidArgument},
		{workspace.ServiceSpec{Name: "a", Argv: []string{"true"}, ReadOnlyPaths: []string{"/"}}, plugin.CodePathDenied},
		{workspace.ServiceSpec{Name: "a", Argv: []string{"true"}, ReadOnlyPaths: []string{filepath.Dir(root)}}, plugin.CodePathDenied},
		{workspace.ServiceSpec{Name: "a", Argv: []string{"true"}, ReadOnlyPaths: []string{filepath.Join(root, "x")}}, plugin.CodePathDenied},
	} {
		_, err := svc.StartService(ctx, tc.spec)
		assert.True(t, plugin.HasCode(err, tc.code), "%+v: %v", tc.spec, err)
	}
	// The none policy runs no services: nothing could reach them.
	_, ws = create(t, bwrapPlugin(t, NetworkNone, Config{}))
	_, err := services(t, ws).StartService(ctx, workspace.ServiceSpec{Name: "a", Argv: []string{"true"}})
	assert.True(t, plugin.HasCode(err, plugin.CodeUnsupported), "%v", err)
}

// TestServiceMemoryLimit: a service's processes are held to
// service_memory_bytes of allocated memory (RLIMIT_DATA), while an
// allocation under it works; RLIMIT_AS, which Bun's reservations exceed,
// is not applied.
func TestServiceMemoryLimit(t *testing.T) {
	_, ws := create(t, bwrapPlugin(t, NetworkLoopback, Config{ServiceMemoryBytes: 256 << 20}))
	svc := services(t, ws)
	ctx := context.Background()
	alloc := func(mb int) string {
		return fmt.Sprintf("python3 -c 'b = bytearray(%d << 20); print(\"allocated\", len(b) >> 20)'", mb)
	}
	script := "ulimit -v; " + alloc(64) + "; " + alloc(512) + "; echo done"
	_, err := svc.StartService(ctx, workspace.ServiceSpec{Name: "hog", Argv: []string{"sh", "-c", script}})
	require.NoError(t, err)
	var si workspace.ServiceInfo
	require.Eventually(t, func() bool {
		si, err = svc.ServiceStatus(ctx, "hog")
		return err == nil && !si.Running
	}, 30*time.Second, 20*time.Millisecond)
	out := string(si.OutputTail)
	assert.Contains(t, out, "unlimited\n", "no address-space limit")
	assert.Contains(t, out, "allocated 64\n")
	assert.NotContains(t, out, "allocated 512", "the allocation over the limit succeeded")
	assert.Contains(t, out, "MemoryError")
}

// TestServiceDiesWithPlugin: a plugin killed outright takes its services
// with it (parent-death signals), and nothing of them runs afterwards.
func TestServiceDiesWithPlugin(t *testing.T) {
	marker := fmt.Sprintf("70%d.25", time.Now().UnixNano()%1e6)
	t.Cleanup(func() { killMarked(marker) })
	c, proc := launchProcess(t, "agenthost-sandbox-bwrap", []string{"-network=" + NetworkLoopback}, nil,
		Config{Root: filepath.Join(reachableDir(t), "sandboxes")})
	_, ws := create(t, c)
	_, err := services(t, ws).StartService(context.Background(), workspace.ServiceSpec{Name: "sleeper", Argv: []string{"sleep", marker}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !markerGone("sleep\x00" + marker) }, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, proc.Kill())
	assert.Eventually(t, func() bool { return markerGone("sleep\x00" + marker) }, 30*time.Second, 20*time.Millisecond,
		"a service outlived its plugin")
}

// TestServiceReachesNamedHost: a Connect entry naming a host (a remote
// model server, say) is reached under its name from inside: the service's
// /etc/hosts gives the name an alias address, and the plugin connects to
// the name from outside. DNS is stood in for in the plugin (in-process
// here), the one fake at the edge.
func TestServiceReachesNamedHost(t *testing.T) {
	port, hits := countingListener(t)
	orig := dialOut
	dialOut = func(target string) (net.Conn, error) {
		host, p, err := net.SplitHostPort(target)
		if err != nil || host != "api.model.test" {
			return nil, fmt.Errorf("unexpected target %q", target)
		}
		return net.Dial("tcp", "127.0.0.1:"+p)
	}
	t.Cleanup(func() { dialOut = orig })
	ctx := context.Background()
	p, err := NewWithLogger(Options{Helper: filepath.Join(binDir, "agenthost-sandbox-bwrap"), Network: NetworkLoopback}, hclog.NewNullLogger())
	require.NoError(t, err)
	require.NoError(t, p.Configure(ctx, fmt.Appendf(nil, `{"root":%q}`, filepath.Join(reachableDir(t), "sandboxes"))))
	_, err = p.Create(ctx, sandbox.CreateSpec{ID: "named"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(ctx, "named") })
	ws, err := p.Workspace(ctx, "named")
	require.NoError(t, err)
	script := "getent hosts api.model.test > out; bash -c 'exec 3<>/dev/tcp/api.model.test/" + port + "; head -1 <&3' >> out 2>&1; echo done >> out; exec sleep 600"
	_, err = services(t, ws).StartService(ctx, workspace.ServiceSpec{Name: "probe", Argv: []string{"sh", "-c", script},
		Connect: []string{"api.model.test:" + port}})
	require.NoError(t, err)
	out := waitFile(t, ws, "out")
	assert.Contains(t, out, aliasNet+"1", "the name has its alias address inside: %s", out)
	assert.Contains(t, out, "hello from the host\n", out)
	assert.Len(t, hits, 1)
}

// TestServiceOnHostNetwork: under the host policy a service shares the
// host's network: no forwarding, its port is the host's own.
func TestServiceOnHostNetwork(t *testing.T) {
	_, ws := create(t, bwrapPlugin(t, NetworkHost, Config{}), sandbox.File{Path: "www/index.html", Data: []byte("host network")})
	info, err := services(t, ws).StartService(context.Background(), workspace.ServiceSpec{
		Name: "web", Argv: []string{"python3", "-m", "http.server", "-d", "www", "-b", "127.0.0.1", "{port}"}})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", info.Port), info.Address)
	assert.Equal(t, "host network", getWhenServed(t, "http://"+info.Address+"/index.html"))
}
