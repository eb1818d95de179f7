package patch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Bounds of coding_agent_search.
const (
	defaultSearchResults = 100
	maxSearchResults     = 500
	maxSearchLineBytes   = 300
	// maxSearchFiles bounds the files one search reads: an app's sources fit
	// many times over; a tree bigger than that is mostly not the app's.
	maxSearchFiles = 20000
)

var searchTool = tool{name: "coding_agent_search", spec: searchSpec, run: search}

type searchMatch struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

type searchOutput struct {
	Matches       []searchMatch `json:"matches"`
	FilesSearched int           `json:"files_searched"`
	FilesSkipped  int           `json:"files_skipped"`
	Truncated     bool          `json:"truncated"`
}

func searchSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: "Search the app's text files for a literal string (default) or a Go regular expression " +
			"(regex=true), ignoring case unless case_sensitive=true. Limit it to a folder with path and to file " +
			"names with glob (for example *.tsx). Returns matches in path and line order, each with path, line, " +
			"column (1-based, in bytes) and the line's text (cut at 300 bytes), at most max_results (default 100, " +
			"at most 500; truncated=true when there were more). Binary files, files over 4 MiB and .git, " +
			"node_modules, dist, .vite, .turbo and .cache are not searched.",
		InputSchema: schema([]string{"query"},
			`"query":{"type":"string","minLength":1,"maxLength":1000,"description":"Text or regular expression to find"},`+
				`"regex":{"type":"boolean","description":"Treat query as a Go regular expression; default false"},`+
				`"case_sensitive":{"type":"boolean","description":"Match case exactly; default false"},`+
				`"path":{"type":"string","maxLength":1024,"description":"Folder to search in, relative to the app's root; default the whole app"},`+
				`"glob":{"type":"string","maxLength":200,"description":"File name pattern, e.g. *.ts or *.{ts,tsx}"},`+
				fmt.Sprintf(`"max_results":{"type":"integer","minimum":1,"maximum":%d,"description":"Most matches to return; default %d"}`, maxSearchResults, defaultSearchResults)),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["matches","files_searched","files_skipped","truncated"],
  "properties":{"matches":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["path","line","column","text"],
  "properties":{"path":{"type":"string"},"line":{"type":"integer"},"column":{"type":"integer"},"text":{"type":"string"}}}},
  "files_searched":{"type":"integer"},"files_skipped":{"type":"integer"},"truncated":{"type":"boolean"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func search(ctx context.Context, _ Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "query", "regex", "case_sensitive", "path", "glob", "max_results")
	if te != nil {
		return failed(te), nil
	}
	query, te := in.str("query", true, true)
	if te != nil {
		return failed(te), nil
	}
	isRegex, te := in.boolean("regex", false)
	if te != nil {
		return failed(te), nil
	}
	caseSensitive, te := in.boolean("case_sensitive", false)
	if te != nil {
		return failed(te), nil
	}
	dir, te := in.str("path", false, false)
	if te != nil {
		return failed(te), nil
	}
	if dir == "." || dir == "./" {
		dir = ""
	}
	if dir != "" {
		if dir, te = checkPath("path", dir); te != nil {
			return failed(te), nil
		}
	}
	glob, te := in.str("glob", false, false)
	if te != nil {
		return failed(te), nil
	}
	globs, te := parseGlob(glob)
	if te != nil {
		return failed(te), nil
	}
	limit, te := in.intIn("max_results", defaultSearchResults, 1, maxSearchResults)
	if te != nil {
		return failed(te), nil
	}
	match, te := matcher(query, isRegex, caseSensitive)
	if te != nil {
		return failed(te), nil
	}

	entries, _, err := ws.List(ctx, dir, workspace.ListOptions{Recursive: true, Limit: maxSearchFiles, SkipDirs: blockedFolders[:]})
	if err != nil {
		return wsFailed(err, "path", dir)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir || blockedFolderIn(e.Path) != "" || e.Size > MaxTextFileBytes {
			continue
		}
		if len(globs) > 0 && !matchesGlob(globs, path.Base(e.Path)) {
			continue
		}
		files = append(files, e.Path)
	}
	perFile, skipped, err := searchFiles(ctx, ws, files, match, limit)
	if err != nil {
		return plugin.ToolResult{}, err
	}
	out := searchOutput{Matches: []searchMatch{}, FilesSearched: len(files) - skipped, FilesSkipped: skipped}
	for _, ms := range perFile {
		for _, m := range ms {
			if len(out.Matches) == limit {
				out.Truncated = true
				break
			}
			out.Matches = append(out.Matches, m)
		}
	}
	return plugin.ToolOK(out), nil
}

// searchFiles returns each file's matches in files' order (at most limit+1
// per file: one more than fits tells that the result is truncated), and how
// many files were skipped as not text.
func searchFiles(ctx context.Context, ws workspace.Workspace, files []string, match func([]byte) []int, limit int) ([][]searchMatch, int, error) {
	results := make([][]searchMatch, len(files))
	skipped := make([]bool, len(files))
	err := readMany(ctx, ws, files, func(i int, data []byte) {
		if len(data) > MaxTextFileBytes || isBinary(data) {
			skipped[i] = true
			return
		}
		results[i] = matchLines(files[i], data, match, limit+1)
	}, func(i int) { skipped[i] = true })
	if err != nil {
		return nil, 0, fmt.Errorf("search: %w", err)
	}
	n := 0
	for _, s := range skipped {
		if s {
			n++
		}
	}
	return results, n, nil
}

// matchLines returns up to limit matches of match in data, one per line.
func matchLines(p string, data []byte, match func([]byte) []int, limit int) []searchMatch {
	var out []searchMatch
	for n := 1; len(data) > 0 && len(out) < limit; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i]
			data = data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if loc := match(line); loc != nil {
			text := line
			if len(text) > maxSearchLineBytes {
				text = text[:runeStartBefore(text, maxSearchLineBytes)]
			}
			out = append(out, searchMatch{Path: p, Line: n, Column: loc[0] + 1, Text: strings.ToValidUTF8(string(text), "\uFFFD")})
		}
	}
	return out
}

// matcher compiles the query into a function returning the first match's
// [start, end) in a line, or nil.
func matcher(query string, isRegex, caseSensitive bool) (func([]byte) []int, *plugin.ToolError) {
	expr := query
	if !isRegex {
		expr = regexp.QuoteMeta(query)
	}
	if !caseSensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, invalid("query", "query is not a valid regular expression: %v", err)
	}
	if !isRegex && caseSensitive {
		// The common case needs no regexp machinery.
		q := []byte(query)
		return func(line []byte) []int {
			if i := bytes.Index(line, q); i >= 0 {
				return []int{i, i + len(q)}
			}
			return nil
		}, nil
	}
	return re.FindIndex, nil
}

// parseGlob splits a glob with one optional {a,b} group into the plain
// patterns path.Match understands, and checks each.
func parseGlob(glob string) ([]string, *plugin.ToolError) {
	if glob == "" {
		return nil, nil
	}
	if strings.Contains(glob, "/") {
		return nil, invalid("glob", "glob matches file names only; put the folder in path")
	}
	pats := []string{glob}
	if i := strings.IndexByte(glob, '{'); i >= 0 {
		j := strings.IndexByte(glob[i:], '}')
		if j < 0 {
			return nil, invalid("glob", "glob %q has a { without its }", glob)
		}
		pats = nil
		for _, alt := range strings.Split(glob[i+1:i+j], ",") {
			pats = append(pats, glob[:i]+alt+glob[i+j+1:])
		}
	}
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil || !utf8.ValidString(p) {
			return nil, invalid("glob", "glob %q is not a valid pattern", glob)
		}
	}
	return pats, nil
}

func matchesGlob(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}
