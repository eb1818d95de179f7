package doccheck

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/api"
	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"
)

// repoRoot is the module root, two folders up from this package.
const repoRoot = "../.."

// docLine is one line of a documentation file, for messages that point
// at it.
type docLine struct {
	file string // relative to the repository root
	n    int
	text string
	code bool // inside a ``` block
}

func (l docLine) String() string { return fmt.Sprintf("%s:%d", l.file, l.n) }

// docFiles is what the test holds to the code: the README and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

func readLines(t *testing.T) []docLine {
	t.Helper()
	var out []docLine
	for _, path := range docFiles(t) {
		f, err := os.Open(path)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repoRoot, path)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		code := false
		for n := 1; sc.Scan(); n++ {
			text := sc.Text()
			if strings.HasPrefix(strings.TrimSpace(text), "```") {
				code = !code
				continue
			}
			out = append(out, docLine{file: filepath.ToSlash(rel), n: n, text: text, code: code})
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return out
}

// backticked is every `…` span of a prose line.
var backticked = regexp.MustCompile("`([^`]+)`")

// ---- routes ----

// docRoute is a route as a document names it.
type docRoute struct {
	method, path string
	at           docLine
}

var (
	methodPath = regexp.MustCompile(`^(GET|POST|PUT|DELETE|PATCH)(?:/(GET|POST|PUT|DELETE|PATCH))? +([/…]\S*)$`)
	barePath   = regexp.MustCompile(`^(…/|/admin/|/models)\S*$`)
	curlLine   = regexp.MustCompile(`\bcurl\b.*?(?:-X (GET|POST|PUT|DELETE|PATCH)\b.*?)?\b(?:localhost|127\.0\.0\.1):\d+(/[^\s"']*)`)
)

// documentedRoutes finds the routes the docs name: `METHOD /path` and
// `METHOD …/path` spans, bare `…/path` spans after such a span on the same
// line (they share its method), and curl commands in console examples.
func documentedRoutes(lines []docLine) []docRoute {
	var out []docRoute
	for _, l := range lines {
		if l.code {
			if m := curlLine.FindStringSubmatch(l.text); m != nil {
				method := m[1]
				if method == "" {
					method = http.MethodGet
				}
				out = append(out, docRoute{method, m[2], l})
			}
			continue
		}
		var methods []string
		for _, span := range backticked.FindAllStringSubmatch(l.text, -1) {
			s := strings.ReplaceAll(span[1], `\|`, "|") // a | escaped for a table cell
			if m := methodPath.FindStringSubmatch(s); m != nil {
				methods = []string{m[1]}
				if m[2] != "" {
					methods = append(methods, m[2])
				}
				for _, method := range methods {
					out = append(out, docRoute{method, m[3], l})
				}
			} else if barePath.MatchString(s) && methods != nil {
				for _, method := range methods {
					out = append(out, docRoute{method, s, l})
				}
			}
		}
	}
	return out
}

// expand turns a documented path into the concrete patterns it stands
// for: the query goes, an optional `[/{id}]` part gives both forms, and a
// leading … is the app's base or its coding-agent base (README says so).
func expand(path string) []string {
	path, _, _ = strings.Cut(path, "?")
	paths := []string{path}
	if i := strings.Index(path, "["); i >= 0 {
		if j := strings.Index(path[i:], "]"); j >= 0 {
			paths = []string{path[:i] + path[i+j+1:], path[:i] + path[i+1:i+j] + path[i+j+1:]}
		}
	}
	var out []string
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, "…"); ok {
			out = append(out, "/admin/apps/{app}"+rest, "/admin/apps/{app}/coding-agent"+rest)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// placeholder: a segment that stands for a value ($APP, {id|draft},
// cp_8720…): it needs a parameter in the route.
func placeholder(seg string) bool {
	return strings.HasPrefix(seg, "$") || strings.HasPrefix(seg, "{") || strings.Contains(seg, "…")
}

// matches says whether the documented path names the route: literal
// segments equal, placeholders only where the route has a parameter, a
// parameter taking any value (draft is a revision id), *catch-all taking
// the rest.
func matches(doc, route string) bool {
	ds := strings.Split(strings.Trim(doc, "/"), "/")
	rs := strings.Split(strings.Trim(route, "/"), "/")
	for i, r := range rs {
		if strings.HasPrefix(r, "*") {
			return i < len(ds)
		}
		if i >= len(ds) {
			return false
		}
		switch {
		case strings.HasPrefix(r, ":"):
		case placeholder(ds[i]) || ds[i] != r:
			return false
		}
	}
	return len(ds) == len(rs)
}

// registeredRoutes builds the real Gin engine and lists its routes.
func registeredRoutes(t *testing.T) gin.RoutesInfo {
	t.Helper()
	h := api.New(api.Deps{Metrics: http.NotFoundHandler()})
	eng, ok := h.(interface{ Routes() gin.RoutesInfo })
	require.True(t, ok, "api.New returns a Gin engine")
	routes := eng.Routes()
	require.NotEmpty(t, routes)
	return routes
}

// TestDocumentedRoutesExist: every route README.md and docs/*.md name is
// registered by the API with that method.
func TestDocumentedRoutesExist(t *testing.T) {
	routes := registeredRoutes(t)
	docs := documentedRoutes(readLines(t))
	require.Greater(t, len(docs), 30, "the docs name routes; the extractor must find them")
	for _, d := range docs {
		found := false
		for _, p := range expand(d.path) {
			for _, r := range routes {
				if r.Method == d.method && matches(p, r.Path) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s: %s %s is not a route the host registers (host/api/api.go)", d.at, d.method, d.path)
		}
	}
}

// ---- error codes ----

// definedCodes is every string constant named Code… in the code base's
// non-test Go files: core's, the API's, the SDK's and the plugins' codes.
func definedCodes(t *testing.T) map[string]bool {
	t.Helper()
	codes := map[string]bool{}
	for _, dir := range []string{"core", "host", "sdk", "plugins"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if i >= len(vs.Values) || !strings.HasPrefix(name.Name, "Code") {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							codes[v] = true
						}
					}
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	return codes
}

var (
	upperSnake = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
	// envVarName: the variables docs name beside codes (the host's, the
	// providers', the databases').
	envVarName = regexp.MustCompile(`^((AGENTHOST|APPS_CODING_AGENT|OPENAI|ANTHROPIC|OPENROUTER)_[A-Z0-9_]+|[A-Z_]*DATABASE_URL|[A-Z_]+_API_KEY)$`)
	// notOurs are names the docs quote from elsewhere: Linux resource
	// limits, SQLite's result codes and go-plugin's environment variables.
	notOurs = regexp.MustCompile(`^(RLIMIT|SQLITE|PLUGIN)_`)
)

// TestDocumentedCodesExist: every UPPER_SNAKE name in backticks that is
// not an environment variable (or a Linux or SQLite name) is an error
// code the code base defines.
func TestDocumentedCodesExist(t *testing.T) {
	codes := definedCodes(t)
	for _, c := range []string{"INVALID_REQUEST", "CODING_AGENT_SANDBOX_UNAVAILABLE", "UNAUTHENTICATED", "MODEL_ENDPOINT_NOT_ALLOWED"} {
		require.True(t, codes[c], "the scan must find %s", c)
	}
	checked := 0
	for _, l := range readLines(t) {
		if l.code {
			continue
		}
		for _, span := range backticked.FindAllStringSubmatch(l.text, -1) {
			for _, name := range upperSnake.FindAllString(span[1], -1) {
				if envVarName.MatchString(name) || notOurs.MatchString(name) || strings.Contains(span[1], name+"=") {
					continue
				}
				checked++
				if !codes[name] {
					t.Errorf("%s: `%s` is not an error code the code base defines (core/errors.go, host/api/errors.go, …)", l, name)
				}
			}
		}
	}
	require.Greater(t, checked, 10, "the docs name error codes; the extractor must find them")
}

// ---- links ----

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksStayInRepo: every relative link resolves to a file or
// folder of this repository, and nothing points at the steering folder
// (../shared) or the contract seeds, which readers of the repository do
// not have.
func TestDocLinksStayInRepo(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	for _, l := range readLines(t) {
		if strings.Contains(l.text, "../shared") || regexp.MustCompile(`\bseeds/`).MatchString(l.text) {
			t.Errorf("%s: points outside the repository: %s", l, strings.TrimSpace(l.text))
		}
		if l.code {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(root, filepath.Dir(l.file), target)
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %s leaves the repository", l, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: link %s: no such file", l, m[1])
			}
		}
	}
}
