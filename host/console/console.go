// Package console serves the builder console: a web page, embedded in the
// host binary, that shows agenthost to a person through the same public
// REST + SSE API every other client uses. It is static files only (plain ES
// modules, no build step); the page signs in with an API token it keeps in
// the tab's sessionStorage and sends with every API call, so the files
// themselves are served without authentication.
package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/gin-gonic/gin"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed assets
var embedded embed.FS

// Assets are the console's files, rooted at the folder index.html is in.
var Assets = mustSub(embedded, "assets")

// ContentSecurityPolicy lets the page load only its own files and talk only
// to its own origin: no inline scripts or styles, no eval, no frames, no
// plugins, no other hosts. Revision files are never shown as pages (the API
// answers them with a sandbox policy of their own), only as text.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes are the types of the files the console ships, set here
// rather than from the system's MIME table: a browser refuses a module
// script served with any type but JavaScript's (with nosniff), and some
// systems map .js to text/plain.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
}

// asset is one file, ready to serve.
type asset struct {
	data        []byte
	contentType string
	etag        string
}

// files holds every asset by its path under Prefix ("index.html",
// "js/main.js"), read once at start-up.
var files = mustLoad(Assets)

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the folder is embedded above: it is always there
	}
	return sub
}

func mustLoad(f fs.FS) map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(f, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("console asset %s: no content type for %q", p, path.Ext(p))
		}
		data, err := fs.ReadFile(f, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[p] = asset{data: data, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // a file the build embedded that cannot be served is a bug
	}
	return out
}

// Register adds the console's routes to r: GET /console redirects to
// /console/, and GET /console/*asset serves index.html for the folder and
// the files beside it. None takes a token.
func Register(r gin.IRoutes) {
	r.GET(strings.TrimSuffix(Prefix, "/"), func(c *gin.Context) {
		c.Redirect(http.StatusMovedPermanently, Prefix)
	})
	r.GET(Prefix+"*asset", serve)
}

// serve answers one asset. The files are not fingerprinted, so the browser
// keeps them but revalidates each use (no-cache with a strong ETag): a
// 304 costs a round trip, and a host upgrade reaches every open console at
// its next load, with no mix of old and new modules.
func serve(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("asset"), "/")
	if name == "" {
		name = "index.html"
	}
	h := c.Writer.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	a, ok := files[name]
	if !ok {
		c.Status(http.StatusNotFound)
		_ = c.Error(core.Errf(core.CodeNotFound, "asset", "the console has no file %q", name))
		return
	}
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	if etagMatch(c.GetHeader("If-None-Match"), a.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, a.contentType, a.data)
}

// etagMatch reports whether an If-None-Match header names etag (or is *).
func etagMatch(header, etag string) bool {
	for _, v := range strings.Split(header, ",") {
		v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
		if v == etag || v == "*" {
			return true
		}
	}
	return false
}
