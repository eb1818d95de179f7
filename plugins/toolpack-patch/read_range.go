package patch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// maxContextLines bounds the lines a range read adds around the range asked.
const maxContextLines = 200

var readFileRangeTool = tool{name: "coding_agent_read_file_range", spec: readFileRangeSpec, run: readFileRange}

type readFileRangeOutput struct {
	Path string `json:"path"`
	// Content is lines start_line..end_line; with numbered, each is
	// prefixed by its number and "| ".
	Content        string `json:"content"`
	StartLine      int    `json:"start_line"`
	EndLine        int    `json:"end_line"`
	RequestedStart int    `json:"requested_start_line"`
	RequestedEnd   int    `json:"requested_end_line"`
	TotalLines     int    `json:"total_lines"`
	// SHA256 of the whole file: the revision token to compare with later.
	SHA256    string `json:"sha256"`
	Truncated bool   `json:"truncated"`
}

func readFileRangeSpec(cfg Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("Read lines start_line..end_line (1-based, inclusive) of a text file, with "+
			"context_lines more on each side, within max_bytes (default and at most %s). Use it to look at the "+
			"place you are about to patch, or to re-read the window a failed patch recommends. numbered=true "+
			"prefixes each line with its number and \"| \" (for reading only: never copy those prefixes into a "+
			"patch). Returns the lines actually returned, total_lines and the file's sha256 (its revision token); "+
			"truncated=true when the budget cut the range short.", byteSize(cfg.ReadBudgetBytes)),
		InputSchema: schema([]string{"path", "start_line"},
			pathProp("path", "The file to read")+`,`+
				`"start_line":{"type":"integer","minimum":1,"description":"First line of the range"},`+
				`"end_line":{"type":"integer","minimum":1,"description":"Last line of the range; default start_line"},`+
				fmt.Sprintf(`"context_lines":{"type":"integer","minimum":0,"maximum":%d,"description":"Extra lines on each side; default 0"},`, maxContextLines)+
				fmt.Sprintf(`"max_bytes":{"type":"integer","minimum":%d,"maximum":%d,"description":"Content budget in bytes"},`, minReadBudget, maxReadBudget)+
				`"numbered":{"type":"boolean","description":"Prefix each line with its number; default false"}`),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,
  "required":["path","content","start_line","end_line","requested_start_line","requested_end_line","total_lines","sha256","truncated"],
  "properties":{"path":{"type":"string"},"content":{"type":"string"},"start_line":{"type":"integer"},"end_line":{"type":"integer"},
  "requested_start_line":{"type":"integer"},"requested_end_line":{"type":"integer"},"total_lines":{"type":"integer"},
  "sha256":{"type":"string"},"truncated":{"type":"boolean"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func readFileRange(ctx context.Context, cfg Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "path", "start_line", "end_line", "context_lines", "max_bytes", "numbered")
	if te != nil {
		return failed(te), nil
	}
	p, te := in.pathArg("path")
	if te != nil {
		return failed(te), nil
	}
	if _, ok := in["start_line"]; !ok {
		return failed(invalid("start_line", "start_line is required")), nil
	}
	start, te := in.line("start_line")
	if te != nil {
		return failed(te), nil
	}
	end, te := in.line("end_line")
	if te != nil {
		return failed(te), nil
	}
	if end == 0 {
		end = start
	}
	if end < start {
		return failed(invalid("end_line", "end_line %d is before start_line %d", end, start)), nil
	}
	ctxLines, te := in.intIn("context_lines", 0, 0, maxContextLines)
	if te != nil {
		return failed(te), nil
	}
	budget, te := in.intIn("max_bytes", cfg.ReadBudgetBytes, minReadBudget, maxReadBudget)
	if te != nil {
		return failed(te), nil
	}
	budget = min(budget, cfg.ReadBudgetBytes)
	numbered, te := in.boolean("numbered", false)
	if te != nil {
		return failed(te), nil
	}
	data, te, err := readText(ctx, ws, "path", p)
	if err != nil || te != nil {
		return failed(te), err
	}
	total := countLines(data)
	if start > max(total, 1) {
		return failed(invalid("start_line", "start_line %d is past the end of %s, which has %d lines", start, p, total)), nil
	}
	from := max(1, start-ctxLines)
	to := min(total, end+ctxLines)
	var content bytes.Buffer
	last := from - 1
	truncated := false
	if total > 0 {
		lo, hi := lineSpan(data, from, to)
		lines := data[lo:hi]
		for n := from; len(lines) > 0; n++ {
			line := lines
			if i := bytes.IndexByte(lines, '\n'); i >= 0 {
				line = lines[:i+1]
			}
			lines = lines[len(line):]
			size := len(line)
			if numbered {
				size += len(strconv.Itoa(n)) + 2
			}
			if content.Len()+size > budget {
				truncated = true
				break
			}
			if numbered {
				content.WriteString(strconv.Itoa(n))
				content.WriteString("| ")
			}
			content.Write(line)
			last = n
		}
	}
	return plugin.ToolOK(readFileRangeOutput{
		Path: p, Content: content.String(), StartLine: from, EndLine: last,
		RequestedStart: start, RequestedEnd: end, TotalLines: total, SHA256: sha256Hex(data), Truncated: truncated,
	}), nil
}
