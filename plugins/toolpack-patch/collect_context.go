package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/outline"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Bounds of coding_agent_collect_context.
const (
	defaultContextBudget = 32 << 10
	maxContextBudget     = 256 << 10
	minContextBudget     = 1 << 10
	// contextIndexShare is the part of the budget the file index may use;
	// the windows get the rest (and whatever the index leaves).
	contextIndexShare = 4
	// maxRankedFileBytes: files larger are listed, not ranked. Relevant
	// hand-written code is never that big, and ranking reads every byte.
	maxRankedFileBytes = 512 << 10
)

var collectContextTool = tool{name: "coding_agent_collect_context", spec: collectContextSpec, run: collectContext}

type contextFile struct {
	Path     string `json:"path"`
	Language string `json:"language"`
	Size     int64  `json:"size"`
}

type collectContextOutput struct {
	Query   string           `json:"query"`
	Index   []contextFile    `json:"index"`
	Windows []outline.Window `json:"windows"`
	// IndexTruncated says the index lists only some files (those with
	// windows first); the workspace index tool lists them all.
	IndexTruncated bool `json:"index_truncated"`
	BudgetBytes    int  `json:"budget_bytes"`
	UsedBytes      int  `json:"used_bytes"`
}

func collectContextSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("Gather what you need to know for a task in one call: the most relevant line "+
			"windows of the app's files for query (words or identifiers, e.g. \"login button submit handler\"), best "+
			"first, plus an index of the app's files, all within budget_bytes (default %s, at most %s). Windows hold "+
			"the lines themselves with their start_line and end_line, ready to patch against.",
			byteSize(defaultContextBudget), byteSize(maxContextBudget)),
		InputSchema: schema([]string{"query"},
			`"query":{"type":"string","minLength":1,"maxLength":2000,"description":"What you are looking for"},`+
				`"path":{"type":"string","maxLength":1024,"description":"Folder to look in; default the whole app"},`+
				fmt.Sprintf(`"budget_bytes":{"type":"integer","minimum":%d,"maximum":%d},`, minContextBudget, maxContextBudget)+
				`"window_lines":{"type":"integer","minimum":5,"maximum":200,"description":"Lines per window; default 40"}`),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,
  "required":["query","index","windows","index_truncated","budget_bytes","used_bytes"],
  "properties":{"query":{"type":"string"},"index":{"type":"array","items":{"type":"object"}},
  "windows":{"type":"array","items":{"type":"object","required":["path","start_line","end_line","content"]}},
  "index_truncated":{"type":"boolean"},"budget_bytes":{"type":"integer"},"used_bytes":{"type":"integer"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func collectContext(ctx context.Context, _ Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "query", "path", "budget_bytes", "window_lines")
	if te != nil {
		return failed(te), nil
	}
	query, te := in.str("query", true, true)
	if te != nil {
		return failed(te), nil
	}
	dir, te := folderArg(in, "path")
	if te != nil {
		return failed(te), nil
	}
	budget, te := in.intIn("budget_bytes", defaultContextBudget, minContextBudget, maxContextBudget)
	if te != nil {
		return failed(te), nil
	}
	windowLines, te := in.intIn("window_lines", outline.DefaultWindowLines, 5, 200)
	if te != nil {
		return failed(te), nil
	}
	files, _, _, err := listFiles(ctx, ws, dir, maxIndexFiles, false)
	if err != nil {
		return wsFailed(err, "path", dir)
	}
	var paths []string
	for _, f := range files {
		if f.Size <= maxRankedFileBytes {
			paths = append(paths, f.Path)
		}
	}
	docs := make([]outline.Doc, len(paths))
	err = readMany(ctx, ws, paths, func(i int, data []byte) {
		if !isBinary(data) {
			docs[i] = outline.Doc{Path: paths[i], Content: data}
		}
	}, func(int) {})
	if err != nil {
		return plugin.ToolResult{}, fmt.Errorf("collect context: %w", err)
	}
	kept := docs[:0]
	for _, d := range docs {
		if d.Path != "" {
			kept = append(kept, d)
		}
	}

	// The index first, within its share: files with windows lead, so the
	// model sees their neighbours; then the rest in path order.
	windows := outline.Rank(query, kept, budget-budget/contextIndexShare, windowLines)
	hit := map[string]bool{}
	for _, w := range windows {
		hit[w.Path] = true
	}
	ordered := append([]workspace.FileInfo(nil), files...)
	sort.SliceStable(ordered, func(i, j int) bool { return hit[ordered[i].Path] && !hit[ordered[j].Path] })
	out := collectContextOutput{Query: query, Index: []contextFile{}, Windows: windows, BudgetBytes: budget}
	used := 0
	for _, w := range windows {
		used += len(w.Content)
	}
	indexBudget := budget - used
	for _, f := range ordered {
		entry := contextFile{Path: f.Path, Language: outline.Language(f.Path), Size: f.Size}
		cost := len(entry.Path) + len(entry.Language) + 40 // the JSON around them
		if cost > indexBudget {
			out.IndexTruncated = true
			break
		}
		indexBudget -= cost
		used += cost
		out.Index = append(out.Index, entry)
	}
	if out.Windows == nil {
		out.Windows = []outline.Window{}
	}
	out.UsedBytes = used
	return plugin.ToolOK(out), nil
}
