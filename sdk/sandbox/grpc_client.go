package sandbox

import (
	"context"
	"encoding/json"
	"io"

	"github.com/agenthost/agenthost/sdk/internal/convert"
	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	"google.golang.org/grpc"
)

// Client is the host's handle on a sandbox plugin process.
type Client struct {
	conn *grpc.ClientConn
	c    sandboxv1.SandboxClient
}

// Info asks the plugin who it is.
func (c *Client) Info(ctx context.Context) (plugin.Info, error) {
	p, err := c.c.Info(ctx, &pluginv1.InfoRequest{})
	if err != nil {
		return plugin.Info{}, rpcerr.FromStatus(err)
	}
	return convert.InfoFromProto(p), nil
}

// Configure hands the plugin its config block; call it once, first.
func (c *Client) Configure(ctx context.Context, config json.RawMessage) error {
	_, err := c.c.Configure(ctx, &pluginv1.ConfigureRequest{ConfigJson: config})
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

// Create makes a sandbox holding spec.Files, streaming them in chunks.
func (c *Client) Create(ctx context.Context, spec CreateSpec) (Info, error) {
	stream, err := c.c.Create(ctx)
	if err != nil {
		return Info{}, rpcerr.FromStatus(err)
	}
	send := func(m *sandboxv1.CreateRequest) error { return stream.Send(m) }
	err = send(&sandboxv1.CreateRequest{Msg: &sandboxv1.CreateRequest_Header{Header: &sandboxv1.CreateHeader{
		SandboxId: spec.ID, ScopeKey: spec.ScopeKey, Labels: spec.Labels,
	}}})
	if err == nil {
		err = sendFiles(spec.Files, send, func(h *sandboxv1.FileHeader) *sandboxv1.CreateRequest {
			return &sandboxv1.CreateRequest{Msg: &sandboxv1.CreateRequest_File{File: h}}
		}, func(d []byte) *sandboxv1.CreateRequest {
			return &sandboxv1.CreateRequest{Msg: &sandboxv1.CreateRequest_Data{Data: d}}
		})
	}
	// On a failed Send the server's status (from CloseAndRecv) says why.
	info, rerr := stream.CloseAndRecv()
	if rerr != nil {
		return Info{}, rpcerr.FromStatus(rerr)
	}
	if err != nil {
		return Info{}, rpcerr.FromStatus(err)
	}
	return infoFromProto(info), nil
}

// Get describes a sandbox.
func (c *Client) Get(ctx context.Context, id string) (Info, error) {
	p, err := c.c.Get(ctx, &sandboxv1.GetRequest{SandboxId: id})
	if err != nil {
		return Info{}, rpcerr.FromStatus(err)
	}
	return infoFromProto(p), nil
}

// Stop ends a sandbox.
func (c *Client) Stop(ctx context.Context, id string) error {
	_, err := c.c.Stop(ctx, &sandboxv1.StopRequest{SandboxId: id})
	return rpcerr.FromStatus(err)
}

// ExposePort makes a port of the sandbox reachable and says where.
func (c *Client) ExposePort(ctx context.Context, id string, port int) (Endpoint, error) {
	p, err := c.c.ExposePort(ctx, &sandboxv1.ExposePortRequest{SandboxId: id, Port: uint32(port)})
	if err != nil {
		return Endpoint{}, rpcerr.FromStatus(err)
	}
	return Endpoint{Address: p.GetAddress(), URL: p.GetUrl()}, nil
}

// Snapshot reads every file of the sandbox except those excluded.
func (c *Client) Snapshot(ctx context.Context, id string, exclude []string) ([]File, error) {
	stream, err := c.c.Snapshot(ctx, &sandboxv1.SnapshotRequest{SandboxId: id, Exclude: exclude})
	if err != nil {
		return nil, rpcerr.FromStatus(err)
	}
	var files []File
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, rpcerr.FromStatus(err)
		}
		switch m := msg.GetMsg().(type) {
		case *sandboxv1.SnapshotChunk_File:
			files = append(files, File{Path: m.File.GetPath(), Mode: m.File.GetMode(), Data: make([]byte, 0, m.File.GetSize())})
		case *sandboxv1.SnapshotChunk_Data:
			if len(files) == 0 {
				return nil, plugin.Errorf(plugin.CodeInternal, "", "snapshot data before a file header")
			}
			f := &files[len(files)-1]
			f.Data = append(f.Data, m.Data...)
		}
	}
}

// Workspace returns the file and exec API of one sandbox.
func (c *Client) Workspace(id string) workspace.Workspace {
	return workspace.NewClient(c.conn, id)
}
