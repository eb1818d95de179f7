package sandbox

import (
	"context"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/internal/convert"
	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/internal/pb/sandboxv1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// GRPCPlugin is the go-plugin glue for sandboxes. Plugin binaries set Impl
// (through sdk.ServeSandbox); the host leaves it nil and dispenses a *Client.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl Provider

	direct *directServer
}

// GRPCServer registers the Sandbox and Workspace services for Impl.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.direct == nil {
		p.direct = &directServer{}
	}
	sandboxv1.RegisterSandboxServer(s, &server{impl: p.Impl, direct: p.direct})
	workspace.RegisterServer(s, p.Impl.Workspace)
	return nil
}

// GRPCClient returns a *Client over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{conn: conn, c: sandboxv1.NewSandboxClient(conn)}, nil
}

type server struct {
	sandboxv1.UnimplementedSandboxServer
	impl   Provider
	direct *directServer
}

func (s *server) Info(context.Context, *pluginv1.InfoRequest) (*pluginv1.PluginInfo, error) {
	return convert.InfoToProto(s.impl.Info()), nil
}

func (s *server) Configure(ctx context.Context, req *pluginv1.ConfigureRequest) (*pluginv1.ConfigureResponse, error) {
	if c, ok := s.impl.(plugin.Configurer); ok {
		if err := c.Configure(ctx, req.GetConfigJson()); err != nil {
			return nil, rpcerr.ToStatus(err)
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

// sandboxStates maps Info.Status to SandboxInfo.status_enum.
var sandboxStates = convert.NewEnum(map[sandboxv1.SandboxState]string{
	sandboxv1.SandboxState_SANDBOX_STATE_RUNNING: StatusRunning,
	sandboxv1.SandboxState_SANDBOX_STATE_STOPPED: StatusStopped,
})

func infoToProto(i Info) *sandboxv1.SandboxInfo {
	return &sandboxv1.SandboxInfo{Id: i.ID, Status: i.Status, StatusEnum: sandboxStates.ToProto(i.Status),
		CreatedAtUnixMs: i.CreatedAt.UnixMilli(), ScopeKey: i.ScopeKey, SnapshotGeneration: i.SnapshotGeneration}
}

func infoFromProto(p *sandboxv1.SandboxInfo) Info {
	return Info{ID: p.GetId(), Status: sandboxStates.FromProto(p.GetStatusEnum(), p.GetStatus()), CreatedAt: time.UnixMilli(p.GetCreatedAtUnixMs()), ScopeKey: p.GetScopeKey(),
		SnapshotGeneration: p.GetSnapshotGeneration()}
}

func (s *server) Create(stream sandboxv1.Sandbox_CreateServer) error {
	var spec CreateSpec
	var cur *File
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch m := msg.GetMsg().(type) {
		case *sandboxv1.CreateRequest_Header:
			spec.ID, spec.ScopeKey, spec.Labels = m.Header.GetSandboxId(), m.Header.GetScopeKey(), m.Header.GetLabels()
			spec.MaxFileBytes = m.Header.GetMaxFileBytes()
		case *sandboxv1.CreateRequest_File:
			spec.Files = append(spec.Files, File{Path: m.File.GetPath(), Mode: m.File.GetMode(), Data: make([]byte, 0, m.File.GetSize())})
			cur = &spec.Files[len(spec.Files)-1]
		case *sandboxv1.CreateRequest_Data:
			if cur == nil {
				return rpcerr.ToStatus(plugin.Errorf(plugin.CodeInvalidArgument, "", "file data before a file header"))
			}
			cur.Data = append(cur.Data, m.Data...)
		}
	}
	if spec.ID == "" {
		return rpcerr.ToStatus(plugin.Errorf(plugin.CodeInvalidArgument, "sandbox_id", "sandbox id is required"))
	}
	info, err := s.impl.Create(stream.Context(), spec)
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	return stream.SendAndClose(infoToProto(info))
}

func (s *server) Get(ctx context.Context, req *sandboxv1.GetRequest) (*sandboxv1.SandboxInfo, error) {
	info, err := s.impl.Get(ctx, req.GetSandboxId())
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return infoToProto(info), nil
}

func (s *server) Stop(ctx context.Context, req *sandboxv1.StopRequest) (*sandboxv1.StopResponse, error) {
	if err := s.impl.Stop(ctx, req.GetSandboxId()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &sandboxv1.StopResponse{}, nil
}

func (s *server) ExposePort(ctx context.Context, req *sandboxv1.ExposePortRequest) (*sandboxv1.Endpoint, error) {
	pe, ok := s.impl.(PortExposer)
	if !ok {
		return nil, rpcerr.ToStatus(plugin.Errorf(plugin.CodeUnsupported, "", "this sandbox backend cannot expose ports"))
	}
	ep, err := pe.ExposePort(ctx, req.GetSandboxId(), int(req.GetPort()))
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &sandboxv1.Endpoint{Address: ep.Address, Url: ep.URL}, nil
}

func (s *server) Snapshot(req *sandboxv1.SnapshotRequest, stream sandboxv1.Sandbox_SnapshotServer) error {
	header := func(h *sandboxv1.FileHeader) *sandboxv1.SnapshotChunk {
		return &sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_File{File: h}}
	}
	chunk := func(d []byte) *sandboxv1.SnapshotChunk {
		return &sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_Data{Data: d}}
	}
	// Unchanged files go several to a message when the caller takes that:
	// held here until a batch is full or another kind of message is due.
	var batch []*sandboxv1.FileHeader
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		msg := &sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_Unchanged{Unchanged: &sandboxv1.UnchangedFiles{Files: batch}}}
		batch = nil
		return stream.Send(msg)
	}
	// Removed paths (changes_only) go several to a message too.
	var removed []string
	flushRemoved := func() error {
		if len(removed) == 0 {
			return nil
		}
		msg := &sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_Removed{Removed: &sandboxv1.RemovedPaths{Paths: removed}}}
		removed = nil
		return stream.Send(msg)
	}
	send := func(e SnapshotEntry) error {
		if e.Removed {
			// Only a changes_only snapshot passes these, and a path
			// that is not UTF-8 was never a file of a set.
			if !req.GetChangesOnly() || !utf8.ValidString(e.Path) {
				return nil
			}
			if err := flush(); err != nil {
				return err
			}
			removed = append(removed, e.Path)
			if len(removed) == unchangedBatch {
				return flushRemoved()
			}
			return nil
		}
		if err := flushRemoved(); err != nil {
			return err
		}
		if e.Unchanged && req.GetBatchUnchanged() && utf8.ValidString(e.Path) {
			batch = append(batch, &sandboxv1.FileHeader{Path: e.Path, Mode: e.Mode, Size: e.Size, Unchanged: true, Sha256: e.SHA256})
			if len(batch) == unchangedBatch {
				return flush()
			}
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if e.LeftOut != "" {
			// Proto strings must be UTF-8: a backend that forgot to quote
			// a bad name must not break the whole stream.
			p := e.Path
			if !utf8.ValidString(p) {
				p = strconv.Quote(p)
			}
			return stream.Send(&sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_LeftOut{LeftOut: &sandboxv1.LeftOut{Path: p, Reason: e.LeftOut}}})
		}
		if !utf8.ValidString(e.Path) {
			return stream.Send(&sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_LeftOut{LeftOut: &sandboxv1.LeftOut{
				Path: strconv.Quote(e.Path), Reason: "the name is not valid UTF-8"}}})
		}
		if e.Unchanged {
			return stream.Send(header(&sandboxv1.FileHeader{Path: e.Path, Mode: e.Mode, Size: e.Size, Unchanged: true, Sha256: e.SHA256}))
		}
		return sendFiles([]File{e.File}, stream.Send, header, chunk)
	}
	ct, tracks := s.impl.(ChangeTracker)
	if !tracks {
		return rpcerr.ToStatus(s.impl.Snapshot(stream.Context(), req.GetSandboxId(), req.GetExclude(), send))
	}
	var (
		gen         string
		changesOnly bool
		err         error
	)
	if cl, lists := s.impl.(ChangeLister); lists && req.GetChangesOnly() && req.GetSince() != "" {
		gen, changesOnly, err = cl.SnapshotChanges(stream.Context(), req.GetSandboxId(), req.GetExclude(), req.GetSince(), send)
	} else {
		gen, err = ct.SnapshotSince(stream.Context(), req.GetSandboxId(), req.GetExclude(), req.GetSince(), send)
	}
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = flushRemoved()
	}
	if err != nil {
		return rpcerr.ToStatus(err)
	}
	if gen == "" && !changesOnly {
		return nil
	}
	end := &sandboxv1.SnapshotEnd{Generation: gen, ChangesOnly: changesOnly}
	if st, ok := s.impl.(Settler); ok && gen != "" {
		end.Settled = st.Settled(req.GetSandboxId(), gen)
	}
	return stream.Send(&sandboxv1.SnapshotChunk{Msg: &sandboxv1.SnapshotChunk_End{End: end}})
}

// unchangedBatch is how many unchanged files one snapshot message carries
// at most (about 100 bytes each).
const unchangedBatch = 256

// sendFiles streams a file set as header, chunks, header, chunks...
func sendFiles[M any](files []File, send func(M) error, header func(*sandboxv1.FileHeader) M, chunk func([]byte) M) error {
	for _, f := range files {
		if err := send(header(&sandboxv1.FileHeader{Path: f.Path, Mode: f.Mode, Size: int64(len(f.Data))})); err != nil {
			return err
		}
		for data := f.Data; len(data) > 0; {
			n := min(len(data), plugin.ChunkBytes)
			if err := send(chunk(data[:n])); err != nil {
				return err
			}
			data = data[n:]
		}
	}
	return nil
}
