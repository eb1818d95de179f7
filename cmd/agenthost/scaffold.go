package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/host/scaffold"
)

// pluginsNewCmd writes a plugin module (host/scaffold); it needs no host
// configuration.
type pluginsNewCmd struct {
	Kind   string `arg:"" enum:"engine,sandbox,toolpack" help:"engine, sandbox or toolpack."`
	Name   string `arg:"" help:"The plugin's name: its HCL label and binary, [a-z][a-z0-9-]*."`
	Dir    string `name:"dir" placeholder:"DIR" help:"Folder to create (default ./NAME); it must not hold files."`
	Module string `name:"module" placeholder:"PATH" help:"Go module path (default example.com/NAME)."`
	SDK    string `name:"sdk" placeholder:"DIR" help:"A local agenthost checkout to build against (a replace directive), until you depend on a published version."`
}

// Run writes the module and says what to do next.
func (c pluginsNewCmd) Run(g *globals) error {
	files, err := scaffold.Write(scaffold.Options{Kind: c.Kind, Name: c.Name, Dir: c.Dir, Module: c.Module, SDKPath: c.SDK})
	if err != nil {
		return usageError{err}
	}
	dir := c.Dir
	if dir == "" {
		dir = c.Name
	}
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintln(g.stdout, "wrote", filepath.Join(dir, rel))
	}
	steps := []string{"cd " + dir, "go test ./...    # the " + c.Kind + " conformance kit", "go build -o bin/ ./cmd/" + c.Name}
	if c.SDK == "" {
		steps = append([]string{"(add a replace directive for github.com/agenthost/agenthost, or require a published version, then: go mod tidy)"}, steps...)
	}
	fmt.Fprintf(g.stdout, "\nnext:\n  %s\n", strings.Join(steps, "\n  "))
	return nil
}
