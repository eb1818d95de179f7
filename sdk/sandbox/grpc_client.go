package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

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

	// Set by EnableDirect: the plugin's own workspace socket and the key
	// its grants are signed with.
	directMu      sync.Mutex
	directKey     []byte
	directAddress string
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
		SandboxId: spec.ID, ScopeKey: spec.ScopeKey, Labels: spec.Labels, MaxFileBytes: spec.MaxFileBytes,
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

// Snapshot reads every file of the sandbox except those excluded, all in
// memory; entries the backend left out are not returned. Prefer
// SnapshotEach for working copies of any size.
func (c *Client) Snapshot(ctx context.Context, id string, exclude []string) ([]File, error) {
	var files []File
	err := c.SnapshotEach(ctx, id, exclude, 0, func(e SnapshotEntry) error {
		if e.LeftOut == "" {
			files = append(files, e.File)
		}
		return nil
	})
	return files, err
}

// SnapshotEach streams the sandbox's files except those excluded to fn, one
// at a time in path order, holding only the current file's content. A file
// over maxBytes (when > 0) reaches fn with TooLarge set and no content: its
// chunks are read and dropped, so an oversized file costs no memory. Paths
// the backend left out reach fn with LeftOut set. An error from fn ends the
// snapshot with it.
func (c *Client) SnapshotEach(ctx context.Context, id string, exclude []string, maxBytes int64, fn func(SnapshotEntry) error) error {
	return c.SnapshotStream(ctx, id, exclude, maxBytes, func(f SnapshotFile) error {
		e := SnapshotEntry{File: File{Path: f.Path, Mode: f.Mode}, Size: f.Size, TooLarge: f.TooLarge, LeftOut: f.LeftOut}
		if f.Content != nil {
			data, err := readSized(f.Content, f.Size)
			var tooLarge *FileTooLargeError
			switch {
			case errors.As(err, &tooLarge):
				e.TooLarge, e.Size = true, tooLarge.Size
			case err != nil:
				return err
			default:
				e.Data, e.Size = data, int64(len(data))
			}
		}
		return fn(e)
	})
}

// readSized reads r to its end into a buffer of the announced size, which
// grows only if the file did (never to twice a file that was as announced).
func readSized(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, 0, max(size, 0))
	for {
		if len(buf) == cap(buf) {
			// Full: look for one more byte before growing.
			var probe [1]byte
			n, err := io.ReadFull(r, probe[:])
			if err == io.EOF {
				return buf, nil
			}
			if err != nil {
				return nil, err
			}
			buf = append(buf, probe[:n]...)
			continue
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Workspace returns the file and exec API of one sandbox.
func (c *Client) Workspace(id string) workspace.Workspace {
	return workspace.NewClient(c.conn, id)
}
