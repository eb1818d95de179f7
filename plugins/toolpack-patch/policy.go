package patch

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"strings"
)

// MaxWriteBytes caps what one tool call may write: larger files are almost
// always generated output a model should not be producing by hand.
const MaxWriteBytes = 1 << 20

// BlockedFolders are never read or written by these tools: version control
// internals, installed dependencies and build output.
var BlockedFolders = []string{".git", "node_modules", "dist", ".vite", ".turbo", ".cache", ".parcel-cache", ".next"}

// checkPath applies the path policy and returns the cleaned path, or a
// reason the path is refused. The workspace confines paths again (symlinks
// included); this check names the refusal in the tool's own terms first.
func checkPath(p string) (string, string) {
	switch {
	case strings.TrimSpace(p) == "":
		return "", "path is empty"
	case strings.ContainsRune(p, 0):
		return "", "path contains a NUL byte"
	case strings.Contains(p, `\`):
		return "", "path contains a backslash; use forward slashes"
	case strings.HasPrefix(p, "/"):
		return "", "path is absolute; give it relative to the app's root"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", "path climbs out with .."
		}
	}
	clean := path.Clean(p)
	if clean == "." {
		return "", "path names the app's root, not a file"
	}
	for _, seg := range strings.Split(clean, "/") {
		for _, b := range BlockedFolders {
			if seg == b {
				return "", fmt.Sprintf("path is inside %s/, which these tools never touch", b)
			}
		}
	}
	return clean, ""
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
