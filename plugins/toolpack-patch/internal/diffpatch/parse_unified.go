package diffpatch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

const devNull = "/dev/null"

// ParseUnified parses a unified diff as written by git diff, git log -p, git format-patch
// or diff -u. Text before the first file header (a commit message, an email) and between
// file sections is ignored. Binary patches are refused. Every failure is a *ParseError.
func ParseUnified(text string) (*Patch, error) {
	p := &unifiedParser{lines: splitPatchLines(text)}
	for p.i < len(p.lines) {
		l := p.lines[p.i].text
		var err error
		switch {
		case strings.HasPrefix(l, "diff --git "):
			err = p.parseFile(true)
		case strings.HasPrefix(l, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1].text, "+++ "):
			err = p.parseFile(false)
		case isBinaryLine(l):
			err = p.errf(binaryName(l), "binary patch for %s not supported", binaryName(l))
		case strings.HasPrefix(l, "@@ -"):
			// A hunk header outside a file section means the ---/+++ header was lost, and
			// silently skipping the hunk would drop a change.
			err = p.errf("", "hunk header without a preceding ---/+++ file header")
		default:
			p.i++
		}
		if err != nil {
			return nil, err
		}
	}
	if len(p.files) == 0 {
		return nil, &ParseError{Line: 1, Message: "no file sections found: expected a unified diff (---/+++ headers and @@ hunks) or a *** Begin Patch block"}
	}
	return &Patch{Format: FormatUnified, Files: p.files}, nil
}

type unifiedParser struct {
	lines []patchLine
	i     int // index of the next unread line
	files []FilePatch
}

func (p *unifiedParser) errf(file, format string, args ...any) *ParseError {
	return &ParseError{Line: p.i + 1, File: file, Message: fmt.Sprintf(format, args...)}
}

// fileHeader collects what the header lines of one file section say.
type fileHeader struct {
	gitOld, gitNew       string // from "diff --git a/x b/y", prefixes still on
	minusName, plusName  string // from ---/+++, prefixes still on; "" when absent
	haveMinusPlus        bool
	newFile, deletedFile bool
	renameFrom, renameTo string
	line                 int // index of the line naming the paths, for errors
}

// parseFile parses one file section starting at p.i: the optional git header with its
// extended lines, the ---/+++ pair and the hunks.
func (p *unifiedParser) parseFile(git bool) error {
	h := fileHeader{line: p.i}
	if git {
		h.gitOld, h.gitNew = splitGitHeaderPaths(strings.TrimPrefix(p.lines[p.i].text, "diff --git "))
		p.i++
	headers:
		for p.i < len(p.lines) {
			l := p.lines[p.i].text
			switch {
			case strings.HasPrefix(l, "new file mode "):
				h.newFile = true
			case strings.HasPrefix(l, "deleted file mode "):
				h.deletedFile = true
			case strings.HasPrefix(l, "rename from "):
				h.renameFrom = unquoteName(strings.TrimPrefix(l, "rename from "))
			case strings.HasPrefix(l, "rename to "):
				h.renameTo = unquoteName(strings.TrimPrefix(l, "rename to "))
			case strings.HasPrefix(l, "copy from "), strings.HasPrefix(l, "copy to "):
				return p.errf(stripPrefix(h.gitNew, "b/"), "copy patches are not supported")
			case strings.HasPrefix(l, "index "), strings.HasPrefix(l, "similarity index "),
				strings.HasPrefix(l, "dissimilarity index "), strings.HasPrefix(l, "old mode "),
				strings.HasPrefix(l, "new mode "):
			case isBinaryLine(l):
				return p.errf(stripPrefix(h.gitNew, "b/"), "binary patch for %s not supported", stripPrefix(h.gitNew, "b/"))
			default:
				break headers
			}
			p.i++
		}
	}
	if p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i].text, "--- ") && strings.HasPrefix(p.lines[p.i+1].text, "+++ ") {
		h.minusName = unquoteName(strings.TrimPrefix(p.lines[p.i].text, "--- "))
		h.plusName = unquoteName(strings.TrimPrefix(p.lines[p.i+1].text, "+++ "))
		h.haveMinusPlus = true
		h.line = p.i
		p.i += 2
	}
	fp, err := p.buildFilePatch(git, &h)
	if err != nil {
		return err
	}
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i].text, "@@") {
		hunk, crlf, err := p.parseHunk(fp.Path())
		if err != nil {
			return err
		}
		if fp.Op == OpCreate && hunk.OldLines != 0 {
			return &ParseError{Line: p.i, File: fp.Path(), Message: "hunk of a created file must have an empty old side (-0,0)"}
		}
		if fp.Op == OpDelete && hunk.NewLines != 0 {
			return &ParseError{Line: p.i, File: fp.Path(), Message: "hunk of a deleted file must have an empty new side (+0,0)"}
		}
		fp.CRLF = crlf && (len(fp.Hunks) == 0 || fp.CRLF)
		fp.Hunks = append(fp.Hunks, hunk)
	}
	if p.i < len(p.lines) && isBinaryLine(p.lines[p.i].text) {
		return p.errf(fp.Path(), "binary patch for %s not supported", fp.Path())
	}
	if !git && len(fp.Hunks) == 0 {
		return p.errf(fp.Path(), "file header without any @@ hunk")
	}
	if fp.Op == OpModify && len(fp.Hunks) == 0 {
		// A mode-only change: nothing to do to the content, so it does not become a
		// file section at all.
		return nil
	}
	p.files = append(p.files, fp)
	return nil
}

// buildFilePatch decides the operation and the paths of a file section from its header.
func (p *unifiedParser) buildFilePatch(git bool, h *fileHeader) (FilePatch, error) {
	oldName, newName := h.gitOld, h.gitNew
	if h.renameFrom != "" {
		oldName = "a/" + h.renameFrom
	}
	if h.renameTo != "" {
		newName = "b/" + h.renameTo
	}
	if h.haveMinusPlus {
		oldName, newName = h.minusName, h.plusName
	}
	create := h.newFile || oldName == devNull
	del := h.deletedFile || newName == devNull
	// git always writes a/ and b/; other tools do only sometimes, so strip them only when
	// both sides agree on it (like patch -p1 would be chosen by a person).
	strip := git || ((oldName == devNull || strings.HasPrefix(oldName, "a/")) &&
		(newName == devNull || strings.HasPrefix(newName, "b/")))
	if strip {
		oldName, newName = stripPrefix(oldName, "a/"), stripPrefix(newName, "b/")
	}
	var fp FilePatch
	errf := func(file, format string, args ...any) *ParseError {
		return &ParseError{Line: h.line + 1, File: file, Message: fmt.Sprintf(format, args...)}
	}
	display := newName
	if display == devNull || display == "" {
		display = oldName
	}
	if create && del {
		return fp, errf(display, "file section both creates and deletes the file")
	}
	clean := func(name string) (string, error) {
		c, msg := cleanPatchPath(name)
		if msg != "" {
			return "", errf(display, "%s", msg)
		}
		return c, nil
	}
	var err error
	switch {
	case create:
		fp.Op = OpCreate
		fp.NewPath, err = clean(newName)
	case del:
		fp.Op = OpDelete
		fp.OldPath, err = clean(oldName)
	default:
		if fp.OldPath, err = clean(oldName); err != nil {
			return fp, err
		}
		if fp.NewPath, err = clean(newName); err != nil {
			return fp, err
		}
		fp.Op = OpModify
		if fp.OldPath != fp.NewPath {
			if git {
				fp.Op = OpRename
			} else {
				// diff -u of foo.orig against foo: the patch is meant for the new name.
				fp.OldPath = fp.NewPath
			}
		}
	}
	return fp, err
}

// parseHunk parses one hunk starting at its "@@" header. It trusts the header's line
// counts, as git does; when the body is shorter or longer than they say (a common
// mistake in hand-written patches, models' above all) it recounts the body up to the
// next hunk or file header, which is safe because a hunk is placed by its lines, not
// by its numbers. A body that cannot be delimited that way is still an error.
func (p *unifiedParser) parseHunk(file string) (Hunk, bool, error) {
	start := p.i
	h, crlf, err := p.parseHunkStrict(file)
	if err == nil {
		return h, crlf, nil
	}
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "ends early") && !strings.Contains(pe.Message, "more lines than its header") {
		return h, crlf, err
	}
	p.i = start
	if rh, rcrlf, ok := p.recountHunk(file); ok {
		return rh, rcrlf, nil
	}
	p.i = start
	return h, crlf, err
}

// recountHunk reads a hunk body up to the next "@@", "diff --git" or "---"/"+++"
// pair (or the end), ignoring the header's counts, and sets the counts from it.
// Empty lines right before that boundary are separators, not context.
func (p *unifiedParser) recountHunk(file string) (Hunk, bool, bool) {
	var h Hunk
	if parseHunkHeader(p.lines[p.i].text, &h) != "" {
		return h, false, false
	}
	p.i++
	end := p.i
	for end < len(p.lines) {
		l := p.lines[end].text
		if strings.HasPrefix(l, "@@ ") || strings.HasPrefix(l, "diff --git ") ||
			strings.HasPrefix(l, "--- ") && end+1 < len(p.lines) && strings.HasPrefix(p.lines[end+1].text, "+++ ") {
			break
		}
		if l != "" && l[0] != ' ' && l[0] != '-' && l[0] != '+' && l[0] != '\\' {
			return h, false, false // not a diff line: nothing safe to recount
		}
		end++
	}
	last := end
	for last > p.i && p.lines[last-1].text == "" {
		last--
	}
	crlf, sawPlus := true, false
	var prev byte
	h.OldLines, h.NewLines = 0, 0
	for ; p.i < last; p.i++ {
		pl := p.lines[p.i]
		kind, text := byte(' '), ""
		if pl.text != "" {
			kind, text = pl.text[0], pl.text[1:]
		}
		if kind == '\\' {
			if applyNoNewline(&h, prev) != "" {
				return h, false, false
			}
			continue
		}
		switch kind {
		case ' ':
			h.OldLines++
			h.NewLines++
		case '-':
			h.OldLines++
		case '+':
			h.NewLines++
			sawPlus = true
			crlf = crlf && pl.crlf
		}
		h.Lines = append(h.Lines, Line{Kind: kind, Text: text})
		prev = kind
	}
	p.i = end
	if len(h.Lines) == 0 {
		return h, false, false
	}
	if h.OldLines > 0 && h.OldStart == 0 {
		h.OldStart = 1
	}
	_ = file
	return h, crlf && sawPlus, true
}

// parseHunkStrict parses a hunk whose body must match its header's counts.
func (p *unifiedParser) parseHunkStrict(file string) (Hunk, bool, error) {
	var h Hunk
	header := p.lines[p.i].text
	if strings.HasPrefix(header, "@@@") {
		return h, false, p.errf(file, "combined (merge) diffs are not supported")
	}
	if err := parseHunkHeader(header, &h); err != "" {
		return h, false, p.errf(file, "malformed hunk header %s: %s", quote(header), err)
	}
	headerLine := p.i
	p.i++
	oldLeft, newLeft := h.OldLines, h.NewLines
	crlf := true
	sawPlus := false
	var last byte
	for oldLeft > 0 || newLeft > 0 {
		if p.i >= len(p.lines) {
			return h, false, p.errf(file, "hunk starting at line %d ends early: %d old and %d new lines missing", headerLine+1, oldLeft, newLeft)
		}
		pl := p.lines[p.i]
		kind := byte(' ')
		text := ""
		switch {
		case pl.text == "":
			// An empty line stands for an empty context line whose leading space an
			// editor stripped.
		case pl.text[0] == ' ' || pl.text[0] == '-' || pl.text[0] == '+':
			kind, text = pl.text[0], pl.text[1:]
		case pl.text[0] == '\\':
			if err := applyNoNewline(&h, last); err != "" {
				return h, false, p.errf(file, "%s", err)
			}
			p.i++
			continue
		default:
			return h, false, p.errf(file, "hunk starting at line %d ends early: %d old and %d new lines missing before %s", headerLine+1, oldLeft, newLeft, quote(pl.text))
		}
		switch kind {
		case ' ':
			oldLeft--
			newLeft--
		case '-':
			oldLeft--
		case '+':
			newLeft--
			sawPlus = true
			crlf = crlf && pl.crlf
		}
		if oldLeft < 0 || newLeft < 0 {
			return h, false, p.errf(file, "hunk starting at line %d has more lines than its header -%d,%d +%d,%d says", headerLine+1, h.OldStart, h.OldLines, h.NewStart, h.NewLines)
		}
		h.Lines = append(h.Lines, Line{Kind: kind, Text: text})
		last = kind
		p.i++
	}
	// The "\ No newline" marker follows the last line, so it comes after the counts run out.
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i].text, "\\") {
		if err := applyNoNewline(&h, last); err != "" {
			return h, false, p.errf(file, "%s", err)
		}
		p.i++
	}
	if p.i < len(p.lines) {
		l := p.lines[p.i].text
		isHeader := strings.HasPrefix(l, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1].text, "+++ ")
		if l != "" && (l[0] == '+' || (l[0] == '-' && l != "-- " && l != "--" && !isHeader)) {
			return h, false, p.errf(file, "hunk starting at line %d has more lines than its header -%d,%d +%d,%d says", headerLine+1, h.OldStart, h.OldLines, h.NewStart, h.NewLines)
		}
	}
	return h, crlf && sawPlus, nil
}

// applyNoNewline records a "\ No newline at end of file" marker after a line of kind last.
func applyNoNewline(h *Hunk, last byte) string {
	switch last {
	case ' ':
		h.NoNewlineOld, h.NoNewlineNew = true, true
	case '-':
		h.NoNewlineOld = true
	case '+':
		h.NoNewlineNew = true
	default:
		return "\"\\ No newline at end of file\" marker without a preceding line"
	}
	return ""
}

// parseHunkHeader parses "@@ -l[,s] +l[,s] @@[ heading]" into h; it returns a reason on
// failure.
func parseHunkHeader(s string, h *Hunk) string {
	rest, ok := strings.CutPrefix(s, "@@ -")
	if !ok {
		return "expected \"@@ -\""
	}
	oldPart, rest, ok := strings.Cut(rest, " +")
	if !ok {
		return "expected \" +\" after the old range"
	}
	newPart, rest, ok := strings.Cut(rest, " @@")
	if !ok {
		return "expected \" @@\" after the new range"
	}
	var err string
	if h.OldStart, h.OldLines, err = parseRange(oldPart); err != "" {
		return err
	}
	if h.NewStart, h.NewLines, err = parseRange(newPart); err != "" {
		return err
	}
	h.Anchor = strings.TrimSpace(rest)
	return ""
}

// parseRange parses "l,s" or "l" (s defaults to 1).
func parseRange(s string) (int, int, string) {
	startS, countS, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(startS)
	if err != nil || start < 0 {
		return 0, 0, "bad line number " + quote(startS)
	}
	count := 1
	if hasCount {
		if count, err = strconv.Atoi(countS); err != nil || count < 0 {
			return 0, 0, "bad line count " + quote(countS)
		}
	}
	// Bound the numbers so that arithmetic on them cannot overflow.
	const maxLines = 1 << 30
	if start > maxLines || count > maxLines {
		return 0, 0, "line number out of range"
	}
	if count > 0 && start == 0 {
		return 0, 0, "line 0 with a non-empty range"
	}
	return start, count, ""
}

// splitGitHeaderPaths splits the "a/x b/y" of a "diff --git" line. Paths containing a
// space are ambiguous there; the usual case of equal names is solved by splitting in the
// middle, and the ---/+++ or rename lines override the result anyway.
func splitGitHeaderPaths(s string) (string, string) {
	if strings.HasPrefix(s, "\"") {
		if old, rest, ok := cutQuoted(s); ok {
			return old, unquoteName(strings.TrimSpace(rest))
		}
	}
	if n := len(s); n%2 == 1 && s[n/2] == ' ' && stripPrefix(s[:n/2], "a/") == stripPrefix(s[n/2+1:], "b/") {
		return s[:n/2], s[n/2+1:]
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return s[:i], unquoteName(s[i+1:])
	}
	if i := strings.LastIndex(s, " "); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, s
}

// unquoteName reads a file name from a header line: a C-style quoted name as git writes
// for unusual characters, or a bare name ending at a tab (diff -u puts a timestamp after it).
func unquoteName(s string) string {
	if strings.HasPrefix(s, "\"") {
		if name, _, ok := cutQuoted(s); ok {
			return name
		}
	}
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ")
}

// cutQuoted unquotes the leading quoted string of s and returns the rest.
func cutQuoted(s string) (string, string, bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			name, err := strconv.Unquote(s[:i+1])
			if err != nil {
				return "", "", false
			}
			return name, s[i+1:], true
		}
	}
	return "", "", false
}

func stripPrefix(s, prefix string) string {
	return strings.TrimPrefix(s, prefix)
}

func isBinaryLine(l string) bool {
	return l == "GIT binary patch" || (strings.HasPrefix(l, "Binary files ") && strings.HasSuffix(l, " differ"))
}

// binaryName extracts a name from "Binary files a/x and b/x differ" for the message.
func binaryName(l string) string {
	l = strings.TrimSuffix(strings.TrimPrefix(l, "Binary files "), " differ")
	if _, n, ok := strings.Cut(l, " and "); ok && n != devNull {
		return stripPrefix(n, "b/")
	}
	return l
}
