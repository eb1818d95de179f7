package patch

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/agenthost/agenthost/sdk/plugintest"
	"github.com/agenthost/agenthost/sdk/toolpack"
	"github.com/agenthost/agenthost/sdk/toolpacktest"
	"github.com/agenthost/agenthost/sdk/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConformance(t *testing.T) {
	// readBack reads a file through the workspace interface the kit hands
	// to Check.
	readBack := func(t *testing.T, ws workspace.Workspace, p string) string {
		data, _, err := ws.ReadFile(context.Background(), p, workspace.ReadOptions{})
		require.NoError(t, err)
		return string(data)
	}
	big := strings.Repeat(strings.Repeat("z", 63)+"\n", 5000) // 320,000 bytes, over the read budget
	tooBig := jsonInput(t, map[string]any{"path": "a.txt", "content": strings.Repeat("x", MaxWriteBytes+1)})
	in := func(s string) json.RawMessage { return json.RawMessage(s) }

	toolpacktest.Run(t, func(t *testing.T, ws workspace.Resolver) *toolpack.Client {
		return plugintest.Toolpack(t, New(), nil, ws)
	}, []toolpacktest.Case{
		{Name: "read whole", Tool: readTool, Files: app, Input: in(`{"path":"src/main.ts"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				out := readOutput(t, res)
				assert.Equal(t, app["src/main.ts"], out.Content)
				assert.Equal(t, 4, out.TotalLines)
				assert.Equal(t, sha(app["src/main.ts"]), out.SHA256)
			}},
		{Name: "read range", Tool: readTool, Files: app, Input: in(`{"path":"src/main.ts","start_line":2,"end_line":3}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				out := readOutput(t, res)
				assert.Equal(t, "two\nthree\n", out.Content)
				assert.Equal(t, []int{2, 3, 4}, []int{out.StartLine, out.EndLine, out.TotalLines})
			}},
		{Name: "read over budget", Tool: readTool, Files: map[string]string{"big.txt": big}, Input: in(`{"path":"big.txt"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				out := readOutput(t, res)
				assert.True(t, out.Truncated)
				assert.Equal(t, DefaultReadBudget/64, out.EndLine)
			}},
		{Name: "read missing", Tool: readTool, Files: app, Input: in(`{"path":"nope.ts"}`), WantCode: CodeFileNotFound, WantField: "path"},
		{Name: "read folder", Tool: readTool, Files: app, Input: in(`{"path":"src"}`), WantCode: CodePathIsDirectory, WantField: "path"},
		{Name: "read escape", Tool: readTool, Files: app, Input: in(`{"path":"../secret"}`), WantCode: CodePolicyViolation, WantField: "path"},
		{Name: "read blocked", Tool: readTool, Files: map[string]string{".git/config": "x"}, Input: in(`{"path":".git/config"}`), WantCode: CodePolicyViolation, WantField: "path"},
		{Name: "read bad range", Tool: readTool, Files: app, Input: in(`{"path":"src/main.ts","start_line":3,"end_line":1}`), WantCode: CodeInputInvalid, WantField: "end_line"},
		{Name: "write new", Tool: writeTool, Files: app, Input: in(`{"path":"src/new.ts","content":"x"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, ws workspace.Workspace) {
				assert.Equal(t, "x", readBack(t, ws, "src/new.ts"))
				assert.Contains(t, string(res.Output), `"created":true`)
			}},
		{Name: "write replace", Tool: writeTool, Files: app, Input: in(`{"path":"README.md","content":"# bye\n"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, ws workspace.Workspace) {
				assert.Equal(t, "# bye\n", readBack(t, ws, "README.md"))
				assert.Contains(t, string(res.Output), `"created":false`)
			}},
		{Name: "write blocked", Tool: writeTool, Files: app, Input: in(`{"path":"node_modules/x.js","content":"x"}`), WantCode: CodePolicyViolation, WantField: "path"},
		{Name: "write too large", Tool: writeTool, Files: app, Input: in(tooBig), WantCode: CodePolicyViolation, WantField: "content"},
		{Name: "write onto folder", Tool: writeTool, Files: app, Input: in(`{"path":"src","content":"x"}`), WantCode: CodePathIsDirectory, WantField: "path"},
		{Name: "write without content", Tool: writeTool, Files: app, Input: in(`{"path":"a.txt"}`), WantCode: CodeInputInvalid, WantField: "content"},
		// The workspace's own refusal, passed through with its code.
		{Name: "write under a file", Tool: writeTool, Files: app, Input: in(`{"path":"README.md/x","content":"x"}`), WantCode: plugin.CodeAlreadyExists, WantField: "path"},
		{Name: "delete", Tool: "coding_agent_delete_file", Files: app, Input: in(`{"path":"README.md"}`), WantOK: true,
			Check: func(t *testing.T, _ plugin.ToolResult, ws workspace.Workspace) {
				_, err := ws.Stat(context.Background(), "README.md")
				assert.True(t, plugin.HasCode(err, plugin.CodeNotFound), "%v", err)
			}},
		{Name: "delete missing", Tool: "coding_agent_delete_file", Files: app, Input: in(`{"path":"nope"}`), WantCode: CodeFileNotFound, WantField: "path"},
		{Name: "rename", Tool: "coding_agent_rename_file", Files: app, Input: in(`{"from_path":"README.md","to_path":"docs/README.md"}`), WantOK: true,
			Check: func(t *testing.T, _ plugin.ToolResult, ws workspace.Workspace) {
				assert.Equal(t, app["README.md"], readBack(t, ws, "docs/README.md"))
			}},
		{Name: "rename onto blocked", Tool: "coding_agent_rename_file", Files: app, Input: in(`{"from_path":"README.md","to_path":"dist/x"}`), WantCode: CodePolicyViolation, WantField: "to_path"},
		{Name: "run command", Tool: "coding_agent_run_command", Files: app, Input: in(`{"command":"npm run build","cwd":"src","timeout_s":30}`), WantOK: true,
			Exec: func(_ context.Context, req workspace.ExecRequest) (workspace.ExecResult, error) {
				if strings.Join(req.Argv, " ") != "sh -c npm run build" || req.Dir != "src" || req.Timeout != 30*time.Second {
					return workspace.ExecResult{}, plugin.Errorf(plugin.CodeInvalidArgument, "", "unexpected request %+v", req)
				}
				// As every workspace does, stream the output as well.
				if req.Stdout != nil {
					_, _ = req.Stdout.Write([]byte("built\n"))
				}
				if req.Stderr != nil {
					_, _ = req.Stderr.Write([]byte("warn\n"))
				}
				return workspace.ExecResult{ExitCode: 2, Stdout: []byte("built\n"), Stderr: []byte("warn\n")}, nil
			},
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				var out runCommandOutput
				require.NoError(t, json.Unmarshal(res.Output, &out))
				assert.Equal(t, 2, out.ExitCode)
				assert.Equal(t, "built\n", out.Stdout)
				assert.Equal(t, "warn\n", out.Stderr)
			}},
		{Name: "read file range", Tool: "coding_agent_read_file_range", Files: app, Input: in(`{"path":"src/main.ts","start_line":2,"context_lines":1}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				assert.Contains(t, string(res.Output), `"start_line":1`)
				assert.Contains(t, string(res.Output), `"end_line":3`)
			}},
		{Name: "read range past the end", Tool: "coding_agent_read_file_range", Files: app, Input: in(`{"path":"src/main.ts","start_line":99}`), WantCode: CodeInputInvalid, WantField: "start_line"},
		{Name: "search", Tool: "coding_agent_search", Files: app, Input: in(`{"query":"two"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				assert.Contains(t, string(res.Output), `{"path":"src/main.ts","line":2,"column":1,"text":"two"}`)
			}},
		{Name: "search bad regexp", Tool: "coding_agent_search", Files: app, Input: in(`{"query":"[","regex":true}`), WantCode: CodeInputInvalid, WantField: "query"},
		{Name: "index", Tool: "coding_agent_workspace_index", Files: app, Input: in(`{}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				assert.Contains(t, string(res.Output), `"path":"src/main.ts"`)
			}},
		{Name: "index blocked", Tool: "coding_agent_workspace_index", Files: app, Input: in(`{"path":".git"}`), WantCode: CodePolicyViolation, WantField: "path"},
		{Name: "collect context", Tool: "coding_agent_collect_context", Files: app, Input: in(`{"query":"three"}`), WantOK: true,
			Check: func(t *testing.T, res plugin.ToolResult, _ workspace.Workspace) {
				assert.Contains(t, string(res.Output), `"path":"src/main.ts"`)
			}},
		{Name: "apply patch", Tool: "coding_agent_apply_patch", Files: app, Input: in(`{"patch":"--- a/src/main.ts\n+++ b/src/main.ts\n@@ -2 +2 @@\n-two\n+TWO\n"}`), WantOK: true,
			Check: func(t *testing.T, _ plugin.ToolResult, ws workspace.Workspace) {
				assert.Contains(t, readBack(t, ws, "src/main.ts"), "TWO\n")
			}},
		{Name: "apply patch mismatch", Tool: "coding_agent_apply_patch", Files: app, Input: in(`{"patch":"--- a/src/main.ts\n+++ b/src/main.ts\n@@ -2 +2 @@\n-zwei\n+TWO\n"}`), WantCode: CodePatchContextMismatch, WantField: "patch"},
		{Name: "run command where it cannot", Tool: "coding_agent_run_command", Files: app, Input: in(`{"command":"ls"}`), WantCode: plugin.CodeUnsupported, WantField: "command"},
	})
}

func TestInfoAndTools(t *testing.T) {
	p := New()
	info := p.Info()
	assert.Equal(t, "patch", info.Name)
	assert.Equal(t, plugin.KindToolpack, info.Kind)
	assert.Equal(t, "0.1.0", info.Version)
	assert.Equal(t, plugin.APIVersion, info.APIVersion)

	specs, err := p.Tools(t.Context())
	require.NoError(t, err)
	// Each tool's default permission and required inputs, in registry order.
	want := []struct {
		name     string
		perm     plugin.Permission
		required []string
	}{
		{readTool, plugin.PermissionAllow, []string{"path"}},
		{"coding_agent_read_file_range", plugin.PermissionAllow, []string{"path", "start_line"}},
		{"coding_agent_search", plugin.PermissionAllow, []string{"query"}},
		{"coding_agent_workspace_index", plugin.PermissionAllow, []string{}},
		{"coding_agent_collect_context", plugin.PermissionAllow, []string{"query"}},
		{"coding_agent_apply_patch", plugin.PermissionAllow, []string{"patch"}},
		{writeTool, plugin.PermissionAllow, []string{"path", "content"}},
		{"coding_agent_delete_file", plugin.PermissionAllow, []string{"path"}},
		{"coding_agent_rename_file", plugin.PermissionAllow, []string{"from_path", "to_path"}},
		{"coding_agent_run_command", plugin.PermissionAsk, []string{"command"}},
	}
	names, wantNames := []string{}, []string{}
	for _, w := range want {
		wantNames = append(wantNames, w.name)
	}
	for i, s := range specs {
		names = append(names, s.Name)
		if i >= len(want) {
			continue
		}
		assert.Equal(t, want[i].perm, s.DefaultPermission, s.Name)
		assert.NotEmpty(t, s.Description, s.Name)
		var in struct {
			Schema     string                     `json:"$schema"`
			Type       string                     `json:"type"`
			Additional *bool                      `json:"additionalProperties"`
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(s.InputSchema, &in), s.Name)
		assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", in.Schema, s.Name)
		assert.Equal(t, "object", in.Type, s.Name)
		if assert.NotNil(t, in.Additional, s.Name) {
			assert.False(t, *in.Additional, "%s: additionalProperties must be false", s.Name)
		}
		assert.Equal(t, want[i].required, in.Required, s.Name)
		for _, r := range in.Required {
			assert.Contains(t, in.Properties, r, s.Name)
		}
		assert.True(t, json.Valid(s.OutputSchema), s.Name)
	}
	assert.Equal(t, wantNames, names)
}

func TestUnknownTool(t *testing.T) {
	requireFailure(t, call(t, untouchable(t), "coding_agent_nope", `{}`), toolpack.CodeUnknownTool, "tool")
}

func TestCancelledCallIsAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := New().Call(ctx, toolpack.Call{Tool: readTool, Input: json.RawMessage(`{"path":"a"}`)}, untouchable(t))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestPanicIsAnErrorNotACrash(t *testing.T) {
	ws := newFake(nil)
	ws.ReadFileF = func(context.Context, string, workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
		panic("boom")
	}
	_, err := New().Call(t.Context(), toolpack.Call{Tool: readTool, Input: json.RawMessage(`{"path":"a"}`)}, ws)
	assert.ErrorContains(t, err, "boom")
}

func TestConfigure(t *testing.T) {
	cases := []struct {
		config string
		budget int
		err    bool
	}{
		{config: ``, budget: DefaultReadBudget},
		{config: `{}`, budget: DefaultReadBudget},
		{config: `null`, budget: DefaultReadBudget},
		{config: `{"read_budget_bytes":0}`, budget: DefaultReadBudget},
		{config: `{"read_budget_bytes":4096}`, budget: 4096},
		{config: `{"read_budget_bytes":100}`, err: true},
		{config: `{"read_budget_bytes":-1}`, err: true},
		{config: `{"read_budget_bytes":1073741824}`, err: true},
		{config: `{"read_budget_bytes":"1k"}`, err: true},
		{config: `{"read_budget":4096}`, err: true},
	}
	for _, tc := range cases {
		t.Run(tc.config, func(t *testing.T) {
			p := New()
			err := p.Configure(t.Context(), json.RawMessage(tc.config))
			if tc.err {
				assert.True(t, plugin.HasCode(err, plugin.CodeInvalidArgument), "want INVALID_ARGUMENT, got %v", err)
				assert.Equal(t, DefaultReadBudget, p.config().ReadBudgetBytes, "a refused config changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.budget, p.config().ReadBudgetBytes)
		})
	}
}

// TestWorkspaceErrors: refusals the workspace answers with a code become
// tool failures; anything else is the call's error.
func TestWorkspaceErrors(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		code  string // tool failure code, or "" for a Go error
		field string
	}{
		{name: "not found", err: plugin.Errorf(plugin.CodeNotFound, "x", "gone"), code: CodeFileNotFound, field: "path"},
		{name: "path denied", err: plugin.Errorf(plugin.CodePathDenied, "x", "symlink out"), code: CodePolicyViolation, field: "path"},
		{name: "is a folder", err: plugin.Errorf(plugin.CodeIsDirectory, "x", "folder"), code: CodePathIsDirectory, field: "path"},
		{name: "too large", err: plugin.Errorf(plugin.CodeTooLarge, "x", "quota"), code: plugin.CodeTooLarge, field: "path"},
		{name: "unavailable", err: plugin.Errorf(plugin.CodeUnavailable, "", "sandbox stopped")},
		{name: "transport", err: errors.New("connection reset")},
		{name: "cancelled", err: context.Canceled},
	}
	for _, tc := range cases {
		for _, tool := range []string{readTool, writeTool} {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				ws := newFake(app)
				ws.ReadFileF = func(context.Context, string, workspace.ReadOptions) ([]byte, workspace.FileInfo, error) {
					return nil, workspace.FileInfo{}, tc.err
				}
				ws.WriteFileF = func(context.Context, string, []byte, uint32) (workspace.FileInfo, error) {
					return workspace.FileInfo{}, tc.err
				}
				input := `{"path":"src/main.ts"}`
				if tool == writeTool {
					input = `{"path":"src/main.ts","content":"x"}`
				}
				res, err := New().Call(t.Context(), toolpack.Call{Tool: tool, Input: json.RawMessage(input)}, ws)
				if tc.code == "" {
					require.Error(t, err)
					assert.ErrorIs(t, err, tc.err, "the workspace's error stays in the chain")
					return
				}
				require.NoError(t, err)
				requireFailure(t, res, tc.code, tc.field)
			})
		}
	}
}

// refusedPaths break the path policy; each is refused by both tools with
// CodePolicyViolation on field "path" before the workspace is reached.
var refusedPaths = []string{
	"/etc/passwd", "/", "../x", "..", "a/../../x", "a/..", "a/../b", "./../x",
	`a\b`, `..\x`, "x\x00y", "a\nb", "a\tb", "a\x7fb", ".", "./", "./.",
	".git", ".git/config", "src/.git/HEAD", ".GIT/hooks/pre-commit", ".git/",
	"node_modules/a.js", "src/node_modules/a.js", "Node_Modules/x",
	"dist", "dist/app.js", "packages/web/dist/x.js", ".vite/deps/x", ".turbo/z", ".cache/y",
	strings.Repeat("a/", 513), strings.Repeat("n", 256) + ".ts",
}

func TestPathPolicy(t *testing.T) {
	for _, p := range refusedPaths {
		for _, tool := range []string{readTool, writeTool} {
			t.Run(tool+"/"+strings.ToValidUTF8(p, "?"), func(t *testing.T) {
				input := map[string]any{"path": p}
				if tool == writeTool {
					input["content"] = "x"
				}
				requireFailure(t, call(t, untouchable(t), tool, jsonInput(t, input)), CodePolicyViolation, "path")
			})
		}
	}
	accepted := map[string]string{
		"src/distance.ts": "src/distance.ts", "my.git.txt": "my.git.txt", "a/./b.ts": "a/b.ts",
		"dist.config.js": "dist.config.js", ".gitignore": ".gitignore", "src/cache/x": "src/cache/x",
		".github/workflows/ci.yml": ".github/workflows/ci.yml", "a//b/": "a/b", "src/.env": "src/.env",
		strings.Repeat("n", 255): strings.Repeat("n", 255),
	}
	for p, want := range accepted {
		got, te := checkPath("path", p)
		assert.Nil(t, te, "%q is an ordinary path", p)
		assert.Equal(t, want, got)
	}
}

func FuzzPathPolicy(f *testing.F) {
	for _, s := range append(refusedPaths, "src/a.ts", "a/b/../c", "a/./b", ".gitx/a", "x/.Vite/y", "a//..//b", "…/..", "") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		clean, te := checkPath("path", p)
		if te != nil {
			require.Equal(t, CodePolicyViolation, te.Code)
			require.Equal(t, "path", te.Field)
			return
		}
		// Whatever is accepted stays under the root once joined to it ...
		root := "/workspace"
		joined := path.Join(root, clean)
		if !strings.HasPrefix(joined, root+"/") {
			t.Fatalf("accepted %q as %q, which lands at %q", p, clean, joined)
		}
		for _, seg := range append(strings.Split(p, "/"), strings.Split(clean, "/")...) {
			if seg == ".." {
				t.Fatalf("accepted %q, which climbs with ..", p)
			}
			// ... outside every blocked folder, in any case ...
			for _, b := range blockedFolders {
				if strings.EqualFold(seg, b) {
					t.Fatalf("accepted %q (%q) inside blocked folder %s", p, clean, b)
				}
			}
		}
		// ... without the characters the policy names ...
		if strings.HasPrefix(clean, "/") || strings.ContainsAny(clean, "\x00\\") || strings.IndexFunc(clean, isControl) >= 0 {
			t.Fatalf("accepted %q as %q", p, clean)
		}
		// ... and cleaning is stable: the answer accepts itself unchanged.
		again, te := checkPath("path", clean)
		if te != nil || again != clean {
			t.Fatalf("checkPath(%q) = %q, but checkPath(%q) = %q, %v", p, clean, clean, again, te)
		}
	})
}
