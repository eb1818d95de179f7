package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The plugin side of direct workspaces (see sdk/workspace/direct.go): the
// Workspace service once more, on a unix socket in a folder of its own
// that only the host's user can enter, each call checked against a grant
// the host signed.

// directServer is a sandbox plugin's direct workspace service, started by
// the host's first ServeDirect.
type directServer struct {
	key workspace.DirectKey

	mu  sync.Mutex
	dir string // the socket's folder, once serving
	srv *grpc.Server
}

// directSocket is the socket's name in its folder.
const directSocket = "workspace.sock"

// serve sets the key and starts the service unless it runs, and returns
// its address.
func (d *directServer) serve(key []byte, resolve workspace.Resolver) (string, error) {
	if len(key) != workspace.DirectKeyBytes {
		return "", plugin.Errorf(plugin.CodeInvalidArgument, "key", "the key must be %d bytes, not %d", workspace.DirectKeyBytes, len(key))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.key.Set(key)
	if d.srv != nil {
		return filepath.Join(d.dir, directSocket), nil
	}
	// MkdirTemp makes the folder 0700: other users (a backend's per-sandbox
	// uids among them) cannot reach the socket inside. Its name carries
	// this process's pid, so that a later plugin can tell it left over.
	// It goes where the host asked go-plugin's socket to go: agenthost
	// serve names a folder of its own, removed with what is in it.
	base := os.Getenv(goplugin.EnvUnixSocketDir)
	if base == "" {
		base = os.TempDir()
	}
	sweepDirectDirs(base)
	dir, err := os.MkdirTemp(base, directDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	address := filepath.Join(dir, directSocket)
	lis, err := net.Listen("unix", address)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	srv := plugin.NewPluginGRPCServer(nil)
	workspace.RegisterServer(srv, workspace.DirectResolver(&d.key, resolve))
	go func() { _ = srv.Serve(lis) }()
	d.dir, d.srv = dir, srv
	return address, nil
}

// directDirPrefix starts the name of every direct socket's folder, which
// goes on with the pid of the plugin process that made it.
const directDirPrefix = "agenthost-ws-"

// sweepDirectDirs removes the direct socket folders in dir whose plugin
// process is gone: one killed outright (SIGKILL, a crash) could not remove
// its own. A folder whose pid is alive is kept, even if that pid now
// belongs to another process; so are folders it cannot read a pid from,
// and other users' (removing them fails).
func sweepDirectDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), directDirPrefix)
		pidText, _, found := strings.Cut(rest, "-")
		if !ok || !found || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// processAlive reports whether a process of that pid exists (signal 0: it
// may be another user's, which answers EPERM).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// close stops the service and removes its socket's folder.
func (d *directServer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.srv == nil {
		return
	}
	d.srv.Stop()
	_ = os.RemoveAll(d.dir)
	d.srv, d.dir = nil, ""
}

func (s *server) ServeDirect(_ context.Context, req *sandboxv1.ServeDirectRequest) (*sandboxv1.ServeDirectResponse, error) {
	address, err := s.direct.serve(req.GetKey(), s.impl.Workspace)
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &sandboxv1.ServeDirectResponse{Address: address}, nil
}

// Close stops what the plugin serves besides go-plugin's connection (its
// direct workspace socket). sdk.ServeSandbox calls it when serving ends.
func (p *GRPCPlugin) Close() {
	if p.direct != nil {
		p.direct.close()
	}
}

// EnableDirect has the plugin serve its workspaces directly (ServeDirect)
// under a fresh key, for Direct to grant. A plugin built before direct
// workspaces is no error: Direct then grants nothing and workspace calls
// go through the host.
func (c *Client) EnableDirect(ctx context.Context) error {
	key := make([]byte, workspace.DirectKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	resp, err := c.c.ServeDirect(ctx, &sandboxv1.ServeDirectRequest{Key: key})
	if status.Code(err) == codes.Unimplemented {
		return nil
	}
	if err != nil {
		return rpcerr.FromStatus(err)
	}
	if resp.GetAddress() == "" {
		return errors.New("the plugin serves its workspaces directly at no address")
	}
	c.directMu.Lock()
	c.directKey, c.directAddress = key, resp.GetAddress()
	c.directMu.Unlock()
	return nil
}

// Direct grants sandbox id's workspace, served by the plugin itself, until
// the time given; false when the plugin does not serve it (no EnableDirect,
// or a plugin built before it).
func (c *Client) Direct(id string, until time.Time) (workspace.Direct, bool) {
	c.directMu.Lock()
	key, address := c.directKey, c.directAddress
	c.directMu.Unlock()
	if address == "" {
		return workspace.Direct{}, false
	}
	return workspace.Direct{Address: address, WorkspaceID: id, Token: workspace.SignDirect(key, id, until)}, true
}
