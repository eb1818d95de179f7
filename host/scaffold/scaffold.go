// Package scaffold writes a new plugin module (agenthost plugins new): a
// compiling implementation that passes its kind's conformance kit, its
// main, the kit test, its HCL block and a README.
package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

//go:embed templates
var templates embed.FS

// defaultGoVersion is the go directive without a checkout to read it from:
// the agenthost module's own.
const defaultGoVersion = "1.26"

// Kinds are the plugin kinds a scaffold can be made for.
var Kinds = []string{"engine", "sandbox", "toolpack"}

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Options say what to write.
type Options struct {
	// Kind is engine, sandbox or toolpack.
	Kind string
	// Name is the plugin's name (its HCL label): [a-z][a-z0-9-]*.
	Name string
	// Dir is the folder to create; it must not exist or be empty.
	Dir string
	// Module is the new module's path; default example.com/<name>.
	Module string
	// SDKPath, when set, is a local agenthost checkout the module uses
	// through a replace directive; SDKVersion is the version required
	// (default v0.0.0, which only a replace satisfies).
	SDKPath, SDKVersion string
	// GoVersion is the go directive (default the agenthost module's).
	GoVersion string
}

type data struct {
	Options
	Package, Binary, Tool, Upper string
	// Pinned are the checkout's own requirements ("path version"), so the
	// new module resolves the SDK's dependencies at the versions it was
	// built and tested with, from the module cache.
	Pinned []string
}

// Write creates the module and returns the paths it wrote.
func Write(o Options) ([]string, error) {
	if !slices.Contains(Kinds, o.Kind) {
		return nil, fmt.Errorf("kind %q: want one of %s", o.Kind, strings.Join(Kinds, ", "))
	}
	if !namePattern.MatchString(o.Name) {
		return nil, fmt.Errorf("name %q: want %s (it becomes the HCL label and the binary's name)", o.Name, namePattern)
	}
	if o.Dir == "" {
		o.Dir = o.Name
	}
	if entries, err := os.ReadDir(o.Dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s exists and is not empty: pick another --dir", o.Dir)
	}
	if o.Module == "" {
		o.Module = "example.com/" + o.Name
	}
	if o.SDKVersion == "" {
		o.SDKVersion = "v0.0.0"
	}
	if o.SDKPath != "" {
		abs, err := filepath.Abs(o.SDKPath)
		if err != nil {
			return nil, err
		}
		o.SDKPath = abs
	}
	var pinned []string
	if o.SDKPath != "" {
		var goLine string
		var err error
		if pinned, goLine, err = requirements(filepath.Join(o.SDKPath, "go.mod")); err != nil {
			return nil, err
		}
		// The module may not say an older go than a dependency does.
		if o.GoVersion == "" {
			o.GoVersion = goLine
		}
	}
	if o.GoVersion == "" {
		o.GoVersion = defaultGoVersion
	}
	pkg := strings.ReplaceAll(o.Name, "-", "")
	d := data{Options: o, Package: pkg, Binary: o.Name, Tool: strings.ReplaceAll(o.Name, "-", "_") + "_hello",
		Upper: strings.ToUpper(strings.ReplaceAll(o.Name, "-", "_")), Pinned: pinned}
	files := map[string]string{
		"go.mod":                                "common_gomod.tmpl",
		o.Name + ".hcl":                         "common_hcl.tmpl",
		"README.md":                             "common_readme.tmpl",
		pkg + ".go":                             o.Kind + "/impl.go.tmpl",
		pkg + "_test.go":                        o.Kind + "/impl_test.go.tmpl",
		filepath.Join("cmd", o.Name, "main.go"): o.Kind + "/main.go.tmpl",
	}
	var written []string
	for path, tmpl := range files {
		out, err := render(tmpl, d)
		if err != nil {
			return written, err
		}
		full := filepath.Join(o.Dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return written, err
		}
		if err := os.WriteFile(full, out, 0o644); err != nil {
			return written, err
		}
		written = append(written, full)
	}
	if o.SDKPath != "" {
		// The checkout's sums cover the SDK's dependencies, so go mod tidy
		// needs nothing it cannot verify locally.
		if sums, err := os.ReadFile(filepath.Join(o.SDKPath, "go.sum")); err == nil {
			full := filepath.Join(o.Dir, "go.sum")
			if err := os.WriteFile(full, sums, 0o644); err != nil {
				return written, err
			}
			written = append(written, full)
		}
	}
	return written, nil
}

func render(name string, d data) ([]byte, error) {
	t, err := template.ParseFS(templates, "templates/"+name)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	if strings.HasSuffix(name, ".go.tmpl") {
		src, err := format.Source(b.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s does not format: %w", name, err)
		}
		return src, nil
	}
	return b.Bytes(), nil
}

// requirements lists the require lines of a go.mod ("path version") and
// its go version.
func requirements(gomod string) (out []string, goVersion string, err error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return nil, "", fmt.Errorf("read the SDK's go.mod: %w", err)
	}
	block := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.SplitN(line, "//", 2)[0])
		switch {
		case line == "require (":
			block = true
		case block && line == ")":
			block = false
		case block && line != "":
			out = append(out, line)
		case strings.HasPrefix(line, "require "):
			out = append(out, strings.TrimPrefix(line, "require "))
		case strings.HasPrefix(line, "go "):
			goVersion = strings.TrimPrefix(line, "go ")
		}
	}
	return out, goVersion, nil
}
