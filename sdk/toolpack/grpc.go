package toolpack

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"sync"

	"github.com/agenthost/agenthost/sdk/internal/convert"
	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/internal/pb/toolpackv1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// GRPCPlugin is the go-plugin glue for toolpacks. Plugin binaries set Impl
// (through sdk.ServeToolpack); the host dispenses a *Client.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl Toolpack
}

// GRPCServer registers the Toolpack service for Impl.
func (p *GRPCPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	toolpackv1.RegisterToolpackServer(s, &server{impl: p.Impl, broker: broker})
	return nil
}

// GRPCClient returns a *Client over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{c: toolpackv1.NewToolpackClient(conn), broker: broker}, nil
}

type server struct {
	toolpackv1.UnimplementedToolpackServer
	impl   Toolpack
	broker *goplugin.GRPCBroker

	mu       sync.Mutex
	hostConn *grpc.ClientConn
	// direct holds the connections to sandbox plugins that serve their
	// workspaces themselves (CallRequest.direct).
	direct workspace.DirectConns
}

func (s *server) Info(context.Context, *pluginv1.InfoRequest) (*pluginv1.PluginInfo, error) {
	return convert.InfoToProto(s.impl.Info()), nil
}

// Configure dials the host's Workspace service once for this connection.
func (s *server) Configure(ctx context.Context, req *pluginv1.ConfigureRequest) (*pluginv1.ConfigureResponse, error) {
	if c, ok := s.impl.(plugin.Configurer); ok {
		if err := c.Configure(ctx, req.GetConfigJson()); err != nil {
			return nil, rpcerr.ToStatus(err)
		}
	}
	if id := req.GetHostBrokerId(); id != 0 {
		conn, err := s.broker.DialWithOptions(id, plugin.GRPCDialOptions()...)
		if err != nil {
			return nil, rpcerr.ToStatus(err)
		}
		s.mu.Lock()
		old := s.hostConn
		s.hostConn = conn
		s.mu.Unlock()
		if old != nil {
			_ = old.Close()
		}
	}
	return &pluginv1.ConfigureResponse{}, nil
}

func (s *server) Health(ctx context.Context, _ *pluginv1.HealthRequest) (*pluginv1.HealthResponse, error) {
	if h, ok := s.impl.(plugin.HealthChecker); ok {
		return convert.HealthToProto(h.Health(ctx)), nil
	}
	return &pluginv1.HealthResponse{Healthy: true}, nil
}

func (s *server) Tools(ctx context.Context, _ *toolpackv1.ToolsRequest) (*toolpackv1.ToolsResponse, error) {
	specs, err := s.impl.Tools(ctx)
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	out := &toolpackv1.ToolsResponse{Tools: make([]*pluginv1.ToolSpec, len(specs))}
	for i, sp := range specs {
		out.Tools[i] = convert.ToolSpecToProto(sp)
	}
	return out, nil
}

func (s *server) Call(ctx context.Context, req *toolpackv1.CallRequest) (*pluginv1.ToolResult, error) {
	s.mu.Lock()
	conn := s.hostConn
	s.mu.Unlock()
	if conn == nil {
		return nil, rpcerr.ToStatus(plugin.Errorf(plugin.CodeNotConfigured, "", "Call before Configure: the host has not offered a workspace service"))
	}
	ws := workspace.NewClient(conn, req.GetWorkspaceId())
	if d := req.GetDirect(); d.GetAddress() != "" && socketExists(d.GetAddress()) {
		direct, release, err := s.direct.Open(workspace.Direct{Address: d.GetAddress(), WorkspaceID: d.GetWorkspaceId(), Token: d.GetToken()})
		if err != nil {
			return nil, rpcerr.ToStatus(err)
		}
		// The grant is the call's: a goroutine the tool left behind cannot
		// use it after the call returned.
		defer release()
		ws = direct
	}
	res, err := s.impl.Call(ctx, Call{
		RunID: req.GetRunId(), CallID: req.GetCallId(), Tool: req.GetTool(), Input: req.GetInputJson(),
	}, ws)
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return convert.ToolResultToProto(res), nil
}

// socketExists reports whether a sandbox plugin's direct socket is there
// to dial. When it is not (a plugin on another machine, or a temp-folder
// cleaner removed it while the plugin ran), the call goes through the
// host's Workspace service instead, which reaches the same sandbox: a
// missing socket must cost a hop, never a tool call.
func socketExists(address string) bool {
	fi, err := os.Stat(address)
	return err == nil && fi.Mode().Type() == fs.ModeSocket
}

// Client is the host's handle on a toolpack plugin process.
type Client struct {
	c      toolpackv1.ToolpackClient
	broker *goplugin.GRPCBroker
}

// Info asks the plugin who it is.
func (c *Client) Info(ctx context.Context) (plugin.Info, error) {
	p, err := c.c.Info(ctx, &pluginv1.InfoRequest{})
	if err != nil {
		return plugin.Info{}, rpcerr.FromStatus(err)
	}
	return convert.InfoFromProto(p), nil
}

// Configure serves the host's Workspace service (resolving ids with
// workspaces) once on the broker and hands the plugin its config. Call it
// once per connection, before Tools or Call.
func (c *Client) Configure(ctx context.Context, config json.RawMessage, workspaces workspace.Resolver) error {
	id := c.broker.NextId()
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := plugin.NewGRPCServer(opts)
		workspace.RegisterServer(s, workspaces)
		return s
	})
	_, err := c.c.Configure(ctx, &pluginv1.ConfigureRequest{ConfigJson: config, HostBrokerId: id})
	return rpcerr.FromStatus(err)
}

// Health asks the plugin whether it can serve.
func (c *Client) Health(ctx context.Context) (plugin.Health, error) {
	p, err := c.c.Health(ctx, &pluginv1.HealthRequest{})
	if err != nil {
		return plugin.Health{}, rpcerr.FromStatus(err)
	}
	return convert.HealthFromProto(p), nil
}

// Tools lists the pack's tools.
func (c *Client) Tools(ctx context.Context) ([]plugin.ToolSpec, error) {
	resp, err := c.c.Tools(ctx, &toolpackv1.ToolsRequest{})
	if err != nil {
		return nil, rpcerr.FromStatus(err)
	}
	out := make([]plugin.ToolSpec, len(resp.GetTools()))
	for i, t := range resp.GetTools() {
		out[i] = convert.ToolSpecFromProto(t)
	}
	return out, nil
}

// Call runs one tool; the plugin reaches the workspace through the host's
// Workspace service under workspaceID.
func (c *Client) Call(ctx context.Context, call Call, workspaceID string) (plugin.ToolResult, error) {
	return c.call(ctx, &toolpackv1.CallRequest{
		RunId: call.RunID, CallId: call.CallID, Tool: call.Tool, InputJson: call.Input, WorkspaceId: workspaceID,
	})
}

// CallDirect runs one tool whose workspace its sandbox plugin serves
// itself under the grant direct: the plugin reaches it there, one hop
// shorter than through the host. A plugin built before direct workspaces
// uses workspaceID on the host's Workspace service, which must then serve
// the same workspace.
func (c *Client) CallDirect(ctx context.Context, call Call, workspaceID string, direct workspace.Direct) (plugin.ToolResult, error) {
	return c.call(ctx, &toolpackv1.CallRequest{
		RunId: call.RunID, CallId: call.CallID, Tool: call.Tool, InputJson: call.Input, WorkspaceId: workspaceID,
		Direct: &toolpackv1.DirectWorkspace{Address: direct.Address, WorkspaceId: direct.WorkspaceID, Token: direct.Token},
	})
}

func (c *Client) call(ctx context.Context, req *toolpackv1.CallRequest) (plugin.ToolResult, error) {
	res, err := c.c.Call(ctx, req)
	if err != nil {
		return plugin.ToolResult{}, rpcerr.FromStatus(err)
	}
	return convert.ToolResultFromProto(res), nil
}
