// Package contract is the contract toolpack: tools that tell a coding agent
// how to call the app's selected runtime agent, read from the contract
// document the host writes into every run's workspace at agentcontract.Path.
// It only reads; it keeps no state, so one process serves every run.
//
// Refusals are tool results with stable codes; only a broken workspace
// connection or a cancelled call is a Go error. Each tool lives in its own
// file and is listed once in registry.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Tool result codes of this pack (plus toolpack.CodeUnknownTool).
const (
	// CodeInputInvalid: the input is not a JSON object of the tool's fields
	// with the right types and values.
	CodeInputInvalid = "TOOL_INPUT_INVALID"
	// CodeContractInvalid: the contract document exists but cannot be read
	// as one (broken JSON, an unknown schema_version, a folder in its place,
	// over MaxContractBytes).
	CodeContractInvalid = "AGENT_CONTRACT_INVALID"
)

// MaxContractBytes is the largest contract document the pack reads. A real
// one is a few KiB per tool; 8 MiB is far beyond any agent's tools and still
// an eighth of the gRPC message limit.
const MaxContractBytes = 8 << 20

// noAgentReason is the reason given when the document is missing, or says
// there is no agent without saying why.
const noAgentReason = "the app has no selected runtime agent"

// tool is one tool of the pack; Tools fills the spec's Name from name.
type tool struct {
	name string
	spec func() plugin.ToolSpec
	run  func(ctx context.Context, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error)
}

// registry lists the pack's tools in the order Tools reports them.
func registry() []tool { return []tool{getContractTool, describeContractTool} }

// Pack is the contract toolpack. It holds no per-run state.
type Pack struct {
	tools  []tool
	byName map[string]tool
}

var (
	_ toolpack.Toolpack = (*Pack)(nil)
	_ plugin.Configurer = (*Pack)(nil)
)

// New returns the pack with every tool registered.
func New() *Pack {
	p := &Pack{tools: registry(), byName: map[string]tool{}}
	for _, t := range p.tools {
		p.byName[t.name] = t
	}
	return p
}

// Info identifies the plugin.
func (p *Pack) Info() plugin.Info {
	return plugin.Info{
		Name: "contract", Kind: plugin.KindToolpack, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "the selected runtime agent's integration contract, for coding agents",
	}
}

// Configure accepts an empty config block only: the pack has no settings,
// and an operator's stray key should fail at load rather than be ignored.
func (p *Pack) Configure(_ context.Context, raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var cfg struct{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return plugin.Errorf(plugin.CodeInvalidArgument, "config", "contract config: %v (the pack takes no settings)", err)
	}
	return nil
}

// Tools lists the tools in registry order.
func (p *Pack) Tools(context.Context) ([]plugin.ToolSpec, error) {
	out := make([]plugin.ToolSpec, 0, len(p.tools))
	for _, t := range p.tools {
		spec := t.spec()
		spec.Name = t.name
		out = append(out, spec)
	}
	return out, nil
}

// Call runs one tool. A tool that refuses returns a failed result; an error
// means the workspace connection broke or the call was cancelled.
func (p *Pack) Call(ctx context.Context, call toolpack.Call, ws workspace.Workspace) (res plugin.ToolResult, err error) {
	t, ok := p.byName[call.Tool]
	if !ok {
		return plugin.ToolFail(toolpack.CodeUnknownTool, fmt.Sprintf("the contract toolpack has no tool %q", call.Tool), "tool"), nil
	}
	if err := ctx.Err(); err != nil {
		return plugin.ToolResult{}, err
	}
	// One process serves every run: a bug tripped by one odd document must
	// fail that call, not kill the plugin under all the others.
	defer func() {
		if r := recover(); r != nil {
			res, err = plugin.ToolResult{}, fmt.Errorf("tool %s panicked: %v", call.Tool, r)
		}
	}()
	return t.run(ctx, call.Input, ws)
}

// failed wraps a domain failure as a tool result.
func failed(te *plugin.ToolError) plugin.ToolResult { return plugin.ToolResult{Error: te} }

// load reads and parses the contract document. A nil contract with a nil
// error and no failure means there is none (the file is missing). A
// document the workspace refuses to hand over, or that does not parse, is a
// CodeContractInvalid failure; any other workspace error is returned.
func load(ctx context.Context, ws workspace.Workspace) (*agentcontract.Contract, *plugin.ToolError, error) {
	data, info, err := ws.ReadFile(ctx, agentcontract.Path, workspace.ReadOptions{})
	switch code := plugin.CodeOf(err); {
	case err == nil:
	case code == plugin.CodeNotFound:
		return nil, nil, nil
	case code != "":
		// A folder in its place, a parent that is a file, a symlink out of
		// the workspace, a sandbox size limit: the host wrote something
		// other than a contract there.
		return nil, invalidContract("the workspace refused %s: %s", agentcontract.Path, messageOf(err)), nil
	default:
		return nil, nil, fmt.Errorf("read %s: %w", agentcontract.Path, err)
	}
	if len(data) > MaxContractBytes || info.Size > MaxContractBytes {
		return nil, invalidContract("%s has %d bytes; the limit is %d", agentcontract.Path, max(int64(len(data)), info.Size), MaxContractBytes), nil
	}
	c, err := agentcontract.Parse(data)
	if err != nil {
		return nil, invalidContract("%s is corrupt: %v", agentcontract.Path, err), nil
	}
	return c, nil, nil
}

func invalidContract(format string, args ...any) *plugin.ToolError {
	return &plugin.ToolError{Code: CodeContractInvalid, Message: fmt.Sprintf(format, args...)}
}

func messageOf(err error) string {
	var pe *plugin.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	return err.Error()
}

// hintsOf returns a tool's UI hints: the contract's, or, when the host left
// them out, those of its output schema's x-ui. A malformed x-ui gives none;
// the full schema still shows it.
func hintsOf(t agentcontract.Tool) *agentcontract.UIHints {
	if t.UIHints != nil {
		return t.UIHints
	}
	h, err := agentcontract.NormaliseUIHints(t.OutputSchema)
	if err != nil {
		return nil
	}
	return h
}

// noAgent is the reason a contract without an agent gives.
func noAgent(c *agentcontract.Contract) string {
	if c != nil && c.Reason != "" {
		return c.Reason
	}
	return noAgentReason
}
