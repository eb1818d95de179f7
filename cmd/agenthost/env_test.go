package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the module root, two folders up from this package.
const repoRoot = "../.."

// operatorVar is the shape of the names an operator sets: the host's and
// the coding agent's prefixes, the database URL and the providers' keys.
var operatorVar = regexp.MustCompile(`^((AGENTHOST|APPS_CODING_AGENT|OPENAI|ANTHROPIC)_[A-Z0-9_]+|DATABASE_URL)$`)

// notOperatorVars look like settings but are plumbing between the host and
// its plugins, never set by an operator.
var notOperatorVars = map[string]bool{
	"AGENTHOST_PLUGIN": true, // go-plugin's magic cookie key (sdk/plugin/handshake.go)
}

// envNamesInCode is every string literal shaped like an operator's
// variable in the code an operator runs (host, shipped plugins, the SDK's
// plugin side, this command), with where it is. Literals rather than
// os.Getenv calls: names also reach os.Getenv through tables and helpers
// (config.go's env(&h.Listen, "AGENTHOST_LISTEN", …)). Test helpers
// (host/internal/testenv, *_test.go) are not the operator's.
func envNamesInCode(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	for _, dir := range []string{"host", "plugins", "sdk/plugin", "cmd/agenthost"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && strings.HasSuffix(filepath.ToSlash(path), "host/internal/testenv") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if v, err := strconv.Unquote(lit.Value); err == nil && operatorVar.MatchString(v) && !notOperatorVars[v] {
					found[v] = fset.Position(lit.Pos()).String()
				}
				return true
			})
			return nil
		})
		require.NoError(t, err)
	}
	return found
}

// TestHelpListsEveryEnvVar: every variable the host and its plugins read,
// and every variable README's Configuration section names, is in
// `agenthost --help`.
func TestHelpListsEveryEnvVar(t *testing.T) {
	code, help, _ := runCLI(t, "--help")
	require.Equal(t, exitOK, code)
	listed := func(name string) bool { return strings.Contains(help, "  "+name+"\n") }

	reads := envNamesInCode(t)
	for _, must := range []string{"AGENTHOST_LISTEN", "AGENTHOST_KEY_ENDPOINTS", "AGENTHOST_BOOTSTRAP_TOKEN", "APPS_CODING_AGENT_TOOL_TIMEOUT_S"} {
		require.Contains(t, reads, must, "the scan of the code must find what it is there to find")
	}
	for name, where := range reads {
		assert.True(t, listed(name), "%s names %s; agenthost --help does not list it (add it to cmd/agenthost/env.go)", where, name)
	}

	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	section := string(readme)
	start := strings.Index(section, "\n## Configuration")
	require.GreaterOrEqual(t, start, 0, "README has a Configuration section")
	section = section[start+1:]
	if end := strings.Index(section[1:], "\n#"); end >= 0 {
		section = section[:end+1]
	}
	envName := regexp.MustCompile("`([A-Z][A-Z0-9]*_[A-Z0-9_]+)(=[^`]*)?`")
	n := 0
	for _, m := range envName.FindAllStringSubmatch(section, -1) {
		n++
		assert.True(t, listed(m[1]), "README's Configuration names %s; agenthost --help does not list it", m[1])
	}
	assert.Greater(t, n, 10, "README's Configuration table names the variables")
}
