package diffpatch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ReadFunc returns a file's current content, or exists=false when there is no such file.
// Its error means the file could not be read (I/O), not that the patch is wrong.
type ReadFunc func(path string) (content []byte, exists bool, err error)

// Apply computes the new content of every file the patch touches without writing
// anything, so that the caller can write all or nothing. The Changes come in patch order
// and must be written in that order.
//
// A patch that does not fit the files fails as a whole with an *ApplyError listing every
// failing hunk of every file; no Changes are returned then. An error from read is
// returned as it is.
func Apply(p *Patch, read func(path string) (content []byte, exists bool, err error)) ([]Change, error) {
	if p == nil {
		return nil, errors.New("diffpatch: nil patch")
	}
	// Later sections must see what earlier sections made of a file, so every file is read
	// once and then tracked here.
	type state struct {
		content []byte
		exists  bool
	}
	overlay := map[string]state{}
	get := func(path string) ([]byte, bool, error) {
		if s, ok := overlay[path]; ok {
			return s.content, s.exists, nil
		}
		c, ok, err := read(path)
		if err != nil {
			return nil, false, err
		}
		overlay[path] = state{c, ok}
		return c, ok, nil
	}
	var changes []Change
	var failures []Failure
	for i := range p.Files {
		fp := &p.Files[i]
		ch, fails, err := applyFile(fp, p.Format == FormatBeginPatch, get)
		if err != nil {
			return nil, err
		}
		if len(fails) > 0 {
			failures = append(failures, fails...)
			continue
		}
		switch ch.Op {
		case OpDelete:
			overlay[ch.Path] = state{}
		case OpRename:
			overlay[ch.OldPath] = state{}
			overlay[ch.Path] = state{ch.Content, true}
		default:
			overlay[ch.Path] = state{ch.Content, true}
		}
		changes = append(changes, ch)
	}
	if len(failures) > 0 {
		return nil, &ApplyError{Failures: failures}
	}
	return changes, nil
}

// applyFile computes the change of one file section.
func applyFile(fp *FilePatch, beginPatch bool, get ReadFunc) (Change, []Failure, error) {
	ch := Change{Op: fp.Op, Path: fp.Path()}
	fileFail := func(code, format string, args ...any) (Change, []Failure, error) {
		return ch, []Failure{{File: fp.Path(), Code: code, Message: fmt.Sprintf(format, args...)}}, nil
	}
	if fp.Op == OpCreate {
		_, exists, err := get(fp.NewPath)
		if err != nil {
			return ch, nil, err
		}
		if exists {
			return fileFail(CodeFileExists, "cannot create %s: the file already exists; patch it as a modification instead", fp.NewPath)
		}
		ch.Content = createdContent(fp)
		return ch, nil, nil
	}

	content, exists, err := get(fp.OldPath)
	if err != nil {
		return ch, nil, err
	}
	if !exists {
		return fileFail(CodeFileNotFound, "cannot %s %s: the file does not exist", fp.Op, fp.OldPath)
	}
	if fp.Op == OpRename {
		ch.OldPath = fp.OldPath
		_, exists, err := get(fp.NewPath)
		if err != nil {
			return ch, nil, err
		}
		if exists {
			return fileFail(CodeFileExists, "cannot rename %s to %s: the target already exists", fp.OldPath, fp.NewPath)
		}
	}
	f := splitContent(content)
	if fp.Op == OpDelete {
		if fail := checkDeleted(fp, f); fail != nil {
			return ch, []Failure{*fail}, nil
		}
		ch.Path = fp.OldPath
		return ch, nil, nil
	}
	out, fails := patchContent(fp, f, beginPatch)
	ch.Content = out
	return ch, fails, nil
}

// fileContent is a file split into lines.
type fileContent struct {
	t       target
	finalNL bool   // the last line ends with a line break
	eol     string // dominant line ending: "\n" or "\r\n"
}

// splitContent splits file content into lines and detects its line ending conventions.
func splitContent(b []byte) fileContent {
	f := fileContent{eol: "\n"}
	s := string(b)
	if s == "" {
		return f
	}
	f.finalNL = strings.HasSuffix(s, "\n")
	f.t.lines = strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	crlf, lf := 0, 0
	for i, l := range f.t.lines {
		if i == len(f.t.lines)-1 && !f.finalNL {
			break // the last line has no ending to count
		}
		if strings.HasSuffix(l, "\r") {
			crlf++
		} else {
			lf++
		}
	}
	if crlf > lf {
		f.eol = "\r\n"
	}
	return f
}

// join renders lines (each without "\n") as file content.
func join(lines []string, finalNL bool) []byte {
	if len(lines) == 0 {
		return []byte{}
	}
	n := len(lines)
	for _, l := range lines {
		n += len(l)
	}
	b := make([]byte, 0, n)
	for i, l := range lines {
		b = append(b, l...)
		if i < len(lines)-1 || finalNL {
			b = append(b, '\n')
		}
	}
	return b
}

// createdContent builds the content of a created file from its '+' lines.
func createdContent(fp *FilePatch) []byte {
	cr := ""
	if fp.CRLF {
		cr = "\r"
	}
	var lines []string
	finalNL := true
	for _, h := range fp.Hunks {
		for _, l := range h.Lines {
			if l.Kind == '+' {
				lines = append(lines, l.Text+cr)
			}
		}
		finalNL = !h.NoNewlineNew
	}
	return join(lines, finalNL)
}

// checkDeleted verifies that the old content a unified patch gives for a deleted file is
// what the file holds (ignoring whitespace), so a stale patch cannot delete newer work.
func checkDeleted(fp *FilePatch, f fileContent) *Failure {
	var old []string
	for i := range fp.Hunks {
		old = append(old, fp.Hunks[i].oldLines()...)
	}
	if len(fp.Hunks) == 0 {
		return nil // begin-patch deletes, and git deletes of empty files, give no content
	}
	lines := f.t.level(levelAllWS)
	lc := locator{t: &f.t, file: fp.OldPath}
	for i := 0; i < max(len(old), len(lines)); i++ {
		switch {
		case i >= len(lines):
			return &Failure{File: fp.OldPath, Code: CodeContextMismatch, Message: fmt.Sprintf("cannot delete %s: the patch expects %d lines, the file has %d", fp.OldPath, len(old), len(lines)), Window: lc.window(len(lines)-1, 1)}
		case i >= len(old):
			return &Failure{File: fp.OldPath, Code: CodeContextMismatch, Message: fmt.Sprintf("cannot delete %s: the file has %d lines, more than the %d the patch expects", fp.OldPath, len(lines), len(old)), Window: lc.window(len(old), 1)}
		case normalize(old[i], levelAllWS) != lines[i]:
			return &Failure{File: fp.OldPath, Code: CodeContextMismatch, Message: fmt.Sprintf("cannot delete %s: it changed since the patch was made; line %d: expected %s, found %s", fp.OldPath, i+1, quote(old[i]), quote(strings.TrimSuffix(f.t.lines[i], "\r"))), Window: lc.window(i, 1)}
		}
	}
	return nil
}

// patchContent locates every hunk of a modify/rename section in the file and builds the
// new content, or reports every hunk that does not fit.
func patchContent(fp *FilePatch, f fileContent, beginPatch bool) ([]byte, []Failure) {
	lc := locator{t: &f.t, file: fp.Path(), numbered: !beginPatch}
	var fails []Failure
	places := make([]placement, 0, len(fp.Hunks))
	for i := range fp.Hunks {
		pl, fail := lc.locate(i, &fp.Hunks[i])
		if fail != nil {
			fails = append(fails, *fail)
			continue
		}
		places = append(places, pl)
	}
	// Hunks apply in file order, whatever their order in the patch; a stable sort keeps
	// two insertions at the same spot in patch order.
	slices.SortStableFunc(places, func(a, b placement) int { return a.start - b.start })
	for i := 1; i < len(places); i++ {
		a, b := places[i-1], places[i]
		if b.start < a.start+a.n {
			fails = append(fails, Failure{
				File: fp.Path(), Hunk: b.hunk + 1, Code: CodeHunksOverlap,
				Message: fmt.Sprintf("hunk %d and hunk %d both change lines %d-%d of the file; merge them into one hunk", a.hunk+1, b.hunk+1, b.start+1, min(a.start+a.n, b.start+max(b.n, 1))),
				Window:  lc.window(a.start, a.n+b.n),
			})
		}
	}
	if len(fails) > 0 {
		slices.SortStableFunc(fails, func(a, b Failure) int { return a.Hunk - b.Hunk })
		return nil, fails
	}

	cr := ""
	if f.eol == "\r\n" {
		cr = "\r"
	}
	lines := f.t.lines
	finalNL := f.finalNL || len(lines) == 0
	out := make([]string, 0, len(lines)+16)
	// lastAt is where the old last line went; if it lacked a line ending and is no
	// longer last, it needs one.
	lastAt := -1
	lastAdded := false // the last line of out is one of the patch's, ended with cr by us
	copyLines := func(from, to int) {
		out = append(out, lines[from:to]...)
		if from < to {
			lastAdded = false
			if to == len(lines) {
				lastAt = len(out) - 1
			}
		}
	}
	pos := 0
	for _, pl := range places {
		h := &fp.Hunks[pl.hunk]
		copyLines(pos, pl.start)
		at := pl.start
		for _, l := range h.Lines {
			switch l.Kind {
			case ' ':
				// The file's own line, not the patch's: after a fuzzy match the user's
				// whitespace is kept.
				out = append(out, lines[at])
				lastAdded = false
				if at == len(lines)-1 {
					lastAt = len(out) - 1
				}
				at++
			case '-':
				at++
			case '+':
				out = append(out, l.Text+cr)
				lastAdded = true
			}
		}
		pos = at
		// A unified hunk that reaches the end of the file says whether the new file ends
		// with a line break ("\ No newline at end of file"); otherwise the file's own
		// state is kept.
		if !beginPatch && at == len(lines) && len(h.Lines) > 0 {
			finalNL = !h.NoNewlineNew
		}
	}
	copyLines(pos, len(lines))
	if !finalNL && lastAdded {
		out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], cr)
	}
	if !f.finalNL && lastAt >= 0 && lastAt < len(out)-1 && !strings.HasSuffix(out[lastAt], "\r") {
		out[lastAt] += cr
	}
	return join(out, finalNL), nil
}
