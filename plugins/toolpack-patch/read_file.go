package patch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// DefaultReadBudget is how much content one read returns unless the config
// says otherwise: some 6,000 lines of typical source, enough for almost any
// file of an app in one call while keeping a single tool result a modest part
// of a model's context.
const DefaultReadBudget = 256 << 10

var readFileTool = tool{name: "coding_agent_read_file", spec: readFileSpec, run: readFile}

type readFileOutput struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	SHA256     string `json:"sha256"`
	Size       int    `json:"size"`
	Truncated  bool   `json:"truncated"`
}

func readFileSpec(cfg Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("Read a text file of the app. Give path relative to the app's root "+
			"(for example src/App.tsx) and, to read part of it, start_line and/or end_line (1-based, inclusive). "+
			"Returns the content with its line endings, the range returned (start_line..end_line), the file's "+
			"total_lines, its size in bytes and its sha256. At most %s of content comes back per call: a longer "+
			"read is cut at the end of a line and says truncated=true, so continue with start_line = end_line + 1. "+
			"Files under .git, node_modules, dist, .vite, .turbo and .cache cannot be read.", byteSize(cfg.ReadBudgetBytes)),
		InputSchema: json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 1024,
      "description": "File path relative to the app's root, with forward slashes, e.g. src/App.tsx"},
    "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based); default 1"},
    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return (1-based, inclusive); default the last line"}
  }
}`),
		OutputSchema: json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "content", "start_line", "end_line", "sha256", "size", "truncated"],
  "properties": {
    "path": {"type": "string", "description": "The path read, cleaned"},
    "content": {"type": "string", "description": "Lines start_line..end_line with their line endings"},
    "start_line": {"type": "integer", "minimum": 1},
    "end_line": {"type": "integer", "minimum": 0, "description": "Last line returned; start_line - 1 when none was"},
    "total_lines": {"type": "integer", "minimum": 0, "description": "Lines in the whole file"},
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Hex sha256 of the whole file"},
    "size": {"type": "integer", "minimum": 0, "description": "Size of the whole file in bytes"},
    "truncated": {"type": "boolean", "description": "True when the budget cut the content short of end_line asked for"}
  }
}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func readFile(ctx context.Context, cfg Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "path", "start_line", "end_line")
	if te != nil {
		return failed(te), nil
	}
	reqPath, te := in.str("path", true, true)
	if te != nil {
		return failed(te), nil
	}
	start, te := in.line("start_line")
	if te != nil {
		return failed(te), nil
	}
	end, te := in.line("end_line")
	if te != nil {
		return failed(te), nil
	}
	if end > 0 && start > end {
		return failed(invalid("end_line", "end_line %d is before start_line %d", end, start)), nil
	}
	p, te := checkPath("path", reqPath)
	if te != nil {
		return failed(te), nil
	}

	// The whole file, not the workspace's line range: total_lines, size and
	// sha256 then describe exactly the bytes the content was cut from, in
	// one call. App files are small; MaxWriteBytes bounds what tools write.
	data, te, err := readText(ctx, ws, "path", p)
	if err != nil || te != nil {
		return failed(te), err
	}

	total := countLines(data)
	start = max(start, 1)
	if start > max(total, 1) {
		return failed(invalid("start_line", "start_line %d is past the end of %s, which has %d lines", start, p, total)), nil
	}
	if end == 0 || end > total {
		end = total
	}
	from, to := lineSpan(data, start, end)
	content, truncated := data[from:to], false
	if budget := cfg.ReadBudgetBytes; len(content) > budget {
		truncated = true
		if cut := bytes.LastIndexByte(content[:budget], '\n') + 1; cut > 0 {
			content = content[:cut]
			end = start + bytes.Count(content, []byte{'\n'}) - 1
		} else {
			// The first line alone is over the budget (minified code): give
			// its head rather than nothing, cut between characters.
			content = content[:runeStartBefore(content, budget)]
			end = start
		}
	}
	sum := sha256.Sum256(data)
	return plugin.ToolOK(readFileOutput{
		Path: p, Content: string(content), StartLine: start, EndLine: end, TotalLines: total,
		SHA256: hex.EncodeToString(sum[:]), Size: len(data), Truncated: truncated,
	}), nil
}

// countLines counts lines the way editors number them: a final line without
// a newline still counts; an empty file has none.
func countLines(data []byte) int {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// lineSpan returns the byte offsets [from, to) of lines start..end (1-based,
// inclusive) in data, line endings included.
func lineSpan(data []byte, start, end int) (int, int) {
	from := 0
	for line := 1; line < start; line++ {
		i := bytes.IndexByte(data[from:], '\n')
		if i < 0 {
			return len(data), len(data)
		}
		from += i + 1
	}
	to := from
	for line := start; line <= end; line++ {
		i := bytes.IndexByte(data[to:], '\n')
		if i < 0 {
			return from, len(data)
		}
		to += i + 1
	}
	return from, to
}

// runeStartBefore returns the largest n ≤ limit at which b can be cut without
// splitting a UTF-8 sequence (limit < len(b)). It looks back at most
// utf8.UTFMax-1 bytes: further back the data is not UTF-8, and any cut will do.
func runeStartBefore(b []byte, limit int) int {
	for n := limit; n > 0 && n > limit-utf8.UTFMax; n-- {
		if utf8.RuneStart(b[n]) {
			return n
		}
	}
	return limit
}

// byteSize renders a budget for a description: "256 KiB", or bytes when it is
// not a whole number of KiB.
func byteSize(n int) string {
	switch {
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
