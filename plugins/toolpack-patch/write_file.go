package patch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

type writeFileInput struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

type writeFileOutput struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	SHA256       string `json:"sha256"`
	Created      bool   `json:"created"`
}

func writeFileTool() tool {
	return tool{
		spec: plugin.ToolSpec{
			Name: "coding_agent_write_file",
			Description: "Create a file of the app or replace its whole content. Give the complete new content; " +
				"parent folders are created. Files over 1 MiB and paths in .git, node_modules or build output are refused.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","content"],
"properties":{"path":{"type":"string","minLength":1,"description":"file path relative to the app root"},
"content":{"type":"string","description":"the file's complete new content"}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","required":["path","bytes_written","sha256","created"],
"properties":{"path":{"type":"string"},"bytes_written":{"type":"integer"},"sha256":{"type":"string"},"created":{"type":"boolean"}}}`),
			DefaultPermission: plugin.PermissionAllow,
		},
		run: writeFile,
	}
}

func writeFile(ctx context.Context, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	var in writeFileInput
	if r := decode(raw, &in); r != nil {
		return *r, nil
	}
	if in.Content == nil {
		return plugin.ToolFail(CodeInputInvalid, "content is required (use an empty string for an empty file)", "content"), nil
	}
	p, why := checkPath(in.Path)
	if why != "" {
		return plugin.ToolFail(CodePolicyViolation, why, "path"), nil
	}
	if len(*in.Content) > MaxWriteBytes {
		return plugin.ToolFail(CodePolicyViolation, fmt.Sprintf("content has %d bytes; the limit is %d", len(*in.Content), MaxWriteBytes), "content"), nil
	}
	created := false
	if _, err := ws.Stat(ctx, p); err != nil {
		if plugin.CodeOf(err) != plugin.CodeNotFound {
			return fromWorkspaceError(err, p)
		}
		created = true
	}
	info, err := ws.WriteFile(ctx, p, []byte(*in.Content), 0)
	if err != nil {
		return fromWorkspaceError(err, p)
	}
	return plugin.ToolOK(writeFileOutput{Path: p, BytesWritten: len(*in.Content), SHA256: info.SHA256, Created: created}), nil
}
