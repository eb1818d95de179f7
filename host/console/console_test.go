package console_test

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/console"
	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstLoadBudget is what the console may weigh on first load, gzipped:
// every file it ships, since main.js imports every view statically.
const firstLoadBudget = 200 << 10

func router() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	console.Register(r)
	return r
}

func get(t *testing.T, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestServesAssets: each file with its own content type, a strict policy,
// nosniff and revalidation by ETag; /console redirects; a missing file is
// 404.
func TestServesAssets(t *testing.T) {
	h := router()
	for _, tc := range []struct{ target, ctype, contains string }{
		{"/console/", "text/html; charset=utf-8", `<script type="module" src="js/main.js"></script>`},
		{"/console/index.html", "text/html; charset=utf-8", "<title>agenthost console</title>"},
		{"/console/js/main.js", "text/javascript; charset=utf-8", "import"},
		{"/console/console.css", "text/css; charset=utf-8", ":focus-visible"},
		{"/console/icon.svg", "image/svg+xml", "<svg"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			w := get(t, h, tc.target)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, tc.ctype, w.Header().Get("Content-Type"))
			assert.Contains(t, w.Body.String(), tc.contains)
			assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
			assert.Equal(t, console.ContentSecurityPolicy, w.Header().Get("Content-Security-Policy"))
			assert.Equal(t, "no-cache", w.Header().Get("Cache-Control"))
			etag := w.Header().Get("ETag")
			require.NotEmpty(t, etag)

			again := get(t, h, tc.target, "If-None-Match", etag)
			assert.Equal(t, http.StatusNotModified, again.Code)
			assert.Empty(t, again.Body.Bytes())
			assert.Equal(t, http.StatusOK, get(t, h, tc.target, "If-None-Match", `"stale"`).Code)
		})
	}

	w := get(t, h, "/console")
	assert.Equal(t, http.StatusMovedPermanently, w.Code)
	assert.Equal(t, "/console/", w.Header().Get("Location"))

	for _, missing := range []string{"/console/nope.js", "/console/js/", "/console/../go.mod", "/console/js/../../console.go"} {
		w := get(t, h, missing)
		assert.Equal(t, http.StatusNotFound, w.Code, missing)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), missing)
	}
}

// TestPolicyIsStrict: scripts, styles and connections from the console's
// own origin only, nothing inline, no eval, no framing, no form posts.
func TestPolicyIsStrict(t *testing.T) {
	p := console.ContentSecurityPolicy
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
		"frame-ancestors 'none'", "form-action 'none'", "base-uri 'none'"} {
		assert.Contains(t, p, want)
	}
	for _, never := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "https:"} {
		assert.NotContains(t, p, never)
	}
}

// assets reads every file the console ships.
func assets(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	require.NoError(t, fs.WalkDir(console.Assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(console.Assets, p)
		out[p] = b
		return err
	}))
	require.Contains(t, out, "index.html")
	return out
}

// TestFirstLoadBudget: everything the console ships, gzipped file by file
// as a server would send it, stays under firstLoadBudget.
func TestFirstLoadBudget(t *testing.T) {
	total, raw := 0, 0
	var names []string
	files := assets(t)
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = zw.Write(files[name])
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		t.Logf("%-22s %6d bytes, %6d gzipped", name, len(files[name]), buf.Len())
		total += buf.Len()
		raw += len(files[name])
	}
	t.Logf("console: %d files, %d bytes, %d gzipped (budget %d)", len(files), raw, total, firstLoadBudget)
	assert.Less(t, total, firstLoadBudget, "the console's first load, gzipped")
}

var (
	importRe = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"|^\s*import\s+"([^"]+)"`)
	refRe    = regexp.MustCompile(`\b(?:src|href)="([^"#:]+)"`)
)

// TestModulesResolve: every file index.html names and every module a
// module imports is shipped, and every script shipped is reachable from
// index.html (no module left behind by a refactoring).
func TestModulesResolve(t *testing.T) {
	files := assets(t)
	reached := map[string]bool{"index.html": true}
	queue := []string{"index.html"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		var refs []string
		if strings.HasSuffix(name, ".html") {
			for _, m := range refRe.FindAllStringSubmatch(string(files[name]), -1) {
				refs = append(refs, m[1])
			}
		} else if strings.HasSuffix(name, ".js") {
			for _, m := range importRe.FindAllStringSubmatch(string(files[name]), -1) {
				refs = append(refs, m[1]+m[2])
			}
		}
		for _, ref := range refs {
			require.True(t, strings.HasPrefix(ref, "./") || !strings.Contains(ref, "/") || strings.HasPrefix(ref, "js/"),
				"%s: %q must be a relative path to a file of the console", name, ref)
			target := path.Clean(path.Join(path.Dir(name), ref))
			if !assert.Contains(t, files, target, "%s refers to %s", name, ref) || reached[target] {
				continue
			}
			reached[target] = true
			queue = append(queue, target)
		}
	}
	for name := range files {
		if strings.HasSuffix(name, ".js") {
			assert.True(t, reached[name], "%s is shipped but nothing imports it", name)
		}
	}
}

var (
	inlineScript = regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]`)
	inlineAttr   = regexp.MustCompile(`(?i)\s(?:on[a-z]+|style)\s*=`)
	// htmlSinks parse strings as HTML or code: the console builds every
	// node with dom.js's h(), so text from the API is always text.
	htmlSinks = regexp.MustCompile(`\.(?:innerHTML|outerHTML|insertAdjacentHTML)\b|document\.write|\beval\(|new Function\(`)
)

// TestNothingInline: no inline script, handler or style in the page (the
// policy would refuse them), and no script parses strings as HTML or code.
func TestNothingInline(t *testing.T) {
	for name, b := range assets(t) {
		switch path.Ext(name) {
		case ".html":
			assert.NotRegexp(t, inlineScript, string(b), name)
			assert.NotRegexp(t, inlineAttr, string(b), name)
		case ".js":
			assert.NotRegexp(t, htmlSinks, string(b), name)
		}
	}
}
