package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agenthost/agenthost/sdk/internal/convert"
	"github.com/agenthost/agenthost/sdk/internal/pb/enginev1"
	"github.com/agenthost/agenthost/sdk/internal/pb/pluginv1"
	"github.com/agenthost/agenthost/sdk/internal/rpcerr"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// GRPCPlugin is the go-plugin glue for engines. Plugin binaries set Impl
// (through sdk.ServeEngine); the host dispenses a *Client.
type GRPCPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl Engine
}

// GRPCServer registers the Engine service for Impl.
func (p *GRPCPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	enginev1.RegisterEngineServer(s, &server{impl: p.Impl, broker: broker, runs: map[string]*activeRun{}})
	return nil
}

// GRPCClient returns a *Client over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return newClient(conn, broker), nil
}

// errCancelRequested is the cause a run's context carries after Cancel.
var errCancelRequested = errors.New("run cancelled by the host")

type activeRun struct {
	cancel context.CancelCauseFunc
}

type server struct {
	enginev1.UnimplementedEngineServer
	impl   Engine
	broker *goplugin.GRPCBroker

	mu       sync.Mutex
	hostConn *grpc.ClientConn
	runs     map[string]*activeRun
}

func (s *server) Info(context.Context, *pluginv1.InfoRequest) (*pluginv1.PluginInfo, error) {
	return convert.InfoToProto(s.impl.Info()), nil
}

// Configure dials the host's callback services once for this connection.
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

func (s *server) Cancel(_ context.Context, req *enginev1.CancelRequest) (*enginev1.CancelResponse, error) {
	s.mu.Lock()
	r := s.runs[req.GetRunId()]
	s.mu.Unlock()
	if r == nil {
		return &enginev1.CancelResponse{Found: false}, nil
	}
	r.cancel(errCancelRequested)
	return &enginev1.CancelResponse{Found: true}, nil
}

func (s *server) Run(req *enginev1.RunRequest, stream enginev1.Engine_RunServer) error {
	// The run's context ends when the host drops the stream (host shutdown)
	// or asks to cancel; the cause tells the two apart.
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)

	// Check and register under one lock: two Runs with the same id must not
	// both get through.
	s.mu.Lock()
	conn := s.hostConn
	_, dup := s.runs[req.GetRunId()]
	ok := conn != nil && req.GetRunId() != "" && !dup
	if ok {
		s.runs[req.GetRunId()] = &activeRun{cancel: cancel}
	}
	s.mu.Unlock()
	if conn == nil {
		return rpcerr.ToStatus(plugin.Errorf(plugin.CodeNotConfigured, "", "Run before Configure: the host has not offered its callback services"))
	}
	if !ok {
		return rpcerr.ToStatus(plugin.Errorf(plugin.CodeInvalidArgument, "run_id", "run id %q is empty or already running", req.GetRunId()))
	}
	var unregisterOnce sync.Once
	unregister := func() {
		unregisterOnce.Do(func() {
			s.mu.Lock()
			delete(s.runs, req.GetRunId())
			s.mu.Unlock()
		})
	}
	defer unregister()

	r := requestFromProto(req)
	h := &runHost{
		runID:  r.RunID,
		stream: stream,
		host:   enginev1.NewEngineHostClient(conn),
	}
	if r.WorkspaceID != "" {
		h.ws = workspace.NewClient(conn, r.WorkspaceID)
	}
	res, err := s.runSafely(ctx, r, h)
	h.finish()
	if err != nil {
		if errors.Is(context.Cause(ctx), errCancelRequested) && errors.Is(err, context.Canceled) {
			res = Cancelled()
		} else {
			res = Failed(CodeEngineError, err.Error())
		}
	}
	if res.Status == "" {
		res = Failed(CodeEngineError, "engine returned a result without a status")
	}
	// Forget the run before the host can see its result: once the host's
	// Run has returned, a Cancel for this id must answer found=false.
	unregister()
	return h.sendResult(res)
}

// runSafely turns a panic in an engine into a failed run instead of a dead
// plugin process that takes every other run down with it.
func (s *server) runSafely(ctx context.Context, r RunRequest, h Host) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("engine panicked: %v", p)
		}
	}()
	return s.impl.Run(ctx, r, h)
}

// runHost is the Host an engine sees for one run.
type runHost struct {
	runID  string
	host   enginev1.EngineHostClient
	ws     workspace.Workspace
	stream enginev1.Engine_RunServer

	mu       sync.Mutex
	sent     uint64
	finished bool
}

var errRunFinished = errors.New("run has finished: no more events may be emitted")

func (h *runHost) Emit(e Event) error {
	p := eventToProto(e)
	if p == nil {
		return fmt.Errorf("unknown event kind %q", e.Kind)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished {
		return errRunFinished
	}
	if err := h.stream.Send(&enginev1.RunUpdate{Update: &enginev1.RunUpdate_Event{Event: p}}); err != nil {
		return err
	}
	h.sent++
	return nil
}

// eventsSent is the fence value callbacks carry.
func (h *runHost) eventsSent() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent
}

func (h *runHost) finish() {
	h.mu.Lock()
	h.finished = true
	h.mu.Unlock()
}

func (h *runHost) sendResult(r Result) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stream.Send(&enginev1.RunUpdate{Update: &enginev1.RunUpdate_Result{Result: resultToProto(r)}})
}

func (h *runHost) CallTool(ctx context.Context, call ToolCall) (plugin.ToolResult, error) {
	res, err := h.host.CallTool(ctx, &enginev1.CallToolRequest{
		RunId: h.runID, CallId: call.CallID, Tool: call.Tool, InputJson: call.Input, AfterEvents: h.eventsSent(),
	})
	if err != nil {
		return plugin.ToolResult{}, rpcerr.FromStatus(err)
	}
	return convert.ToolResultFromProto(res), nil
}

func (h *runHost) SaveState(ctx context.Context, state []byte) error {
	_, err := h.host.SaveState(ctx, &enginev1.SaveStateRequest{RunId: h.runID, State: state, AfterEvents: h.eventsSent()})
	return rpcerr.FromStatus(err)
}

func (h *runHost) RequestPermission(ctx context.Context, req PermissionRequest) (PermissionDecision, error) {
	d, err := h.host.RequestPermission(ctx, &enginev1.PermissionRequest{
		RunId: h.runID, PermissionId: req.PermissionID, Action: req.Action, Title: req.Title,
		DetailsJson: req.Details, AfterEvents: h.eventsSent(),
	})
	if err != nil {
		return PermissionDecision{}, rpcerr.FromStatus(err)
	}
	return PermissionDecision{Allow: d.GetAllow(), Reason: d.GetReason()}, nil
}

func (h *runHost) Workspace() workspace.Workspace { return h.ws }
