// Package patch is the editing toolpack: tools that read and change an app's
// files through the workspace the host lends for each call. Tools are strict
// where it matters (never touch a path outside policy) and report refusals as
// tool results with stable codes, never as transport errors.
package patch

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Tool result codes.
const (
	CodePolicyViolation = "BUILDER_PATCH_POLICY_VIOLATION"
	CodeInputInvalid    = "TOOL_INPUT_INVALID"
	CodeFileNotFound    = "FILE_NOT_FOUND"
	CodePathIsDirectory = "PATH_IS_DIRECTORY"
)

// tool is one tool of the pack: its spec and what it does.
type tool struct {
	spec plugin.ToolSpec
	run  func(ctx context.Context, input json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error)
}

// Pack is the patch toolpack.
type Pack struct {
	tools map[string]tool
}

// New returns the pack with every tool registered.
func New() *Pack {
	p := &Pack{tools: map[string]tool{}}
	for _, t := range []tool{readFileTool(), writeFileTool()} {
		p.tools[t.spec.Name] = t
	}
	return p
}

var _ toolpack.Toolpack = (*Pack)(nil)

// Info identifies the plugin.
func (p *Pack) Info() plugin.Info {
	return plugin.Info{Name: "patch", Kind: plugin.KindToolpack, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "file reading and editing tools"}
}

// Tools lists the tools in name order.
func (p *Pack) Tools(context.Context) ([]plugin.ToolSpec, error) {
	out := make([]plugin.ToolSpec, 0, len(p.tools))
	for _, t := range p.tools {
		out = append(out, t.spec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Call runs one tool.
func (p *Pack) Call(ctx context.Context, call toolpack.Call, ws workspace.Workspace) (plugin.ToolResult, error) {
	t, ok := p.tools[call.Tool]
	if !ok {
		return plugin.ToolFail(toolpack.CodeUnknownTool, "this toolpack has no tool "+call.Tool, "tool"), nil
	}
	if err := ctx.Err(); err != nil {
		return plugin.ToolResult{}, err
	}
	return t.run(ctx, call.Input, ws)
}

// decode parses a tool's input strictly: unknown fields and wrong types are
// refused with the field named.
func decode(input json.RawMessage, v any) *plugin.ToolResult {
	dec := json.NewDecoder(bytesReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		field := ""
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field = te.Field
		}
		r := plugin.ToolFail(CodeInputInvalid, "input is not valid for this tool: "+err.Error(), field)
		return &r
	}
	return nil
}

// fromWorkspaceError turns a workspace failure into a tool result when it is
// a domain failure, or returns it as an error when the workspace broke.
func fromWorkspaceError(err error, path string) (plugin.ToolResult, error) {
	switch plugin.CodeOf(err) {
	case plugin.CodeNotFound:
		return plugin.ToolFail(CodeFileNotFound, "no file at "+path, "path"), nil
	case plugin.CodePathDenied:
		return plugin.ToolFail(CodePolicyViolation, err.Error(), "path"), nil
	case plugin.CodeIsDirectory:
		return plugin.ToolFail(CodePathIsDirectory, path+" is a folder", "path"), nil
	case plugin.CodeTooLarge, plugin.CodeInvalidArgument, plugin.CodeAlreadyExists:
		return plugin.ToolFail(CodeInputInvalid, err.Error(), "path"), nil
	}
	return plugin.ToolResult{}, err
}
