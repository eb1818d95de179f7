package api

import (
	"sort"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/agentcontract"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// maxPathSegment is the longest file or folder name Linux file systems
// hold (NAME_MAX): a longer one can be stored but never written to a
// sandbox.
const maxPathSegment = 255

// checkTree refuses a set of app files no sandbox can hold, naming the
// first offending path (400 INVALID_REQUEST, field "files"): every path is
// relative, UTF-8 without NUL or backslash, made of names that are not "",
// "." or ".." and fit maxPathSegment; no file is also the folder of another
// ("a" and "a/b"); and none collides with the file the host writes into
// every run's sandbox (agentcontract.Path). Such an app used to be accepted
// and then fail every run with SANDBOX_ERROR.
func checkTree(files []sandbox.File) error {
	paths := make([]string, len(files))
	isFile := make(map[string]bool, len(files)+1)
	for i, f := range files {
		if err := checkAppPath(f.Path); err != nil {
			return err
		}
		paths[i] = f.Path
		isFile[f.Path] = true
	}
	sort.Strings(paths)
	for _, p := range paths {
		for i := range len(p) {
			if p[i] == '/' && isFile[p[:i]] {
				return core.Errf(core.CodeInvalidRequest, "files", "%q is a file and also the folder of %q; a sandbox cannot hold both", p[:i], p)
			}
		}
	}
	// The contract file is written at every run: a file on its way (or a
	// folder in its place) would fail them all.
	for _, p := range paths {
		if p == agentcontract.Path || strings.HasPrefix(agentcontract.Path, p+"/") || strings.HasPrefix(p, agentcontract.Path+"/") {
			return core.Errf(core.CodeInvalidRequest, "files", "%q collides with %s, which the host writes into every run's sandbox", p, agentcontract.Path)
		}
	}
	return nil
}

// checkAppPath checks one path of an app's file.
func checkAppPath(p string) error {
	if why := textProblem(p); why != "" {
		return core.Errf(core.CodeInvalidRequest, "files", "file path %q %s", p, why)
	}
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || len(p) > 1024 {
		return core.Errf(core.CodeInvalidRequest, "files", "file path %q must be relative to the app's root, without backslashes, at most 1024 bytes", p)
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return core.Errf(core.CodeInvalidRequest, "files", "file path %q has an empty, . or .. segment; give it relative to the app's root", p)
		case len(seg) > maxPathSegment:
			return core.Errf(core.CodeInvalidRequest, "files", "file path %q has a name over %d bytes", p, maxPathSegment)
		}
	}
	return nil
}
