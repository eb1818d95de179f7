package diffpatch

import (
	"path"
	"strings"
)

// Parse parses a patch in either supported format. A patch whose first non-blank line is
// "*** Begin Patch" is parsed with ParseBeginPatch, anything else with ParseUnified.
// Every failure is a *ParseError.
func Parse(text string) (*Patch, error) {
	for _, l := range splitPatchLines(text) {
		if strings.TrimSpace(l.text) == "" {
			continue
		}
		if strings.TrimSpace(l.text) == beginPatchMarker {
			return ParseBeginPatch(text)
		}
		break
	}
	return ParseUnified(text)
}

// patchLine is one line of patch text with its CR (if it ended in CR LF) removed.
type patchLine struct {
	text string
	crlf bool
}

// splitPatchLines splits patch text into lines. A trailing CR is dropped from every line:
// patches pasted from Windows tools arrive with CRLF, and since matching ignores a trailing
// CR and added lines take the target file's ending, the CR carries no information except
// for files the patch creates (see FilePatch.CRLF).
func splitPatchLines(text string) []patchLine {
	if text == "" {
		return nil
	}
	text = strings.TrimSuffix(text, "\n")
	raw := strings.Split(text, "\n")
	out := make([]patchLine, len(raw))
	for i, r := range raw {
		t, crlf := strings.CutSuffix(r, "\r")
		out[i] = patchLine{text: t, crlf: crlf}
	}
	return out
}

// cleanPatchPath validates and cleans a path named by a patch. Absolute paths and paths
// leaving the root are refused here, at parse time, so no caller ever has to wonder.
func cleanPatchPath(p string) (string, string) {
	if p == "" {
		return "", "empty path"
	}
	if strings.ContainsRune(p, 0) {
		return "", "path contains a NUL byte"
	}
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.HasPrefix(p, "/") || (len(p) >= 2 && p[1] == ':') {
		return "", "absolute path " + quote(p) + " not allowed"
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", "path " + quote(p) + " leaves the workspace"
	}
	return c, ""
}

// quote renders a string for messages.
func quote(s string) string {
	const max = 120 // long lines are cut so a message stays readable
	if len(s) > max {
		s = s[:max] + "…"
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}
