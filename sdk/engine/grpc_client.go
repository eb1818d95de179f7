package engine

import (
	"context"
	"encoding/json"
	"io"
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

// HostServices is what the host implements to serve engine callbacks. Every
// call names its run; the Client has already ordered it after the events the
// engine emitted before making it.
type HostServices interface {
	CallTool(ctx context.Context, runID string, call ToolCall) (plugin.ToolResult, error)
	SaveState(ctx context.Context, runID string, state []byte) error
	RequestPermission(ctx context.Context, runID string, req PermissionRequest) (PermissionDecision, error)
	// Workspace resolves the workspace ids the host put in RunRequests.
	Workspace(ctx context.Context, workspaceID string) (workspace.Workspace, error)
}

// Client is the host's handle on an engine plugin process.
type Client struct {
	c      enginev1.EngineClient
	broker *goplugin.GRPCBroker

	mu     sync.Mutex
	fences map[string]*fence
}

func newClient(conn *grpc.ClientConn, broker *goplugin.GRPCBroker) *Client {
	return &Client{c: enginev1.NewEngineClient(conn), broker: broker, fences: map[string]*fence{}}
}

// Info asks the plugin who it is.
func (c *Client) Info(ctx context.Context) (plugin.Info, error) {
	p, err := c.c.Info(ctx, &pluginv1.InfoRequest{})
	if err != nil {
		return plugin.Info{}, rpcerr.FromStatus(err)
	}
	return convert.InfoFromProto(p), nil
}

// Health asks the plugin whether it can serve.
func (c *Client) Health(ctx context.Context) (plugin.Health, error) {
	p, err := c.c.Health(ctx, &pluginv1.HealthRequest{})
	if err != nil {
		return plugin.Health{}, rpcerr.FromStatus(err)
	}
	return convert.HealthFromProto(p), nil
}

// Configure serves the host's callbacks once on the broker and hands the
// plugin its config. Call it once per connection, before Run.
func (c *Client) Configure(ctx context.Context, config json.RawMessage, services HostServices) error {
	id := c.broker.NextId()
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := plugin.NewGRPCServer(opts)
		enginev1.RegisterEngineHostServer(s, &hostServer{c: c, services: services})
		workspace.RegisterServer(s, services.Workspace)
		return s
	})
	_, err := c.c.Configure(ctx, &pluginv1.ConfigureRequest{ConfigJson: config, HostBrokerId: id})
	return rpcerr.FromStatus(err)
}

// Run starts a run and calls onEvent for each event in order, then returns
// the engine's result. An error means the engine could not be reached or the
// stream broke (a crashed plugin); onEvent's error aborts the run and is
// returned. Cancelling ctx abandons the run at once without confirmation;
// use Cancel for a confirmed stop.
func (c *Client) Run(ctx context.Context, req RunRequest, onEvent func(Event) error) (Result, error) {
	f := &fence{}
	c.mu.Lock()
	if _, dup := c.fences[req.RunID]; dup {
		// Replacing the fence would cut the running run off from its
		// callbacks when this call's deferred cleanup removed it.
		c.mu.Unlock()
		return Result{}, plugin.Errorf(plugin.CodeInvalidArgument, "run_id", "run %s is already running on this engine connection", req.RunID)
	}
	c.fences[req.RunID] = f
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.fences, req.RunID)
		c.mu.Unlock()
		f.close()
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.c.Run(ctx, requestToProto(req))
	if err != nil {
		return Result{}, rpcerr.FromStatus(err)
	}
	for {
		upd, err := stream.Recv()
		if err == io.EOF {
			return Result{}, plugin.Errorf(plugin.CodeInternal, "", "engine stream ended without a result")
		}
		if err != nil {
			return Result{}, rpcerr.FromStatus(err)
		}
		switch u := upd.GetUpdate().(type) {
		case *enginev1.RunUpdate_Result:
			return resultFromProto(u.Result), nil
		case *enginev1.RunUpdate_Event:
			if ev, ok := eventFromProto(u.Event); ok {
				if err := onEvent(ev); err != nil {
					return Result{}, err
				}
			}
			f.advance()
		}
	}
}

// Cancel asks the engine to stop a run. The run's Run call then returns the
// engine's result: StatusCancelled confirms it. found is false when the
// engine no longer has the run.
func (c *Client) Cancel(ctx context.Context, runID, reason string) (found bool, err error) {
	resp, err := c.c.Cancel(ctx, &enginev1.CancelRequest{RunId: runID, Reason: reason})
	if err != nil {
		return false, rpcerr.FromStatus(err)
	}
	return resp.GetFound(), nil
}

// waitFence blocks until the host has handled n events of the run.
func (c *Client) waitFence(ctx context.Context, runID string, n uint64) error {
	c.mu.Lock()
	f := c.fences[runID]
	c.mu.Unlock()
	if f == nil {
		return plugin.Errorf(plugin.CodeNotFound, "run_id", "run %s is not running on this engine connection", runID)
	}
	return f.wait(ctx, n)
}

// fence counts the events of one run that the host has handled, so that a
// callback made after emitting n events waits until those n are handled.
type fence struct {
	mu     sync.Mutex
	n      uint64
	closed bool
	// wake is made only when someone waits, so the per-event cost of
	// advance stays one lock when nobody does.
	wake chan struct{}
}

func (f *fence) advance() {
	f.mu.Lock()
	f.n++
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
	f.mu.Unlock()
}

func (f *fence) close() {
	f.mu.Lock()
	f.closed = true
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
	f.mu.Unlock()
}

func (f *fence) wait(ctx context.Context, n uint64) error {
	for {
		f.mu.Lock()
		if f.n >= n {
			f.mu.Unlock()
			return nil
		}
		if f.closed {
			f.mu.Unlock()
			return plugin.Errorf(plugin.CodeNotFound, "run_id", "run has finished")
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		w := f.wake
		f.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// hostServer serves EngineHost for one plugin connection.
type hostServer struct {
	enginev1.UnimplementedEngineHostServer
	c        *Client
	services HostServices
}

func (h *hostServer) CallTool(ctx context.Context, req *enginev1.CallToolRequest) (*pluginv1.ToolResult, error) {
	if err := h.c.waitFence(ctx, req.GetRunId(), req.GetAfterEvents()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	res, err := h.services.CallTool(ctx, req.GetRunId(), ToolCall{CallID: req.GetCallId(), Tool: req.GetTool(), Input: req.GetInputJson()})
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return convert.ToolResultToProto(res), nil
}

func (h *hostServer) SaveState(ctx context.Context, req *enginev1.SaveStateRequest) (*enginev1.SaveStateResponse, error) {
	if err := h.c.waitFence(ctx, req.GetRunId(), req.GetAfterEvents()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	if err := h.services.SaveState(ctx, req.GetRunId(), req.GetState()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &enginev1.SaveStateResponse{}, nil
}

func (h *hostServer) RequestPermission(ctx context.Context, req *enginev1.PermissionRequest) (*enginev1.PermissionDecision, error) {
	if err := h.c.waitFence(ctx, req.GetRunId(), req.GetAfterEvents()); err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	d, err := h.services.RequestPermission(ctx, req.GetRunId(), PermissionRequest{
		PermissionID: req.GetPermissionId(), Action: req.GetAction(), Title: req.GetTitle(), Details: req.GetDetailsJson(),
	})
	if err != nil {
		return nil, rpcerr.ToStatus(err)
	}
	return &enginev1.PermissionDecision{Allow: d.Allow, Reason: d.Reason}, nil
}
