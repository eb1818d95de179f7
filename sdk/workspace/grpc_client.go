package workspace

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/agenthost/agenthost/sdk/internal/pb/workspacev1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"google.golang.org/grpc"
)

// NewClient returns a Workspace that forwards every call for workspaceID over
// conn. The sdk uses it on both sides of the plugin boundary.
func NewClient(conn grpc.ClientConnInterface, workspaceID string) Workspace {
	return &client{c: workspacev1.NewWorkspaceClient(conn), id: workspaceID}
}

// The client forwards services too; a sandbox without them answers
// plugin.CodeUnsupported.
var _ Services = (*client)(nil)

type client struct {
	c  workspacev1.WorkspaceClient
	id string
}

func (c *client) ReadFile(ctx context.Context, path string, opts ReadOptions) ([]byte, FileInfo, error) {
	stream, err := c.c.ReadFile(ctx, &workspacev1.ReadFileRequest{
		WorkspaceId: c.id, Path: path, StartLine: int64(opts.StartLine), EndLine: int64(opts.EndLine),
	})
	if err != nil {
		return nil, FileInfo{}, rpcerr.FromStatus(err)
	}
	var buf bytes.Buffer
	var fi FileInfo
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			return buf.Bytes(), fi, nil
		}
		if err != nil {
			return nil, FileInfo{}, rpcerr.FromStatus(err)
		}
		if chunk.GetInfo() != nil {
			fi = infoFromProto(chunk.GetInfo())
			buf.Grow(int(fi.Size))
		}
		buf.Write(chunk.GetData())
	}
}

func (c *client) WriteFile(ctx context.Context, path string, data []byte, mode uint32) (FileInfo, error) {
	stream, err := c.c.WriteFile(ctx)
	if err != nil {
		return FileInfo{}, rpcerr.FromStatus(err)
	}
	send := func(m *workspacev1.WriteFileRequest) error {
		if err := stream.Send(m); err != nil {
			// The server's answer explains a failed Send better than io.EOF.
			if _, rerr := stream.CloseAndRecv(); rerr != nil {
				return rpcerr.FromStatus(rerr)
			}
			return rpcerr.FromStatus(err)
		}
		return nil
	}
	if err := send(&workspacev1.WriteFileRequest{Msg: &workspacev1.WriteFileRequest_Header{
		Header: &workspacev1.WriteFileHeader{WorkspaceId: c.id, Path: path, Mode: mode},
	}}); err != nil {
		return FileInfo{}, err
	}
	for len(data) > 0 {
		n := min(len(data), plugin.ChunkBytes)
		if err := send(&workspacev1.WriteFileRequest{Msg: &workspacev1.WriteFileRequest_Data{Data: data[:n]}}); err != nil {
			return FileInfo{}, err
		}
		data = data[n:]
	}
	fi, err := stream.CloseAndRecv()
	if err != nil {
		return FileInfo{}, rpcerr.FromStatus(err)
	}
	return infoFromProto(fi), nil
}

func (c *client) List(ctx context.Context, path string, opts ListOptions) ([]FileInfo, bool, error) {
	resp, err := c.c.List(ctx, &workspacev1.ListRequest{
		WorkspaceId: c.id, Path: path, Recursive: opts.Recursive,
		WithHashes: opts.WithHashes, Limit: int32(opts.Limit), SkipDirs: opts.SkipDirs,
	})
	if err != nil {
		return nil, false, rpcerr.FromStatus(err)
	}
	out := make([]FileInfo, len(resp.GetEntries()))
	for i, e := range resp.GetEntries() {
		out[i] = infoFromProto(e)
	}
	return out, resp.GetTruncated(), nil
}

func (c *client) Stat(ctx context.Context, path string) (FileInfo, error) {
	fi, err := c.c.Stat(ctx, &workspacev1.StatRequest{WorkspaceId: c.id, Path: path})
	if err != nil {
		return FileInfo{}, rpcerr.FromStatus(err)
	}
	return infoFromProto(fi), nil
}

func (c *client) Remove(ctx context.Context, path string, recursive bool) error {
	_, err := c.c.Remove(ctx, &workspacev1.RemoveRequest{WorkspaceId: c.id, Path: path, Recursive: recursive})
	return rpcerr.FromStatus(err)
}

func (c *client) Rename(ctx context.Context, from, to string) error {
	_, err := c.c.Rename(ctx, &workspacev1.RenameRequest{WorkspaceId: c.id, From: from, To: to})
	return rpcerr.FromStatus(err)
}

func (c *client) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	stream, err := c.c.Exec(ctx, &workspacev1.ExecRequest{
		WorkspaceId: c.id, Argv: req.Argv, Dir: req.Dir, Env: req.Env,
		TimeoutMs: req.Timeout.Milliseconds(), OutputLimitBytes: req.OutputLimit, Stdin: req.Stdin,
	})
	if err != nil {
		return ExecResult{}, rpcerr.FromStatus(err)
	}
	var res ExecResult
	var stdout, stderr bytes.Buffer
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return ExecResult{}, plugin.Errorf(plugin.CodeInternal, "", "exec stream ended without an exit status")
		}
		if err != nil {
			return ExecResult{}, rpcerr.FromStatus(err)
		}
		switch e := ev.GetEvent().(type) {
		case *workspacev1.ExecEvent_Stdout:
			stdout.Write(e.Stdout)
			if req.Stdout != nil {
				_, _ = req.Stdout.Write(e.Stdout)
			}
		case *workspacev1.ExecEvent_Stderr:
			stderr.Write(e.Stderr)
			if req.Stderr != nil {
				_, _ = req.Stderr.Write(e.Stderr)
			}
		case *workspacev1.ExecEvent_Exit:
			x := e.Exit
			res = ExecResult{
				ExitCode: int(x.GetExitCode()), TimedOut: x.GetTimedOut(),
				OutputTruncated: x.GetOutputTruncated(), Signal: x.GetSignal(),
				Duration: time.Duration(x.GetDurationMs()) * time.Millisecond,
				Stdout:   stdout.Bytes(), Stderr: stderr.Bytes(),
			}
			return res, nil
		}
	}
}

func (c *client) StartService(ctx context.Context, spec ServiceSpec) (ServiceInfo, error) {
	p, err := c.c.StartService(ctx, &workspacev1.StartServiceRequest{
		WorkspaceId: c.id, Name: spec.Name, Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, ReadOnlyPaths: spec.ReadOnlyPaths,
		Connect: spec.Connect,
	})
	if err != nil {
		return ServiceInfo{}, rpcerr.FromStatus(err)
	}
	return serviceFromProto(p), nil
}

func (c *client) ServiceStatus(ctx context.Context, name string) (ServiceInfo, error) {
	p, err := c.c.ServiceStatus(ctx, &workspacev1.ServiceStatusRequest{WorkspaceId: c.id, Name: name})
	if err != nil {
		return ServiceInfo{}, rpcerr.FromStatus(err)
	}
	return serviceFromProto(p), nil
}

func (c *client) StopService(ctx context.Context, name string, grace time.Duration) error {
	_, err := c.c.StopService(ctx, &workspacev1.StopServiceRequest{WorkspaceId: c.id, Name: name, GraceMs: grace.Milliseconds()})
	return rpcerr.FromStatus(err)
}
