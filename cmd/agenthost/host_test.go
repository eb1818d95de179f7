package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/config"
	"github.com/agenthost/agenthost/host/hostapp"
	"github.com/agenthost/agenthost/host/privtmp"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
)

// pluginBinaries are built once, by the first test that starts a host,
// into a folder TestMain removes.
var pluginBinaries struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pluginBinaries.dir != "" {
		_ = os.RemoveAll(pluginBinaries.dir)
	}
	// The private temporary folders of the hosts the tests killed.
	privtmp.Sweep(os.TempDir())
	os.Exit(code)
}

// pluginDir builds the mock engine, the local sandbox and the patch
// toolpack (the plugins a mock run uses) and returns their folder.
func pluginDir(t *testing.T) string {
	t.Helper()
	pluginBinaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "agenthost-cli-plugins-")
		if err != nil {
			pluginBinaries.err = err
			return
		}
		pluginBinaries.dir = dir
		build := exec.Command("go", "build", "-o", dir+"/",
			"github.com/agenthost/agenthost/cmd/agenthost-engine-mock",
			"github.com/agenthost/agenthost/cmd/agenthost-sandbox-local",
			"github.com/agenthost/agenthost/cmd/agenthost-toolpack-patch")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		pluginBinaries.err = build.Run()
	})
	require.NoError(t, pluginBinaries.err)
	return pluginBinaries.dir
}

// hostToken is the operator token every test host is started with.
const hostToken = "cli-test-token"

// testHost is a real host (real plugin binaries, SQLite) behind an HTTP
// server, for the client commands to talk to.
type testHost struct {
	t   *testing.T
	url string
}

// startHost starts a host and points the client commands at it
// (AGENTHOST_URL, AGENTHOST_TOKEN).
func startHost(t *testing.T) *testHost {
	t.Helper()
	bin := pluginDir(t)
	// The sandbox root must be reachable by sandbox uids (the plugin drops
	// to them as root); t.TempDir's parents are 0700.
	reach, err := os.MkdirTemp("", "agenthost-cli-sandboxes-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(reach, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(reach) })
	configs := t.TempDir()
	for name, body := range map[string]string{
		"mock":  "plugin \"mock\" {\n  kind = \"engine\"\n  command = \"agenthost-engine-mock\"\n}\n",
		"patch": "plugin \"patch\" {\n  kind = \"toolpack\"\n  command = \"agenthost-toolpack-patch\"\n}\n",
		"local": fmt.Sprintf("plugin \"local\" {\n  kind = \"sandbox\"\n  command = \"agenthost-sandbox-local\"\n  config {\n    root = %q\n  }\n}\n", filepath.Join(reach, "sandboxes")),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(configs, name+".hcl"), []byte(body), 0o644))
	}
	data := t.TempDir()
	cfg := config.Host{DataDir: data, PluginDir: bin, PluginConfigDir: configs, DatabaseURL: filepath.Join(data, "agenthost.db")}
	t.Setenv("AGENTHOST_BOOTSTRAP_TOKEN", hostToken)
	// Errors only: the local sandbox's warning about isolation would
	// repeat for every test.
	h, err := hostapp.Start(context.Background(), cfg, hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr}))
	require.NoError(t, err)
	srv := httptest.NewServer(h.Handler)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h.Close(ctx)
	})
	t.Setenv("AGENTHOST_URL", srv.URL)
	t.Setenv("AGENTHOST_TOKEN", hostToken)
	return &testHost{t: t, url: srv.URL}
}

// api calls the host's API directly (what the tests check the client
// against) and decodes the answer into out.
func (h *testHost) api(method, path string, out any) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+hostToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	require.Less(h.t, resp.StatusCode, 300, "%s %s: %s", method, path, raw)
	if out != nil {
		require.NoError(h.t, json.Unmarshal(raw, out), "%s", raw)
	}
}

// events is a run's whole log as the polling endpoint gives it: each
// envelope as sent.
func (h *testHost) events(app, run string) []json.RawMessage {
	h.t.Helper()
	var page struct {
		Items []json.RawMessage `json:"items"`
		Done  bool              `json:"done"`
	}
	h.api("GET", "/admin/apps/"+app+"/coding-agent/runs/"+run+"/events?limit=1000", &page)
	require.True(h.t, page.Done, "the run has ended")
	return page.Items
}

// runClient runs agenthost in-process with stdin and returns its exit code and
// output.
func runClient(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWithInput("agenthost", args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// cuttingProxy is a TCP proxy between the client and the host that cuts
// run streams: the n-th stream connection is closed in the middle of the
// event after its first cuts[n] events (a connection past the list is
// left alone), once everything before that event has gone through.
type cuttingProxy struct {
	t    *testing.T
	ln   net.Listener
	host string
	cuts []int
	// closeAfterCut stops listening at the first cut: the host is gone
	// for good as far as the client can tell.
	closeAfterCut bool

	mu sync.Mutex
	// streams counts the stream requests seen; lastIDs holds each one's
	// Last-Event-ID header ("" for none).
	streams int
	lastIDs []string
	// conns are the open connections, closed by close (clients keep idle
	// ones for their next request).
	conns   map[net.Conn]bool
	closing bool
	wg      sync.WaitGroup
}

func newCuttingProxy(t *testing.T, hostURL string, cuts ...int) *cuttingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cuttingProxy{t: t, ln: ln, host: strings.TrimPrefix(hostURL, "http://"), cuts: cuts, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// url is where clients reach the host through the proxy.
func (p *cuttingProxy) url() string { return "http://" + p.ln.Addr().String() }

// close stops accepting (clients then find nothing listening) and waits
// for the connections to end.
func (p *cuttingProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closing = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records open connections; the proxy closing closes them at once.
func (p *cuttingProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if p.closing {
			_ = c.Close()
			continue
		}
		p.conns[c] = true
	}
}

func (p *cuttingProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *cuttingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

// proxied is one client connection and its connection to the host. A
// connection may carry several requests (keep-alive): it becomes a stream
// when a stream request goes through it.
type proxied struct {
	client, host net.Conn
	mu           sync.Mutex
	// cutAfter is how many events of the current stream answer pass (-1:
	// not a stream, or not cut); body is that answer so far.
	cutAfter int
	body     []byte
	cut      bool
}

func (p *cuttingProxy) serve(client net.Conn) {
	host, err := net.Dial("tcp", p.host)
	if err != nil {
		_ = client.Close()
		return
	}
	p.track(client, host)
	c := &proxied{client: client, host: host, cutAfter: -1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.toHost(c)
	}()
	p.toClient(c)
	p.untrack(client, host)
	<-done
}

// toHost copies requests, noting each stream request and its
// Last-Event-ID. (Requests are small: one read holds a request's head.)
func (p *cuttingProxy) toHost(c *proxied) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			head := string(buf[:n])
			if strings.HasPrefix(head, "GET ") && strings.Contains(strings.SplitN(head, "\r\n", 2)[0], "/stream") {
				p.mu.Lock()
				cut := -1
				if p.streams < len(p.cuts) {
					cut = p.cuts[p.streams]
				}
				p.streams++
				last := ""
				for _, l := range strings.Split(head, "\r\n") {
					if v, ok := strings.CutPrefix(l, "Last-Event-Id: "); ok {
						last = v
					}
				}
				p.lastIDs = append(p.lastIDs, last)
				p.mu.Unlock()
				// The answer to the previous request was read whole
				// before this one was sent: what follows is the stream's.
				c.mu.Lock()
				c.cutAfter, c.body = cut, nil
				c.mu.Unlock()
			}
			if _, werr := c.host.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = c.host.Close()
			return
		}
	}
}

// toClient copies answers; in a stream answer to be cut, it passes the
// bytes up to a few into the frame after the allowed events, then closes
// both connections.
func (p *cuttingProxy) toClient(c *proxied) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.host.Read(buf)
		if n > 0 {
			c.mu.Lock()
			out := buf[:n]
			if c.cutAfter >= 0 {
				start := len(c.body)
				c.body = append(c.body, out...)
				// A frame starts at a line "id: <seq>" (inside a chunk of
				// the chunked body, after a line end).
				if at := nthIndex(c.body, "\nid: ", c.cutAfter+1); at >= 0 {
					end := at + len("\nid: ") + 1
					out = c.body[start:max(start, end)]
					c.cut = true
					if p.closeAfterCut {
						_ = p.ln.Close()
					}
				}
			}
			cut := c.cut
			c.mu.Unlock()
			if _, werr := c.client.Write(out); werr != nil || cut {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// nthIndex is the index of the n-th (1-based) occurrence of sep in b, or -1.
func nthIndex(b []byte, sep string, n int) int {
	off := 0
	for i := 1; ; i++ {
		at := bytes.Index(b[off:], []byte(sep))
		if at < 0 {
			return -1
		}
		if i == n {
			return off + at
		}
		off += at + len(sep)
	}
}

// streamRequests is the Last-Event-ID of each stream request so far.
func (p *cuttingProxy) streamRequests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lastIDs...)
}
