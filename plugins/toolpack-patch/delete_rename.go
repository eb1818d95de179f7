package patch

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

var deleteFileTool = tool{name: "coding_agent_delete_file", spec: deleteFileSpec, run: deleteFile}

var renameFileTool = tool{name: "coding_agent_rename_file", spec: renameFileSpec, run: renameFile}

type deleteFileOutput struct {
	Path    string `json:"path"`
	Deleted bool   `json:"deleted"`
	SHA256  string `json:"sha256"`
}

type renameFileOutput struct {
	FromPath string `json:"from_path"`
	ToPath   string `json:"to_path"`
}

func deleteFileSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: "Delete one file of the app. Folders are not deleted: delete their files one by one, so that " +
			"nothing is removed you did not name. Returns the sha256 the file had. Paths under .git, node_modules, " +
			"dist, .vite, .turbo and .cache are refused.",
		InputSchema: schema([]string{"path"}, pathProp("path", "The file to delete")),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["path","deleted","sha256"],"properties":{
  "path":{"type":"string"},"deleted":{"type":"boolean"},"sha256":{"type":"string","description":"Hex sha256 of the content deleted"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func deleteFile(ctx context.Context, _ Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "path")
	if te != nil {
		return failed(te), nil
	}
	p, te := in.pathArg("path")
	if te != nil {
		return failed(te), nil
	}
	fi, err := ws.Stat(ctx, p)
	if err != nil {
		return wsFailed(err, "path", p)
	}
	if fi.IsDir {
		return failed(&plugin.ToolError{Code: CodePathIsDirectory, Field: "path",
			Message: p + " is a folder; delete its files one by one"}), nil
	}
	if te := checkResolved("path", p, fi.Path); te != nil {
		return failed(te), nil
	}
	data, _, err := ws.ReadFile(ctx, p, workspace.ReadOptions{})
	if err != nil {
		return wsFailed(err, "path", p)
	}
	if err := ws.Remove(ctx, p, false); err != nil {
		return wsFailed(err, "path", p)
	}
	return plugin.ToolOK(deleteFileOutput{Path: p, Deleted: true, SHA256: sha256Hex(data)}), nil
}

func renameFileSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: "Move or rename one file of the app from from_path to to_path. Missing folders of to_path are " +
			"created. An existing to_path is refused unless overwrite is true. Both paths follow the path policy: " +
			"nothing under .git, node_modules, dist, .vite, .turbo or .cache.",
		InputSchema: schema([]string{"from_path", "to_path"},
			pathProp("from_path", "The file to move")+","+pathProp("to_path", "Where it goes")+
				`,"overwrite":{"type":"boolean","description":"Replace an existing file at to_path; default false"}`),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["from_path","to_path"],"properties":{
  "from_path":{"type":"string"},"to_path":{"type":"string"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func renameFile(ctx context.Context, _ Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "from_path", "to_path", "overwrite")
	if te != nil {
		return failed(te), nil
	}
	from, te := in.pathArg("from_path")
	if te != nil {
		return failed(te), nil
	}
	to, te := in.pathArg("to_path")
	if te != nil {
		return failed(te), nil
	}
	overwrite, te := in.boolean("overwrite", false)
	if te != nil {
		return failed(te), nil
	}
	if from == to {
		return failed(invalid("to_path", "to_path is the same file as from_path")), nil
	}
	fi, err := ws.Stat(ctx, from)
	if err != nil {
		return wsFailed(err, "from_path", from)
	}
	if fi.IsDir {
		return failed(&plugin.ToolError{Code: CodePathIsDirectory, Field: "from_path", Message: from + " is a folder; move its files one by one"}), nil
	}
	if te := checkResolved("from_path", from, fi.Path); te != nil {
		return failed(te), nil
	}
	switch tfi, err := ws.Stat(ctx, to); {
	case err == nil && tfi.IsDir:
		return failed(&plugin.ToolError{Code: CodePathIsDirectory, Field: "to_path", Message: to + " is a folder; give the file's full new path"}), nil
	case err == nil && !overwrite:
		return failed(&plugin.ToolError{Code: plugin.CodeAlreadyExists, Field: "to_path", Message: to + " exists; set overwrite to true to replace it"}), nil
	case err == nil:
		if te := checkResolved("to_path", to, tfi.Path); te != nil {
			return failed(te), nil
		}
		// Workspaces never rename over a file; the caller asked for the
		// replacement, so the old file goes first.
		if err := ws.Remove(ctx, to, false); err != nil {
			return wsFailed(err, "to_path", to)
		}
	case !plugin.HasCode(err, plugin.CodeNotFound):
		return wsFailed(err, "to_path", to)
	}
	if err := ws.Rename(ctx, from, to); err != nil {
		return wsFailed(err, "to_path", to)
	}
	return plugin.ToolOK(renameFileOutput{FromPath: from, ToPath: to}), nil
}

// wsFailed turns a workspace error into the tool's result: a refusal as a
// failed result, a broken workspace as an error.
func wsFailed(err error, field, p string) (plugin.ToolResult, error) {
	te, err := workspaceFailure(err, field, p)
	if err != nil {
		return plugin.ToolResult{}, err
	}
	return failed(te), nil
}
