package diffpatch

import (
	"fmt"
	"strings"
)

// Markers of the begin-patch format.
const (
	beginPatchMarker = "*** Begin Patch"
	endPatchMarker   = "*** End Patch"
	addFileMarker    = "*** Add File: "
	deleteFileMarker = "*** Delete File: "
	updateFileMarker = "*** Update File: "
	moveToMarker     = "*** Move to: "
	endOfFileMarker  = "*** End of File"
)

// ParseBeginPatch parses the "*** Begin Patch" format used by coding agents. The patch
// must end with "*** End Patch": a missing end marker usually means the text was cut off,
// and applying the first half of a patch is worse than refusing it. Text after the end
// marker is ignored. Every failure is a *ParseError.
func ParseBeginPatch(text string) (*Patch, error) {
	p := &beginParser{lines: splitPatchLines(text)}
	for p.i < len(p.lines) && strings.TrimSpace(p.lines[p.i].text) == "" {
		p.i++
	}
	if p.i >= len(p.lines) || strings.TrimSpace(p.lines[p.i].text) != beginPatchMarker {
		return nil, p.errf("", "expected %q as the first line", beginPatchMarker)
	}
	p.i++
	for {
		if p.i >= len(p.lines) {
			return nil, p.errf("", "missing %q (was the patch cut off?)", endPatchMarker)
		}
		l := strings.TrimRight(p.lines[p.i].text, " \t")
		var err error
		switch {
		case l == endPatchMarker:
			if len(p.files) == 0 {
				return nil, p.errf("", "patch has no file sections")
			}
			return &Patch{Format: FormatBeginPatch, Files: p.files}, nil
		case strings.HasPrefix(l, addFileMarker):
			err = p.parseAdd(strings.TrimPrefix(l, addFileMarker))
		case strings.HasPrefix(l, deleteFileMarker):
			err = p.parseDelete(strings.TrimPrefix(l, deleteFileMarker))
		case strings.HasPrefix(l, updateFileMarker):
			err = p.parseUpdate(strings.TrimPrefix(l, updateFileMarker))
		case strings.TrimSpace(l) == "":
			p.i++
		default:
			err = p.errf("", "expected %q, %q, %q or %q, found %s", addFileMarker, updateFileMarker, deleteFileMarker, endPatchMarker, quote(l))
		}
		if err != nil {
			return nil, err
		}
	}
}

type beginParser struct {
	lines []patchLine
	i     int
	files []FilePatch
}

func (p *beginParser) errf(file, format string, args ...any) *ParseError {
	return &ParseError{Line: p.i + 1, File: file, Message: fmt.Sprintf(format, args...)}
}

// path cleans the path of a section header line (at p.i).
func (p *beginParser) path(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	c, msg := cleanPatchPath(raw)
	if msg != "" {
		return "", p.errf(raw, "%s", msg)
	}
	return c, nil
}

// atSectionEnd reports whether line i starts the next section (or the end marker).
func (p *beginParser) atSectionEnd() bool {
	return p.i >= len(p.lines) || strings.HasPrefix(p.lines[p.i].text, "*** ")
}

func (p *beginParser) parseAdd(raw string) error {
	path, err := p.path(raw)
	if err != nil {
		return err
	}
	p.i++
	var h Hunk
	crlf := true
	blanks := 0 // bare empty lines not yet known to be followed by more content
	for ; !p.atSectionEnd(); p.i++ {
		pl := p.lines[p.i]
		if pl.text == "" {
			blanks++
			continue
		}
		if pl.text[0] != '+' {
			return p.errf(path, "every line of an added file must start with '+', found %s", quote(pl.text))
		}
		// A bare empty line between added lines is an empty line whose '+' was lost.
		for ; blanks > 0; blanks-- {
			h.Lines = append(h.Lines, Line{Kind: '+'})
		}
		h.Lines = append(h.Lines, Line{Kind: '+', Text: pl.text[1:]})
		crlf = crlf && pl.crlf
	}
	// Trailing bare empty lines are taken as separators before the next section.
	fp := FilePatch{Op: OpCreate, NewPath: path, CRLF: crlf && len(h.Lines) > 0}
	if len(h.Lines) > 0 {
		fp.Hunks = []Hunk{h}
	}
	p.files = append(p.files, fp)
	return nil
}

func (p *beginParser) parseDelete(raw string) error {
	path, err := p.path(raw)
	if err != nil {
		return err
	}
	p.i++
	for ; !p.atSectionEnd(); p.i++ {
		if strings.TrimSpace(p.lines[p.i].text) != "" {
			return p.errf(path, "a deleted file section takes no lines, found %s", quote(p.lines[p.i].text))
		}
	}
	p.files = append(p.files, FilePatch{Op: OpDelete, OldPath: path})
	return nil
}

func (p *beginParser) parseUpdate(raw string) error {
	path, err := p.path(raw)
	if err != nil {
		return err
	}
	fp := FilePatch{Op: OpModify, OldPath: path, NewPath: path}
	p.i++
	if p.i < len(p.lines) {
		if l := strings.TrimRight(p.lines[p.i].text, " \t"); strings.HasPrefix(l, moveToMarker) {
			if fp.NewPath, err = p.path(strings.TrimPrefix(l, moveToMarker)); err != nil {
				return err
			}
			if fp.NewPath != fp.OldPath {
				fp.Op = OpRename
			}
			p.i++
		}
	}
	var cur *Hunk
	blanks := 0 // trailing bare empty lines of cur
	flush := func() error {
		if cur == nil {
			return nil
		}
		// Bare empty lines at the end of a chunk are most likely separators that a model
		// added, not context: dropping them only loses a little context.
		cur.Lines = cur.Lines[:len(cur.Lines)-blanks]
		blanks = 0
		if len(cur.Lines) == 0 {
			return p.errf(path, "empty chunk: an @@ line must be followed by lines starting with ' ', '-' or '+'")
		}
		fp.Hunks = append(fp.Hunks, *cur)
		cur = nil
		return nil
	}
	for p.i < len(p.lines) {
		pl := p.lines[p.i]
		if strings.HasPrefix(pl.text, "*** ") {
			if strings.TrimRight(pl.text, " \t") != endOfFileMarker {
				break
			}
			if cur == nil || len(cur.Lines) == blanks {
				return p.errf(path, "%q without a chunk before it", endOfFileMarker)
			}
			// The chunk must end at the end of the file, so its trailing empty lines are
			// real: keep them.
			blanks = 0
			cur.AtEOF = true
			if err := flush(); err != nil {
				return err
			}
			p.i++
			continue
		}
		if strings.HasPrefix(pl.text, "@@") {
			if cur != nil && len(cur.Lines) > blanks {
				if err := flush(); err != nil {
					return err
				}
			}
			if cur == nil {
				cur = &Hunk{}
			}
			if a := anchorText(pl.text); a != "" {
				if cur.Anchor != "" {
					cur.Anchor += "\n"
				}
				cur.Anchor += a
			}
			p.i++
			continue
		}
		l := Line{Kind: ' '}
		switch {
		case pl.text == "":
			// A blank context line whose leading space was lost.
			blanks++
		case pl.text[0] == ' ' || pl.text[0] == '-' || pl.text[0] == '+':
			l = Line{Kind: pl.text[0], Text: pl.text[1:]}
			blanks = 0
		default:
			return p.errf(path, "every line of a chunk must start with ' ', '-' or '+', found %s", quote(pl.text))
		}
		if cur == nil {
			cur = &Hunk{}
		}
		cur.Lines = append(cur.Lines, l)
		p.i++
	}
	if err := flush(); err != nil {
		return err
	}
	if len(fp.Hunks) == 0 && fp.Op != OpRename {
		return &ParseError{Line: p.i, File: path, Message: "update section has no chunks"}
	}
	p.files = append(p.files, fp)
	return nil
}

// anchorText extracts the anchor of an "@@" line. Models sometimes write a unified hunk
// header ("@@ -12,3 +12,4 @@ func f()") here; its numbers mean nothing in this format, so
// only the section heading after it is kept.
func anchorText(l string) string {
	var h Hunk
	if parseHunkHeader(l, &h) == "" {
		return h.Anchor
	}
	a := strings.TrimSpace(strings.TrimPrefix(l, "@@"))
	if a == "@@" {
		return ""
	}
	return a
}
