package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// Bounds of coding_agent_run_command. The default timeout fits a typical
// `npm run build` of a small app. The host's tool_timeout_s (120 s unless an
// operator raises it for this toolpack) ends the call in any case, so a
// longer timeout_s needs that raised too.
const (
	defaultCommandTimeoutS = 120
	maxCommandTimeoutS     = 1800
	// DefaultCommandOutputBytes caps stdout and stderr together per call:
	// enough for a compiler's errors, small enough for a model's context.
	DefaultCommandOutputBytes = 64 << 10
	maxCommandBytes           = 16 << 10
)

var runCommandTool = tool{name: "coding_agent_run_command", spec: runCommandSpec, run: runCommand}

type runCommandOutput struct {
	Command         string `json:"command"`
	Cwd             string `json:"cwd"`
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal,omitempty"`
	TimedOut        bool   `json:"timed_out"`
	OutputTruncated bool   `json:"output_truncated"`
	DurationMS      int64  `json:"duration_ms"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
}

func runCommandSpec(cfg Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: fmt.Sprintf("Run a shell command in the app's sandbox, from the app's root or cwd: a build, "+
			"a type check, tests (for example `npm run build` or `npx tsc --noEmit`). The command runs under sh -c "+
			"with a scrubbed environment. Returns exit_code (non-zero is a result, not a failure), stdout and stderr "+
			"(together at most %s; output_truncated says when more was cut), timed_out and duration_ms. Default "+
			"timeout %d s, at most %d s. The user may be asked to allow each command.",
			byteSize(cfg.CommandOutputBytes), defaultCommandTimeoutS, maxCommandTimeoutS),
		InputSchema: schema([]string{"command"},
			fmt.Sprintf(`"command":{"type":"string","minLength":1,"maxLength":%d,"description":"The shell command line"},`, maxCommandBytes)+
				`"cwd":{"type":"string","maxLength":1024,"description":"Folder to run in, relative to the app's root; default the root"},`+
				fmt.Sprintf(`"timeout_s":{"type":"integer","minimum":1,"maximum":%d,"description":"Seconds before the command is killed; default %d"}`, maxCommandTimeoutS, defaultCommandTimeoutS)),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,
  "required":["command","cwd","exit_code","timed_out","output_truncated","duration_ms","stdout","stderr"],"properties":{
  "command":{"type":"string"},"cwd":{"type":"string"},"exit_code":{"type":"integer"},"signal":{"type":"string"},
  "timed_out":{"type":"boolean"},"output_truncated":{"type":"boolean"},"duration_ms":{"type":"integer","minimum":0},
  "stdout":{"type":"string"},"stderr":{"type":"string"}}}`),
		// Commands can do anything the sandbox allows: the user decides,
		// unless an operator sets this tool to allow in the toolpack's config.
		DefaultPermission: plugin.PermissionAsk,
	}
}

func runCommand(ctx context.Context, cfg Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "command", "cwd", "timeout_s")
	if te != nil {
		return failed(te), nil
	}
	command, te := in.str("command", true, true)
	if te != nil {
		return failed(te), nil
	}
	if len(command) > maxCommandBytes {
		return failed(invalid("command", "command is %d bytes; the limit is %d", len(command), maxCommandBytes)), nil
	}
	if strings.ContainsRune(command, 0) {
		return failed(invalid("command", "command contains a NUL byte")), nil
	}
	cwd, te := in.str("cwd", false, false)
	if te != nil {
		return failed(te), nil
	}
	if cwd == "." || cwd == "./" {
		cwd = ""
	}
	if cwd != "" {
		if cwd, te = checkPath("cwd", cwd); te != nil {
			return failed(te), nil
		}
		fi, err := ws.Stat(ctx, cwd)
		if err != nil {
			return wsFailed(err, "cwd", cwd)
		}
		if !fi.IsDir {
			return failed(invalid("cwd", "cwd %s is a file, not a folder", cwd)), nil
		}
	}
	timeoutS, te := in.intIn("timeout_s", defaultCommandTimeoutS, 1, maxCommandTimeoutS)
	if te != nil {
		return failed(te), nil
	}
	res, err := execCommand(ctx, ws, command, cwd, time.Duration(timeoutS)*time.Second, cfg.CommandOutputBytes)
	if err != nil {
		return wsFailed(err, "command", command)
	}
	return plugin.ToolOK(res), nil
}

// execCommand runs command under sh -c in the workspace.
func execCommand(ctx context.Context, ws workspace.Workspace, command, cwd string, timeout time.Duration, outputLimit int) (runCommandOutput, error) {
	r, err := ws.Exec(ctx, workspace.ExecRequest{
		Argv: []string{"sh", "-c", command}, Dir: cwd, Timeout: timeout, OutputLimit: int64(outputLimit),
	})
	if err != nil {
		return runCommandOutput{}, err
	}
	return runCommandOutput{
		Command: command, Cwd: cwd, ExitCode: r.ExitCode, Signal: r.Signal, TimedOut: r.TimedOut,
		OutputTruncated: r.OutputTruncated, DurationMS: r.Duration.Milliseconds(),
		Stdout: validText(r.Stdout), Stderr: validText(r.Stderr),
	}, nil
}

// validText makes command output safe to put in JSON for a model: invalid
// UTF-8 (a cut multi-byte character, binary output) becomes U+FFFD.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
