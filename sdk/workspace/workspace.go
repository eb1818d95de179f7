// Package workspace defines the file and process API over one working copy.
// Sandbox plugins implement it for their sandboxes; the host lends one to an
// engine or toolpack for the duration of a run or call. Every path is relative
// to the workspace root with forward slashes; implementations refuse paths
// that would leave the root (plugin.CodePathDenied).
package workspace

import (
	"context"
	"io"
	"time"
)

// FileInfo describes one file or folder.
type FileInfo struct {
	Path string
	Size int64
	// SHA256 is the hex digest of the content; empty for folders and when
	// hashes were not asked for.
	SHA256  string
	IsDir   bool
	Mode    uint32
	ModTime time.Time
}

// ReadOptions selects part of a file.
type ReadOptions struct {
	// StartLine and EndLine are a 1-based inclusive line range; 0 means from
	// the start / to the end.
	StartLine, EndLine int
}

// ListOptions shapes a listing.
type ListOptions struct {
	Recursive  bool
	WithHashes bool
	// Limit caps the entries returned; 0 means the implementation's default.
	Limit int
	// SkipDirs are folder names (compared ignoring case, at any depth) whose
	// contents a recursive listing leaves out, such as node_modules: the
	// folder itself is listed, so a caller still sees that it exists.
	SkipDirs []string
}

// ExecRequest describes one command.
type ExecRequest struct {
	// Argv[0] is looked up on the sandbox's PATH.
	Argv []string
	// Dir is the working folder relative to the root; empty means the root.
	Dir string
	// Env adds KEY=VALUE pairs to the sandbox's scrubbed environment.
	Env     []string
	Timeout time.Duration
	// OutputLimit caps stdout+stderr together; 0 means the default.
	OutputLimit int64
	Stdin       []byte
	// Stdout and Stderr, when set, receive output as it is produced (in
	// addition to the capped copy in ExecResult).
	Stdout, Stderr io.Writer
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode        int
	TimedOut        bool
	OutputTruncated bool
	// Signal names the signal that ended the process, if any.
	Signal   string
	Duration time.Duration
	Stdout   []byte
	Stderr   []byte
}

// Workspace is the file and process API over one working copy.
type Workspace interface {
	ReadFile(ctx context.Context, path string, opts ReadOptions) ([]byte, FileInfo, error)
	// WriteFile creates or replaces a file, creating parent folders.
	WriteFile(ctx context.Context, path string, data []byte, mode uint32) (FileInfo, error)
	// List returns the entries under path ("" for the root) and whether the
	// listing was truncated by the limit.
	List(ctx context.Context, path string, opts ListOptions) ([]FileInfo, bool, error)
	Stat(ctx context.Context, path string) (FileInfo, error)
	Remove(ctx context.Context, path string, recursive bool) error
	Rename(ctx context.Context, from, to string) error
	// Exec runs a command. A non-zero exit is a result, not an error.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// Resolver finds the workspace a request names. Sandbox plugins resolve
// sandbox ids; the host resolves the ids it lends to engines and toolpacks.
type Resolver func(ctx context.Context, workspaceID string) (Workspace, error)
