package patch

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/sdk/plugin"
)

// MaxWriteBytes caps what one write may put in a file: a file larger than
// 1 MiB is almost always generated output, which a model should not be
// producing by hand and which bloats every revision it lands in.
const MaxWriteBytes = 1 << 20

// Path length limits. Linux refuses longer names (NAME_MAX 255, and 1 KiB is
// far beyond any app's real paths); refusing them here gives the model a
// policy answer instead of a filesystem error the sandbox cannot classify.
const (
	maxPathBytes    = 1024
	maxSegmentBytes = 255
)

// blockedFolders are never read or written by these tools: version control
// internals (writing .git/hooks would run code outside the sandbox the next
// time someone uses git), installed dependencies and build output, which the
// host drops from revisions anyway.
var blockedFolders = [...]string{".git", "node_modules", "dist", ".vite", ".turbo", ".cache"}

// checkPath applies the path policy to p, the value of the input field named
// field, and returns it cleaned (forward slashes, no "." or empty segments).
// The workspace confines paths again, symlinks included; this check exists so
// that the refusal is named in the tool's own terms and so that blocked
// folders, which are policy rather than confinement, are enforced at all.
func checkPath(field, p string) (string, *plugin.ToolError) {
	refuse := func(format string, args ...any) (string, *plugin.ToolError) {
		return "", &plugin.ToolError{Code: CodePolicyViolation, Message: fmt.Sprintf(format, args...), Field: field}
	}
	switch {
	case p == "":
		return refuse("%s is empty", field)
	case len(p) > maxPathBytes:
		return refuse("%s is %d bytes long; the limit is %d", field, len(p), maxPathBytes)
	case strings.ContainsRune(p, 0):
		return refuse("%s contains a NUL byte", field)
	case strings.IndexFunc(p, isControl) >= 0:
		return refuse("%s contains a control character", field)
	case strings.Contains(p, `\`):
		return refuse("%s %q contains a backslash; use forward slashes", field, p)
	case strings.HasPrefix(p, "/"):
		return refuse("%s %q is absolute; give it relative to the app's root, like src/App.tsx", field, p)
	}
	for _, seg := range strings.Split(p, "/") {
		// Every "..", even one that would stay inside: a model has no reason
		// to write a/../b, and refusing all of them leaves nothing to get wrong.
		if seg == ".." {
			return refuse("%s %q contains \"..\"; give the path from the app's root without it", field, p)
		}
		if len(seg) > maxSegmentBytes {
			return refuse("%s %q has a name longer than %d bytes", field, p, maxSegmentBytes)
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return refuse("%s %q names the app's root folder, not a file", field, p)
	}
	if b := blockedFolderIn(clean); b != "" {
		return refuse("%s %q is inside %s/, which these tools never touch", field, p, b)
	}
	return clean, nil
}

// checkResolved applies the blocked-folder rule to the path a workspace
// reports after following symlinks, so that a link inside the app cannot
// lead these tools into a blocked folder.
func checkResolved(field, requested, resolved string) *plugin.ToolError {
	if b := blockedFolderIn(resolved); b != "" {
		return &plugin.ToolError{Code: CodePolicyViolation, Field: field,
			Message: fmt.Sprintf("%s %q leads through a symlink into %s/, which these tools never touch", field, requested, b)}
	}
	return nil
}

// blockedFolderIn returns the blocked folder p lies in (or names), or "".
// The comparison ignores case: on a case-insensitive filesystem (macOS, a
// local sandbox) .GIT is .git.
func blockedFolderIn(p string) string {
	// strings.SplitSeq, not Split: this runs on every path of a listing,
	// and Split allocated a slice for each.
	for seg := range strings.SplitSeq(p, "/") {
		// The blocked names are ASCII, so an ASCII name equal to one
		// but for case has its length; any other name takes
		// EqualFold's Unicode folding ("ſ" folds to "s").
		ascii := isASCII(seg)
		for _, b := range blockedFolders {
			if (!ascii || len(seg) == len(b)) && strings.EqualFold(seg, b) {
				return b
			}
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isControl reports ASCII control characters: legal in Linux file names but
// never intended in an app's, and they break the logs, shells and diffs that
// later show the path.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
