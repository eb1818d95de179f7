package patch

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// DefaultReadBudget caps the content one read returns; a model asks for a
// line range to see more.
const DefaultReadBudget = 256 << 10

type readFileInput struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

type readFileOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
	Truncated  bool   `json:"truncated"`
}

func readFileTool() tool {
	return tool{
		spec: plugin.ToolSpec{
			Name: "coding_agent_read_file",
			Description: "Read a text file of the app, whole or a 1-based inclusive line range. " +
				"Returns the content, the lines returned, the file's total line count and its sha256. " +
				"Content over 256 KiB is cut at a line boundary (truncated=true): read the rest by line range.",
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path"],
"properties":{"path":{"type":"string","minLength":1,"description":"file path relative to the app root"},
"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","required":["path","content","start_line","end_line","sha256","size","truncated"],
"properties":{"path":{"type":"string"},"content":{"type":"string"},"start_line":{"type":"integer"},"end_line":{"type":"integer"},
"total_lines":{"type":"integer"},"sha256":{"type":"string"},"size":{"type":"integer"},"truncated":{"type":"boolean"}}}`),
			DefaultPermission: plugin.PermissionAllow,
		},
		run: readFile,
	}
}

func readFile(ctx context.Context, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	var in readFileInput
	if r := decode(raw, &in); r != nil {
		return *r, nil
	}
	p, why := checkPath(in.Path)
	if why != "" {
		return plugin.ToolFail(CodePolicyViolation, why, "path"), nil
	}
	if in.StartLine < 0 || in.EndLine < 0 || (in.EndLine > 0 && in.StartLine > in.EndLine) {
		return plugin.ToolFail(CodeInputInvalid, "start_line must be ≥ 1 and ≤ end_line", "start_line"), nil
	}
	data, info, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
	if err != nil {
		return fromWorkspaceError(err, p)
	}
	total := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	start, end := max(in.StartLine, 1), in.EndLine
	if end == 0 || end > total {
		end = total
	}
	content := linesOf(data, start, end)
	truncated := false
	if len(content) > DefaultReadBudget {
		cut := bytes.LastIndexByte(content[:DefaultReadBudget], '\n')
		if cut < 0 {
			cut = DefaultReadBudget - 1
		}
		content = content[:cut+1]
		end = start + bytes.Count(content, []byte("\n")) - 1
		truncated = true
	}
	if start > total {
		content, end = nil, total
	}
	return plugin.ToolOK(readFileOutput{
		Path: p, Content: string(content), StartLine: start, EndLine: end, TotalLines: total,
		SHA256: info.SHA256, Size: info.Size, Truncated: truncated,
	}), nil
}

// linesOf returns lines start..end (1-based, inclusive) with their endings.
func linesOf(data []byte, start, end int) []byte {
	line, from := 1, -1
	for i := 0; i < len(data); i++ {
		if line == start && from < 0 {
			from = i
		}
		if data[i] == '\n' {
			if line == end {
				return data[max(from, 0) : i+1]
			}
			line++
		}
	}
	if from < 0 {
		return nil
	}
	return data[from:]
}
