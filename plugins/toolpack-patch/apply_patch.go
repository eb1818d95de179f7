package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/plugins/toolpack-patch/internal/diffpatch"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/workspace"
)

// MaxPatchBytes bounds one patch: far above any hand-made change, well under
// what a tool input may carry.
const MaxPatchBytes = 2 << 20

// Patch failure codes (from the diffpatch package; repeated here so the
// pack's codes are listed in one place).
const (
	CodePatchParseFailed     = diffpatch.CodeParseFailed
	CodePatchContextMismatch = diffpatch.CodeContextMismatch
)

var applyPatchTool = tool{name: "coding_agent_apply_patch", spec: applyPatchSpec, run: applyPatch}

type patchedFile struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	// Op is modify, create, delete or rename.
	Op string `json:"op"`
	// SHA256 is the file's new revision token ("" once deleted).
	SHA256       string `json:"sha256"`
	LinesAdded   int    `json:"lines_added"`
	LinesRemoved int    `json:"lines_removed"`
}

type applyPatchOutput struct {
	Applied          bool             `json:"applied"`
	Format           string           `json:"format"`
	Files            []patchedFile    `json:"files"`
	VerificationPlan []verifyStep     `json:"verification_plan"`
	Verification     *verificationRun `json:"verification,omitempty"`
}

// patchFailure is one entry of a failed patch's failures[].
type patchFailure struct {
	File    string `json:"file"`
	Hunk    int    `json:"hunk"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
}

// refreshWindow is a line window the model should re-read before retrying.
type refreshWindow struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

// patchDiagnostics go on the failed result (and so on the run's tool.failed
// event): the host and frontends read these keys.
type patchDiagnostics struct {
	PatchCode          string          `json:"patch_code"`
	PatchFailureCount  int             `json:"patch_failure_count"`
	Failures           []patchFailure  `json:"failures"`
	RecommendedRefresh []refreshWindow `json:"recommended_refresh"`
	Summary            string          `json:"summary"`
}

func applyPatchSpec(Config) plugin.ToolSpec {
	return plugin.ToolSpec{
		Description: "Change the app's files with a patch: a unified diff (as git diff prints it: ---/+++ headers, " +
			"@@ hunks with 3 lines of context) or the *** Begin Patch format (*** Add File / *** Update File / " +
			"*** Delete File / *** Move to, with @@ context chunks). Hunks are found by their context lines, so line " +
			"numbers may be stale and indentation drift is tolerated; context that is missing or matches in more than " +
			"one place is refused. All files change or none does. On failure, failures[] names each file and hunk " +
			"with a code (PATCH_PARSE_FAILED, PATCH_CONTEXT_MISMATCH, PATCH_CONTEXT_AMBIGUOUS, ...) and " +
			"recommended_refresh gives the line windows to re-read with coding_agent_read_file_range before you " +
			"retry. On success: each changed file with its new sha256, and a verification_plan of commands that " +
			"check the change. Paths follow the path policy: nothing under .git, node_modules, dist, .vite, .turbo " +
			"or .cache, no binary files.",
		InputSchema: schema([]string{"patch"},
			fmt.Sprintf(`"patch":{"type":"string","minLength":1,"maxLength":%d,"description":"The patch text"}`, MaxPatchBytes)),
		OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["applied","format","files","verification_plan"],
  "properties":{"applied":{"type":"boolean"},"format":{"type":"string","enum":["unified","begin_patch"]},
  "files":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["path","op","sha256","lines_added","lines_removed"],
    "properties":{"path":{"type":"string"},"old_path":{"type":"string"},"op":{"type":"string","enum":["modify","create","delete","rename"]},
    "sha256":{"type":"string"},"lines_added":{"type":"integer"},"lines_removed":{"type":"integer"}}}},
  "verification_plan":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["command","reason"],
    "properties":{"command":{"type":"string"},"reason":{"type":"string"}}}},
  "verification":{"type":"object"}}}`),
		DefaultPermission: plugin.PermissionAllow,
	}
}

func applyPatch(ctx context.Context, cfg Config, raw json.RawMessage, ws workspace.Workspace) (plugin.ToolResult, error) {
	in, te := parseInput(raw, "patch")
	if te != nil {
		return failed(te), nil
	}
	text, te := in.str("patch", true, true)
	if te != nil {
		return failed(te), nil
	}
	if len(text) > MaxPatchBytes {
		return failed(invalid("patch", "the patch is %d bytes; the limit is %d", len(text), MaxPatchBytes)), nil
	}
	p, err := diffpatch.Parse(text)
	if err != nil {
		var pe *diffpatch.ParseError
		if !errors.As(err, &pe) {
			return plugin.ToolResult{}, err
		}
		return patchFailed(CodePatchParseFailed, []patchFailure{{File: pe.File, Code: CodePatchParseFailed, Message: pe.Message, Line: pe.Line}}, nil), nil
	}
	// The policy applies to every path the patch names, before any read.
	for i := range p.Files {
		f := &p.Files[i]
		for _, pp := range []*string{&f.OldPath, &f.NewPath} {
			if *pp == "" {
				continue
			}
			clean, te := checkPath("patch", *pp)
			if te != nil {
				te.Message = "the patch touches a path the policy refuses: " + te.Message
				return failed(te), nil
			}
			*pp = clean
		}
	}

	originals := map[string]original{}
	read := func(path string) ([]byte, bool, error) {
		data, info, te, err := readTextInfo(ctx, ws, "patch", path)
		if err != nil {
			return nil, false, err
		}
		if te != nil {
			if te.Code == CodeFileNotFound {
				originals[path] = original{}
				return nil, false, nil
			}
			return nil, false, policyError{te}
		}
		originals[path] = original{exists: true, data: data, mode: info.Mode}
		return data, true, nil
	}
	changes, err := diffpatch.Apply(p, read)
	if err != nil {
		var pol policyError
		if errors.As(err, &pol) {
			return failed(pol.te), nil
		}
		var ae *diffpatch.ApplyError
		if !errors.As(err, &ae) {
			return plugin.ToolResult{}, err
		}
		return applyFailed(ae), nil
	}
	for _, c := range changes {
		if len(c.Content) > MaxWriteBytes {
			return failed(&plugin.ToolError{Code: CodePolicyViolation, Field: "patch",
				Message: fmt.Sprintf("the patch would make %s %d bytes; a file may be at most %d bytes (1 MiB)", c.Path, len(c.Content), MaxWriteBytes)}), nil
		}
	}
	if err := writeAll(ctx, ws, changes, originals); err != nil {
		return wsFailed(err, "patch", "the patched files")
	}
	out := applyPatchOutput{Applied: true, Format: p.Format, Files: summarise(p, changes)}
	out.VerificationPlan = verificationPlan(ctx, ws, out.Files)
	if *cfg.AutoVerifyPatch && len(out.VerificationPlan) > 0 {
		out.Verification = runVerification(ctx, ws, out.VerificationPlan, cfg.CommandOutputBytes)
	}
	return plugin.ToolOK(out), nil
}

// policyError carries a path-policy refusal out of diffpatch's read callback.
type policyError struct{ te *plugin.ToolError }

func (e policyError) Error() string { return e.te.Message }

// applyFailed turns diffpatch's report into the tool's structured failure.
func applyFailed(ae *diffpatch.ApplyError) plugin.ToolResult {
	var fails []patchFailure
	var refresh []refreshWindow
	for _, f := range ae.Failures {
		fails = append(fails, patchFailure{File: f.File, Hunk: f.Hunk, Code: f.Code, Message: f.Message})
		if f.Window != nil {
			refresh = append(refresh, refreshWindow{Path: f.File, StartLine: f.Window.Start, EndLine: f.Window.End})
		}
	}
	code := CodePatchContextMismatch
	if len(fails) > 0 {
		code = fails[0].Code
	}
	return patchFailed(code, fails, refresh)
}

func patchFailed(code string, fails []patchFailure, refresh []refreshWindow) plugin.ToolResult {
	if refresh == nil {
		refresh = []refreshWindow{}
	}
	summary := fmt.Sprintf("the patch was not applied (nothing changed): %d failure(s)", len(fails))
	if len(fails) > 0 {
		f := fails[0]
		where := f.File
		if f.Hunk > 0 {
			where += fmt.Sprintf(" hunk %d", f.Hunk)
		}
		if where != "" {
			where += ": "
		}
		summary += "; first: " + where + f.Message
	}
	if len(refresh) > 0 {
		summary += "; re-read the recommended windows and retry"
	}
	diag, _ := json.Marshal(patchDiagnostics{PatchCode: code, PatchFailureCount: len(fails), Failures: fails, RecommendedRefresh: refresh, Summary: summary})
	return plugin.ToolResult{Error: &plugin.ToolError{Code: code, Message: summary, Field: "patch", Diagnostics: diag}}
}
