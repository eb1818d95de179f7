package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/outline"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Bounds of coding_agent_workspace_index.
const (
	defaultIndexFiles   = 2000
	maxIndexFiles       = 10000
	defaultIndexSymbols = 50
	maxIndexSymbols     = 200
)

var workspaceIndexTool = tool{name: "coding_agent_workspace_index", spec: workspaceIndexSpec, run: workspaceIndex}

type indexedFile struct {
	Path     string           `json:"path"`
	Size     int64            `json:"size"`
	SHA256   string           `json:"sha256"`
	Language string           `json:"language"`
	Binary   bool             `json:"binary,omitempty"`
	Symbols  []outline.Symbol `json:"symbols,omitempty"`
	// outlined says Binary and Symbols are those of the content SHA256
	// names (a file gone before it could be read has none).
	outlined bool
	// encoded, when not nil, is the file's JSON object (appendJSON). It
	// is shared with the last index and must not be modified.
	encoded []byte
}

type workspaceIndexOutput struct {
	Files []indexedFile `json:"files"`
	// SkippedFolders are blocked folders present in the tree, listed but
	// not walked (node_modules, dist, ...).
	SkippedFolders []string `json:"skipped_folders"`
	Truncated      bool     `json:"truncated"`
	// remember makes appendJSON keep each outlined file's object in
	// indexedFile.encoded.
	remember bool
}

func workspaceIndexSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("List the app's files with path, size, sha256 (revision token), language and, with "+
			"outline=true (the default), a symbol outline of each text file: functions, classes, components, types, "+
			"CSS selectors, HTML ids, JSON keys, Go and Python definitions, each with its line. Start here to find "+
			"where things are. path limits it to a folder; at most max_files files (default %d, at most %d; "+
			"truncated=true when there were more) and max_symbols per file (default %d). Folders like node_modules "+
			"and dist are named in skipped_folders, not walked.", defaultIndexFiles, maxIndexFiles, defaultIndexSymbols),
		InputSchema: schema(nil,
			`"path":{"type":"string","maxLength":1024,"description":"Folder to index, relative to the app's root; default the whole app"},`+
				fmt.Sprintf(`"max_files":{"type":"integer","minimum":1,"maximum":%d},`, maxIndexFiles)+
				`"outline":{"type":"boolean","description":"Include symbol outlines; default true"},`+
				fmt.Sprintf(`"max_symbols":{"type":"integer","minimum":0,"maximum":%d,"description":"Symbols per file"}`, maxIndexSymbols)),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["files","skipped_folders","truncated"],
  "properties":{"files":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["path","size","sha256","language"],
    "properties":{"path":{"type":"string"},"size":{"type":"integer"},"sha256":{"type":"string"},"language":{"type":"string"},
    "binary":{"type":"boolean"},"symbols":{"type":"array","items":{"type":"object"}}}}},
  "skipped_folders":{"type":"array","items":{"type":"string"}},"truncated":{"type":"boolean"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func workspaceIndex(ctx context.Context, _ Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "path", "max_files", "outline", "max_symbols")
	if te != nil {
		return failed(te), nil
	}
	dir, te := folderArg(in, "path")
	if te != nil {
		return failed(te), nil
	}
	maxFiles, te := in.intIn("max_files", defaultIndexFiles, 1, maxIndexFiles)
	if te != nil {
		return failed(te), nil
	}
	withOutline, te := in.boolean("outline", true)
	if te != nil {
		return failed(te), nil
	}
	maxSymbols, te := in.intIn("max_symbols", defaultIndexSymbols, 0, maxIndexSymbols)
	if te != nil {
		return failed(te), nil
	}
	// Hashes always come from the listing: a workspace that keeps them by
	// stat (dirfs does) answers an unchanged tree without reading a file,
	// and the hash is then the key of the file's cached outline.
	files, skipped, truncated, err := listFiles(ctx, ws, dir, maxFiles, true)
	if err != nil {
		return wsFailed(err, "path", dir)
	}
	out := workspaceIndexOutput{Files: make([]indexedFile, len(files)), SkippedFolders: skipped, Truncated: truncated}
	for i, f := range files {
		out.Files[i] = indexedFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256}
	}
	if withOutline {
		if err := outlineFiles(ctx, ws, out.Files, maxSymbols); err != nil {
			return plugin.ToolResult{}, fmt.Errorf("workspace index: %w", err)
		}
		out.remember = true
	} else {
		for i := range out.Files {
			out.Files[i].Language = outline.Language(out.Files[i].Path)
		}
	}
	// Encoded by hand rather than by plugin.ToolOK: same bytes, a sixth of
	// a warm call less (see appendJSON).
	output := out.appendJSON(make([]byte, 0, indexJSONBytes(&out)))
	if withOutline {
		lastIndex.keep(maxSymbols, out.Files)
	}
	return plugin.ToolResult{OK: true, Output: output}, nil
}

// outlines is shared by every call of the process: see outlineKey for why
// that is safe across workspaces.
var outlines = newOutlineCache(maxOutlineEntries)

// outlineFiles fills in Language of the files and Binary and Symbols of
// the text-sized ones: from the last index for a file it held unchanged,
// from the cache for content already outlined, and by reading the rest.
func outlineFiles(ctx context.Context, ws workspace.Workspace, files []indexedFile, maxSymbols int) error {
	var paths []string
	var at []int
	last := lastIndex.load(maxSymbols)
	// One lock for every lookup: a warm index of 10,000 files is 10,000
	// hits.
	outlines.mu.Lock()
	for i := range files {
		f := &files[i]
		prev := last.find(f.Path)
		if prev != nil {
			f.Language = prev.Language // a function of the path alone
		} else {
			f.Language = outline.Language(f.Path)
		}
		if f.Size > MaxTextFileBytes {
			continue
		}
		// A workspace that lists no hash leaves the file to be read.
		if f.SHA256 == "" {
			paths = append(paths, f.Path)
			at = append(at, i)
			continue
		}
		if prev != nil && prev.outlined && prev.SHA256 == f.SHA256 && prev.Size == f.Size {
			f.Binary, f.Symbols, f.outlined, f.encoded = prev.Binary, prev.Symbols, true, prev.encoded
			continue
		}
		if e, ok := outlines.getLocked(outlineKey{f.SHA256, f.Language, maxSymbols}); ok {
			f.Binary, f.Symbols, f.outlined = e.binary, e.symbols, true
			continue
		}
		paths = append(paths, f.Path)
		at = append(at, i)
	}
	outlines.mu.Unlock()
	var mu sync.Mutex
	return readMany(ctx, ws, paths, func(j int, data []byte) {
		f := &files[at[j]]
		// The hash comes from the bytes outlined, so the two agree even
		// when the file changed after it was listed.
		sum := sha256Hex(data)
		e := outlineEntry{binary: isBinary(data)}
		if !e.binary && maxSymbols > 0 && f.Language != "" {
			e.symbols = outline.Outline(f.Language, data, maxSymbols)
		}
		outlines.put(outlineKey{sum, f.Language, maxSymbols}, e)
		mu.Lock()
		f.SHA256, f.Binary, f.Symbols, f.outlined = sum, e.binary, e.symbols, true
		mu.Unlock()
	}, func(int) {})
}

// listFiles lists the regular files under dir without walking blocked
// folders, which it returns by name. withHashes asks the workspace for each
// file's sha256.
func listFiles(ctx context.Context, ws workspace.Workspace, dir string, limit int, withHashes bool) ([]workspace.FileInfo, []string, bool, error) {
	// Folders count against a workspace's limit too: ask for more entries
	// than files wanted, and stop at limit files.
	entries, truncated, err := ws.List(ctx, dir, workspace.ListOptions{Recursive: true, WithHashes: withHashes, Limit: min(limit*2, 2*maxIndexFiles), SkipDirs: blockedFolders[:]})
	if err != nil {
		return nil, nil, false, err
	}
	// Filtered in place: a listing belongs to its caller.
	files := entries[:0]
	skipped := []string{}
	// Whether the folder of the file before is blocked (the root, "", is
	// not): a listing comes in path order, so its files come folder by
	// folder, and each folder is looked at once rather than with each of
	// its files.
	var lastParent string
	lastBlocked := false
	for _, e := range entries {
		if e.IsDir {
			if b := blockedFolderIn(e.Path); b != "" && blockedFolderIn(parentOf(e.Path)) == "" {
				skipped = append(skipped, e.Path)
			}
			continue
		}
		if parent := parentOf(e.Path); parent != lastParent {
			lastParent, lastBlocked = parent, blockedFolderIn(parent) != ""
		}
		if lastBlocked || blockedFolderIn(e.Path[len(lastParent):]) != "" {
			continue
		}
		if len(files) == limit {
			truncated = true
			break
		}
		files = append(files, e)
	}
	return files, skipped, truncated, nil
}

func parentOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}

// folderArg reads an optional folder field: "" or "." is the root.
func folderArg(in input, name string) (string, *plugin.ToolError) {
	dir, te := in.str(name, false, false)
	if te != nil || dir == "" || dir == "." || dir == "./" {
		return "", te
	}
	return checkPath(name, dir)
}
