package patch

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/agenthost/agenthost/sdk/workspace"
)

// verifyTimeout bounds each verification command run after a patch.
const verifyTimeout = 120 * time.Second

// verifyStep is one command that checks a change.
type verifyStep struct {
	Command string `json:"command"`
	Reason  string `json:"reason"`
}

// verificationRun is what running the plan showed.
type verificationRun struct {
	Passed bool               `json:"passed"`
	Steps  []runCommandOutput `json:"steps"`
}

// verificationPlan proposes commands that check the changed files, from what
// the workspace holds: the app's own scripts first (they know its setup),
// then the language's compiler. It never runs anything.
func verificationPlan(ctx context.Context, ws workspace.Workspace, files []patchedFile) []verifyStep {
	exts := map[string]bool{}
	var pyFiles []string
	for _, f := range files {
		if f.Op == "delete" {
			continue
		}
		ext := strings.ToLower(path.Ext(f.Path))
		exts[ext] = true
		if ext == ".py" {
			pyFiles = append(pyFiles, shellQuote(f.Path))
		}
	}
	plan := []verifyStep{}
	exists := func(p string) bool { _, err := ws.Stat(ctx, p); return err == nil }
	web := exts[".ts"] || exts[".tsx"] || exts[".js"] || exts[".jsx"] || exts[".mts"] || exts[".cts"] || exts[".css"] || exts[".html"] || exts[".json"] || exts[".vue"] || exts[".svelte"]
	if web && exists("package.json") {
		scripts := packageScripts(ctx, ws)
		switch {
		case scripts["typecheck"]:
			plan = append(plan, verifyStep{"npm run typecheck", "the app's own type check"})
		case (exts[".ts"] || exts[".tsx"]) && exists("tsconfig.json"):
			plan = append(plan, verifyStep{"npx --no-install tsc --noEmit", "type-check the TypeScript that changed"})
		}
		if scripts["lint"] {
			plan = append(plan, verifyStep{"npm run lint", "the app's own linter"})
		}
		if scripts["build"] {
			plan = append(plan, verifyStep{"npm run build", "the app still builds"})
		}
	}
	if exts[".go"] && exists("go.mod") {
		plan = append(plan, verifyStep{"go build ./... && go vet ./...", "the Go code compiles and passes vet"})
	}
	if len(pyFiles) > 0 {
		plan = append(plan, verifyStep{"python3 -m py_compile " + strings.Join(pyFiles, " "), "the changed Python files parse"})
	}
	return plan
}

// packageScripts returns the script names of the app's package.json.
func packageScripts(ctx context.Context, ws workspace.Workspace) map[string]bool {
	data, _, err := ws.ReadFile(ctx, "package.json", workspace.ReadOptions{})
	if err != nil {
		return nil
	}
	var pkg struct {
		Scripts map[string]json.RawMessage `json:"scripts"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return nil
	}
	out := map[string]bool{}
	for k := range pkg.Scripts {
		out[k] = true
	}
	return out
}

// runVerification runs the plan in order and stops at the first failing
// step: later steps usually fail for the same reason and only cost time.
func runVerification(ctx context.Context, ws workspace.Workspace, plan []verifyStep, outputLimit int) *verificationRun {
	run := &verificationRun{Passed: true, Steps: []runCommandOutput{}}
	for _, s := range plan {
		out, err := execCommand(ctx, ws, s.Command, "", verifyTimeout, outputLimit)
		if err != nil {
			out = runCommandOutput{Command: s.Command, ExitCode: -1, Stderr: "could not run: " + err.Error()}
		}
		run.Steps = append(run.Steps, out)
		if err != nil || out.ExitCode != 0 || out.TimedOut {
			run.Passed = false
			break
		}
	}
	return run
}

// shellQuote quotes s for sh -c.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
