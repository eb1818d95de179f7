// Package templates holds the apps a new app can start from. Each folder is
// one template; its files become the app's first revision.
package templates

import (
	"embed"
	"io/fs"
	"sort"

	"github.com/agenthost/agenthost/sdk/sandbox"
)

//go:embed all:vite-react all:static-site
var files embed.FS

// Template describes one bundled template.
type Template struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

var descriptions = map[string]string{
	"vite-react":  "a Vite + React + TypeScript app (npm run build, npm run typecheck)",
	"static-site": "a static site: index.html, styles.css and script.js",
}

// List returns the bundled templates by name.
func List() []Template {
	out := make([]Template, 0, len(descriptions))
	for n, d := range descriptions {
		out = append(out, Template{Name: n, Description: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Files returns a template's files, or false when there is no such template.
func Files(name string) ([]sandbox.File, bool) {
	if _, ok := descriptions[name]; !ok {
		return nil, false
	}
	var out []sandbox.File
	err := fs.WalkDir(files, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, sandbox.File{Path: p[len(name)+1:], Data: data, Mode: 0o644})
		return nil
	})
	if err != nil {
		// The templates are compiled in; failing to read one is a build bug.
		panic("templates: " + err.Error())
	}
	return out, true
}
