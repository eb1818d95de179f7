// Package patch is the editing toolpack: tools that read and change an app's
// files through the workspace the host lends for each call. Every tool checks
// its input and the path policy itself (the host validates too, but a plugin
// must not depend on who drives it) and reports refusals as tool results with
// stable codes; only a broken workspace connection is a Go error.
//
// Each tool lives in its own file as a tool value and is listed once in
// registry, so adding a tool touches one new file and one line here.
package patch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Tool result codes of this pack (plus toolpack.CodeUnknownTool, and the
// workspace's own TOO_LARGE, ALREADY_EXISTS and INVALID_ARGUMENT, which are
// passed through unchanged).
const (
	// CodePolicyViolation: the path breaks the path policy (absolute, "..",
	// NUL or control character, backslash, blocked folder, too long) or the
	// content is over MaxWriteBytes.
	CodePolicyViolation = "BUILDER_PATCH_POLICY_VIOLATION"
	// CodeInputInvalid: the input is not a JSON object of the tool's fields
	// with the right types and values.
	CodeInputInvalid = "TOOL_INPUT_INVALID"
	// CodeFileNotFound: the file does not exist.
	CodeFileNotFound = "FILE_NOT_FOUND"
	// CodePathIsDirectory: the path names a folder where a file was expected.
	CodePathIsDirectory = "PATH_IS_DIRECTORY"
	// CodeToolDisabled: the tool exists but this host's config turns it off
	// (coding_agent_write_file without the legacy flag).
	CodeToolDisabled = "TOOL_DISABLED"
)

// tool is one tool of the pack. spec leaves Name empty: Tools fills it from
// name so the two cannot drift apart.
type tool struct {
	name string
	spec func(cfg Config) plugin.ToolSpec
	run  func(ctx context.Context, cfg Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error)
	// enabled, when set, says whether the config offers the tool at all.
	enabled func(cfg Config) bool
}

func (t tool) offered(cfg Config) bool { return t.enabled == nil || t.enabled(cfg) }

// registry lists the pack's tools in the order Tools reports them.
func registry() []tool {
	return []tool{readFileTool, readFileRangeTool, searchTool, workspaceIndexTool, collectContextTool, applyPatchTool, writeFileTool, deleteFileTool, renameFileTool, runCommandTool}
}

// Config is the plugin's `config { ... }` block. Every field is optional.
type Config struct {
	// ReadBudgetBytes caps the content one coding_agent_read_file call
	// returns; 0 means DefaultReadBudget.
	ReadBudgetBytes int `json:"read_budget_bytes,omitempty"`
	// CommandOutputBytes caps what one coding_agent_run_command returns of
	// stdout and stderr together; 0 means DefaultCommandOutputBytes.
	CommandOutputBytes int `json:"command_output_bytes,omitempty"`
	// LegacyWriteFile offers coding_agent_write_file. Unset, it follows
	// APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE=1 (off by default: whole-file
	// writes silently drop what a model did not re-type).
	LegacyWriteFile *bool `json:"legacy_write_file,omitempty"`
	// AutoVerifyPatch runs a successful patch's verification plan at once.
	// Unset, it follows APPS_CODING_AGENT_AUTO_VERIFY_PATCH=1.
	AutoVerifyPatch *bool `json:"auto_verify_patch,omitempty"`
}

// Bounds of ReadBudgetBytes. Below 1 KiB a read would make almost no
// progress per call; above 8 MiB a result whose content is all control
// characters (escaped as \u00XX, six bytes each) could outgrow the 64 MiB
// gRPC message limit (plugin.MaxMessageBytes).
const (
	minReadBudget = 1 << 10
	maxReadBudget = 8 << 20
)

func (c Config) withDefaults() Config {
	if c.ReadBudgetBytes == 0 {
		c.ReadBudgetBytes = DefaultReadBudget
	}
	if c.CommandOutputBytes == 0 {
		c.CommandOutputBytes = DefaultCommandOutputBytes
	}
	if c.LegacyWriteFile == nil {
		on := os.Getenv("APPS_CODING_AGENT_ENABLE_LEGACY_WRITE_FILE") == "1"
		c.LegacyWriteFile = &on
	}
	if c.AutoVerifyPatch == nil {
		on := os.Getenv("APPS_CODING_AGENT_AUTO_VERIFY_PATCH") == "1"
		c.AutoVerifyPatch = &on
	}
	return c
}

// Pack is the patch toolpack. It holds no per-run state, so one Pack serves
// every run and connection concurrently.
type Pack struct {
	tools  []tool
	byName map[string]tool

	mu  sync.RWMutex
	cfg Config
}

var (
	_ toolpack.Toolpack = (*Pack)(nil)
	_ plugin.Configurer = (*Pack)(nil)
)

// New returns the pack with every tool registered and the default config.
func New() *Pack {
	p := &Pack{tools: registry(), byName: map[string]tool{}, cfg: Config{}.withDefaults()}
	for _, t := range p.tools {
		p.byName[t.name] = t
	}
	return p
}

// Info identifies the plugin.
func (p *Pack) Info() plugin.Info {
	return plugin.Info{
		Name: "patch", Kind: plugin.KindToolpack, Version: "0.1.0", APIVersion: plugin.APIVersion,
		Description: "reads and writes an app's files, confined by the path policy",
	}
}

// Configure applies the plugin's config block. Unknown fields are refused so
// that an operator's typo fails at load instead of being ignored.
func (p *Pack) Configure(_ context.Context, raw json.RawMessage) error {
	var cfg Config
	if len(bytes.TrimSpace(raw)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return plugin.Errorf(plugin.CodeInvalidArgument, "config", "patch config: %v", err)
		}
	}
	if b := cfg.ReadBudgetBytes; b != 0 && (b < minReadBudget || b > maxReadBudget) {
		return plugin.Errorf(plugin.CodeInvalidArgument, "read_budget_bytes",
			"read_budget_bytes is %d; it must be between %d and %d", b, minReadBudget, maxReadBudget)
	}
	if b := cfg.CommandOutputBytes; b != 0 && (b < minReadBudget || b > maxReadBudget) {
		return plugin.Errorf(plugin.CodeInvalidArgument, "command_output_bytes",
			"command_output_bytes is %d; it must be between %d and %d", b, minReadBudget, maxReadBudget)
	}
	p.mu.Lock()
	p.cfg = cfg.withDefaults()
	p.mu.Unlock()
	return nil
}

func (p *Pack) config() Config {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cfg
}

// Tools lists the tools in registry order.
func (p *Pack) Tools(context.Context) ([]plugin.ToolSpec, error) {
	cfg := p.config()
	out := make([]plugin.ToolSpec, 0, len(p.tools))
	for _, t := range p.tools {
		if !t.offered(cfg) {
			continue
		}
		spec := t.spec(cfg)
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
		return plugin.ToolFail(toolpack.CodeUnknownTool, fmt.Sprintf("the patch toolpack has no tool %q", call.Tool), "tool"), nil
	}
	cfg := p.config()
	if !t.offered(cfg) {
		return plugin.ToolFail(CodeToolDisabled, fmt.Sprintf("%s is turned off on this host", call.Tool), "tool"), nil
	}
	if err := ctx.Err(); err != nil {
		return plugin.ToolResult{}, err
	}
	// One process serves every run: a bug tripped by one odd input must fail
	// that call, not kill the plugin under all the others.
	defer func() {
		if r := recover(); r != nil {
			res, err = plugin.ToolResult{}, fmt.Errorf("tool %s panicked: %v", call.Tool, r)
		}
	}()
	return t.run(ctx, cfg, call.Input, ws)
}

// failed wraps a domain failure as a tool result.
func failed(te *plugin.ToolError) plugin.ToolResult { return plugin.ToolResult{Error: te} }

// workspaceFailure sorts a workspace error: a refusal the workspace answered
// with a code becomes a tool failure (field names the input at fault);
// anything else (a broken connection, a cancelled call, an internal fault of
// the sandbox) is returned as an error.
func workspaceFailure(err error, field, p string) (*plugin.ToolError, error) {
	code := plugin.CodeOf(err)
	switch code {
	case plugin.CodeNotFound:
		return &plugin.ToolError{Code: CodeFileNotFound, Message: p + " does not exist", Field: field}, nil
	case plugin.CodePathDenied:
		return &plugin.ToolError{Code: CodePolicyViolation, Message: "the workspace refused " + p + ": " + messageOf(err), Field: field}, nil
	case plugin.CodeIsDirectory:
		return &plugin.ToolError{Code: CodePathIsDirectory, Message: p + " is a folder, not a file", Field: field}, nil
	case plugin.CodeTooLarge, plugin.CodeAlreadyExists, plugin.CodeInvalidArgument, plugin.CodeUnsupported:
		// Refusals about this input that the pack has no code of its own
		// for: keep the workspace's stable code rather than inventing one.
		return &plugin.ToolError{Code: code, Message: messageOf(err), Field: field}, nil
	}
	return nil, fmt.Errorf("workspace %s: %w", p, err)
}

func messageOf(err error) string {
	var pe *plugin.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	return err.Error()
}
