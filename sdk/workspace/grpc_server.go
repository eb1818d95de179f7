package workspace

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"github.com/agenthost/agenthost/sdk/internal/pb/workspacev1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"google.golang.org/grpc"
)

// RegisterServer serves the Workspace service on s, resolving each request's
// workspace id with resolve. Plugin authors do not call this: the sdk's
// Serve helpers and host-side clients do.
func RegisterServer(s grpc.ServiceRegistrar, resolve Resolver) {
	workspacev1.RegisterWorkspaceServer(s, &server{resolve: resolve})
}

type server struct {
	workspacev1.UnimplementedWorkspaceServer
	resolve Resolver
}

func infoToProto(fi FileInfo) *workspacev1.FileInfo {
	var mt int64
	if !fi.ModTime.IsZero() {
		mt = fi.ModTime.UnixNano()
	}
	return &workspacev1.FileInfo{
		Path: fi.Path, Size: fi.Size, Sha256: fi.SHA256, IsDir: fi.IsDir,
		Mode: fi.Mode, ModTimeUnixNano: mt,
	}
}

func infoFromProto(p *workspacev1.FileInfo) FileInfo {
	fi := FileInfo{
		Path: p.GetPath(), Size: p.GetSize(), SHA256: p.GetSha256(),
		IsDir: p.GetIsDir(), Mode: p.GetMode(),
	}
	if p.GetModTimeUnixNano() != 0 {
		fi.ModTime = time.Unix(0, p.GetModTimeUnixNano())
	}
	return fi
}

func (s *server) ws(ctx context.Context, id string) (Workspace, error) {
	if id == "" {
		return nil, plugin.Errorf(plugin.CodeInvalidArgument, "workspace_id", "workspace id is required")
	}
	return s.resolve(ctx, id)
}

func (s *server) ReadFile(req *workspacev1.ReadFileRequest, stream workspacev1.Workspace_ReadFileServer) error {
	ctx := stream.Context()
	ws, err := s.ws(ctx, req.GetWorkspaceId())
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	data, fi, err := ws.ReadFile(ctx, req.GetPath(), ReadOptions{StartLine: int(req.GetStartLine()), EndLine: int(req.GetEndLine())})
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	first := &workspacev1.FileChunk{Info: infoToProto(fi)}
	for {
		n := min(len(data), plugin.ChunkBytes)
		msg := &workspacev1.FileChunk{Data: data[:n]}
		if first != nil {
			first.Data = data[:n]
			msg, first = first, nil
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
		data = data[n:]
		if len(data) == 0 {
			return nil
		}
	}
}

func (s *server) WriteFile(stream workspacev1.Workspace_WriteFileServer) error {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	h := first.GetHeader()
	if h == nil {
		return rpcerr.ToStatus(plugin.Errorf(plugin.CodeInvalidArgument, "", "first message must be a header"))
	}
	var buf bytes.Buffer
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		buf.Write(msg.GetData())
	}
	ws, err := s.ws(ctx, h.GetWorkspaceId())
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	fi, err := ws.WriteFile(ctx, h.GetPath(), buf.Bytes(), h.GetMode())
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	return stream.SendAndClose(infoToProto(fi))
}

func (s *server) List(ctx context.Context, req *workspacev1.ListRequest) (*workspacev1.ListResponse, error) {
	ws, err := s.ws(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	entries, truncated, err := ws.List(ctx, req.GetPath(), ListOptions{
		Recursive: req.GetRecursive(), WithHashes: req.GetWithHashes(), Limit: int(req.GetLimit()),
		SkipDirs: req.GetSkipDirs(),
	})
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	out := &workspacev1.ListResponse{Truncated: truncated, Entries: make([]*workspacev1.FileInfo, len(entries))}
	for i, e := range entries {
		out.Entries[i] = infoToProto(e)
	}
	return out, nil
}

func (s *server) Stat(ctx context.Context, req *workspacev1.StatRequest) (*workspacev1.FileInfo, error) {
	ws, err := s.ws(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	fi, err := ws.Stat(ctx, req.GetPath())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return infoToProto(fi), nil
}

func (s *server) Remove(ctx context.Context, req *workspacev1.RemoveRequest) (*workspacev1.RemoveResponse, error) {
	ws, err := s.ws(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	if err := ws.Remove(ctx, req.GetPath(), req.GetRecursive()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &workspacev1.RemoveResponse{}, nil
}

func (s *server) Rename(ctx context.Context, req *workspacev1.RenameRequest) (*workspacev1.RenameResponse, error) {
	ws, err := s.ws(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	if err := ws.Rename(ctx, req.GetFrom(), req.GetTo()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &workspacev1.RenameResponse{}, nil
}

// streamWriter forwards exec output to the client as it is produced.
type streamWriter struct {
	send   func(*workspacev1.ExecEvent) error
	stderr bool
}

func (w *streamWriter) Write(p []byte) (int, error) {
	// Copy: the exec implementation may reuse p after Write returns, and
	// Send may hold the slice until it is framed.
	data := append([]byte(nil), p...)
	ev := &workspacev1.ExecEvent{Event: &workspacev1.ExecEvent_Stdout{Stdout: data}}
	if w.stderr {
		ev = &workspacev1.ExecEvent{Event: &workspacev1.ExecEvent_Stderr{Stderr: data}}
	}
	if err := w.send(ev); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *server) Exec(req *workspacev1.ExecRequest, stream workspacev1.Workspace_ExecServer) error {
	ctx := stream.Context()
	ws, err := s.ws(ctx, req.GetWorkspaceId())
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	// One lock around Send: gRPC forbids concurrent Send on a stream, and
	// stdout and stderr are copied by different goroutines.
	var mu sync.Mutex
	send := func(ev *workspacev1.ExecEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(ev)
	}
	res, err := ws.Exec(ctx, ExecRequest{
		Argv: req.GetArgv(), Dir: req.GetDir(), Env: req.GetEnv(),
		Timeout:     time.Duration(req.GetTimeoutMs()) * time.Millisecond,
		OutputLimit: req.GetOutputLimitBytes(), Stdin: req.GetStdin(),
		Stdout: &streamWriter{send: send}, Stderr: &streamWriter{send: send, stderr: true},
	})
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	return send(&workspacev1.ExecEvent{Event: &workspacev1.ExecEvent_Exit{Exit: &workspacev1.ExecExit{
		ExitCode: int32(res.ExitCode), TimedOut: res.TimedOut, OutputTruncated: res.OutputTruncated,
		Signal: res.Signal, DurationMs: res.Duration.Milliseconds(),
	}}})
}

func (s *server) services(ctx context.Context, id string) (Services, error) {
	ws, err := s.ws(ctx, id)
	if err != nil {
		return nil, err
	}
	svc, ok := ws.(Services)
	if !ok {
		return nil, plugin.Errorf(plugin.CodeUnsupported, "", "this sandbox cannot run services")
	}
	return svc, nil
}

func serviceToProto(si ServiceInfo) *workspacev1.ServiceInfo {
	var started int64
	if !si.StartedAt.IsZero() {
		started = si.StartedAt.UnixNano()
	}
	return &workspacev1.ServiceInfo{
		Name: si.Name, Running: si.Running, Started: si.Started, Port: int32(si.Port), Address: si.Address,
		StartedAtUnixNano: started, ExitCode: int32(si.ExitCode), Signal: si.Signal, OutputTail: si.OutputTail,
		RssBytes: si.RSSBytes,
	}
}

func serviceFromProto(p *workspacev1.ServiceInfo) ServiceInfo {
	si := ServiceInfo{
		Name: p.GetName(), Running: p.GetRunning(), Started: p.GetStarted(), Port: int(p.GetPort()), Address: p.GetAddress(),
		ExitCode: int(p.GetExitCode()), Signal: p.GetSignal(), OutputTail: p.GetOutputTail(),
		RSSBytes: p.GetRssBytes(),
	}
	if p.GetStartedAtUnixNano() != 0 {
		si.StartedAt = time.Unix(0, p.GetStartedAtUnixNano())
	}
	return si
}

func (s *server) StartService(ctx context.Context, req *workspacev1.StartServiceRequest) (*workspacev1.ServiceInfo, error) {
	svc, err := s.services(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	si, err := svc.StartService(ctx, ServiceSpec{
		Name: req.GetName(), Argv: req.GetArgv(), Env: req.GetEnv(), Dir: req.GetDir(), ReadOnlyPaths: req.GetReadOnlyPaths(),
		Connect: req.GetConnect(),
	})
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return serviceToProto(si), nil
}

func (s *server) ServiceStatus(ctx context.Context, req *workspacev1.ServiceStatusRequest) (*workspacev1.ServiceInfo, error) {
	svc, err := s.services(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	si, err := svc.ServiceStatus(ctx, req.GetName())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return serviceToProto(si), nil
}

func (s *server) StopService(ctx context.Context, req *workspacev1.StopServiceRequest) (*workspacev1.StopServiceResponse, error) {
	svc, err := s.services(ctx, req.GetWorkspaceId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	if err := svc.StopService(ctx, req.GetName(), time.Duration(req.GetGraceMs())*time.Millisecond); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &workspacev1.StopServiceResponse{}, nil
}
