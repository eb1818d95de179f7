package patch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// writeFileTool replaces whole files. It is legacy: a model re-typing a file
// drops whatever it did not re-type, so it is offered only when the operator
// asks for it (Config.LegacyWriteFile); coding_agent_apply_patch is the way.
var writeFileTool = tool{name: "coding_agent_write_file", spec: writeFileSpec, run: writeFile,
	enabled: func(c Config) bool { return *c.LegacyWriteFile }}

type writeFileOutput struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	SHA256       string `json:"sha256"`
	Created      bool   `json:"created"`
}

func writeFileSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: "Create a file of the app, or replace its entire content. Give path relative to the app's root " +
			"(for example src/components/Button.tsx) and the complete new content: not a diff, every line of the " +
			"file; an empty string makes an empty file. Missing parent folders are created and a replaced file keeps " +
			"its permissions. Read a file before replacing it so that nothing you did not see is lost. Returns " +
			"bytes_written, the new sha256 and created (true when the file did not exist). Content over 1 MiB and " +
			"paths under .git, node_modules, dist, .vite, .turbo and .cache are refused.",
		InputSchema: json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "content"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 1024,
      "description": "File path relative to the app's root, with forward slashes, e.g. src/App.tsx"},
    "content": {"type": "string", "description": "The file's complete new content (at most 1 MiB as UTF-8)"}
  }
}`),
		OutputSchema: json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "bytes_written", "sha256", "created"],
  "properties": {
    "path": {"type": "string", "description": "The path written, cleaned"},
    "bytes_written": {"type": "integer", "minimum": 0},
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Hex sha256 of the new content"},
    "created": {"type": "boolean", "description": "True when the file did not exist before"}
  }
}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func writeFile(ctx context.Context, _ Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "path", "content")
	if te != nil {
		return failed(te), nil
	}
	reqPath, te := in.str("path", true, true)
	if te != nil {
		return failed(te), nil
	}
	content, te := in.str("content", true, false)
	if te != nil {
		return failed(te), nil
	}
	p, te := checkPath("path", reqPath)
	if te != nil {
		return failed(te), nil
	}
	if len(content) > MaxWriteBytes {
		return failed(&plugin.ToolError{Code: CodePolicyViolation, Field: "content",
			Message: fmt.Sprintf("content is %d bytes; one write may put at most %d bytes (1 MiB) in a file", len(content), MaxWriteBytes)}), nil
	}

	// Stat first: it tells created from replaced, refuses a folder before
	// anything is written, shows where a symlink leads, and gives the mode to
	// keep (a workspace writes mode 0 as 0644, which would drop +x from a
	// script). Another writer may act between Stat and WriteFile; created
	// then describes what this call saw, which is all it can promise.
	var mode uint32
	created := false
	switch fi, err := ws.Stat(ctx, p); {
	case err == nil && fi.IsDir:
		return failed(&plugin.ToolError{Code: CodePathIsDirectory, Message: p + " is a folder, not a file", Field: "path"}), nil
	case err == nil:
		if te := checkResolved("path", p, fi.Path); te != nil {
			return failed(te), nil
		}
		mode = fi.Mode
	case plugin.HasCode(err, plugin.CodeNotFound):
		created = true
	default:
		te, err := workspaceFailure(err, "path", p)
		if err != nil {
			return plugin.ToolResult{}, err
		}
		return failed(te), nil
	}

	if _, err := ws.WriteFile(ctx, p, []byte(content), mode); err != nil {
		te, err := workspaceFailure(err, "path", p)
		if err != nil {
			return plugin.ToolResult{}, err
		}
		return failed(te), nil
	}
	// Hash what this call wrote rather than trust the workspace's FileInfo,
	// whose hash is optional.
	sum := sha256.Sum256([]byte(content))
	return plugin.ToolOK(writeFileOutput{
		Path: p, BytesWritten: len(content), SHA256: hex.EncodeToString(sum[:]), Created: created,
	}), nil
}
