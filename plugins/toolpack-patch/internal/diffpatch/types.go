package diffpatch

import (
	"fmt"
	"strings"
)

// Op says what a file section of a patch does to its file.
type Op int

const (
	// OpModify changes the content of an existing file in place.
	OpModify Op = iota
	// OpCreate creates a file that must not exist yet.
	OpCreate
	// OpDelete removes a file that must exist.
	OpDelete
	// OpRename moves a file (OldPath → NewPath) and may also change its content.
	OpRename
)

// String returns the lower-case name of the operation, as used in messages.
func (o Op) String() string {
	switch o {
	case OpModify:
		return "modify"
	case OpCreate:
		return "create"
	case OpDelete:
		return "delete"
	case OpRename:
		return "rename"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Format names reported in Patch.Format.
const (
	FormatUnified    = "unified"
	FormatBeginPatch = "begin_patch"
)

// Patch is a parsed patch: an ordered list of file sections.
type Patch struct {
	// Format is FormatUnified or FormatBeginPatch.
	Format string
	// Files are the file sections in patch order. The same path may appear twice; the
	// sections then apply one after the other.
	Files []FilePatch
}

// FilePatch is one file section of a patch.
type FilePatch struct {
	Op Op
	// OldPath and NewPath are cleaned, slash-separated and stripped of the a/ b/ prefixes.
	// OldPath is "" for a create, NewPath is "" for a delete; for a modify both are equal.
	OldPath, NewPath string
	// Hunks are in patch order.
	Hunks []Hunk
	// CRLF records that every '+' line of this section ended in CR LF in the patch text
	// itself. Only a create uses it (an existing file's own line ending wins otherwise),
	// so that a patch of a CRLF file creates a CRLF file.
	CRLF bool
}

// Path returns the path the section acts on: NewPath, or OldPath for a delete.
func (f *FilePatch) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Line is one body line of a hunk.
type Line struct {
	// Kind is ' ' (context), '-' (removed) or '+' (added).
	Kind byte
	// Text is the line without its line ending.
	Text string
}

// Hunk is one change region of a file section.
type Hunk struct {
	// OldStart, OldLines, NewStart and NewLines come from a unified "@@ -l,s +l,s @@"
	// header; they are all 0 in the begin-patch format, which has no line numbers.
	OldStart, OldLines, NewStart, NewLines int
	// Anchor is the text after "@@" in the begin-patch format (a line to find first,
	// several anchors joined with "\n", each searched after the previous one), or the
	// section heading of a unified hunk header (informational only).
	Anchor string
	// Lines is the hunk body.
	Lines []Line
	// NoNewlineOld and NoNewlineNew record a "\ No newline at end of file" marker after
	// the last old-side or new-side line.
	NoNewlineOld, NoNewlineNew bool
	// AtEOF means the hunk must match at the end of the file ("*** End of File").
	AtEOF bool
}

// oldLines returns the old side (context and removed lines) of the hunk.
func (h *Hunk) oldLines() []string {
	out := make([]string, 0, len(h.Lines))
	for _, l := range h.Lines {
		if l.Kind != '+' {
			out = append(out, l.Text)
		}
	}
	return out
}

// ParseError reports malformed patch text. It is the error type of every parse failure.
type ParseError struct {
	// Line is the 1-based line of the patch text where the problem was found.
	Line int
	// File is the path of the file section being parsed, if known.
	File string
	// Message says what was wrong.
	Message string
}

// Error implements error.
func (e *ParseError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("patch line %d (%s): %s", e.Line, e.File, e.Message)
	}
	return fmt.Sprintf("patch line %d: %s", e.Line, e.Message)
}

// Failure converts the parse error into a failure report entry with CodeParseFailed, so a
// caller can report parse and apply failures in one shape.
func (e *ParseError) Failure() Failure {
	return Failure{File: e.File, Code: CodeParseFailed, Message: e.Error()}
}

// Change is the computed effect of one file section. Apply returns them in patch order;
// a caller must write them in that order (a path touched twice appears twice).
type Change struct {
	Op Op
	// Path is the file to write (create, modify, rename) or remove (delete).
	Path string
	// OldPath is the file to remove for a rename; "" otherwise.
	OldPath string
	// Content is the complete new content; nil for a delete.
	Content []byte
}

// Failure codes. They are stable: callers and models match on them.
const (
	CodeParseFailed      = "PATCH_PARSE_FAILED"
	CodeContextMismatch  = "PATCH_CONTEXT_MISMATCH"  // context/removed lines not found
	CodeContextAmbiguous = "PATCH_CONTEXT_AMBIGUOUS" // found at several places, nothing disambiguates
	CodeHunksOverlap     = "PATCH_HUNKS_OVERLAP"     // two hunks claim the same old lines
	CodeFileNotFound     = "PATCH_FILE_NOT_FOUND"    // modify/delete/rename of a missing file
	CodeFileExists       = "PATCH_FILE_EXISTS"       // create over an existing file / rename onto one
)

// LineWindow is a 1-based inclusive line range of a file.
type LineWindow struct{ Start, End int }

// Failure is one reason a patch could not be applied.
type Failure struct {
	File string
	// Hunk is the 1-based index of the hunk within its file section; 0 for a file-level
	// failure.
	Hunk int
	// Code is one of the Code* constants.
	Code string
	// Message says what was expected and what was found, in terms a model can act on.
	Message string
	// Window is the range of the current file worth re-reading before retrying, or nil.
	Window *LineWindow
}

// ApplyError is Apply's domain failure: it lists every failing hunk of every file.
type ApplyError struct {
	Failures []Failure
}

// Error implements error with one line per failure.
func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patch does not apply (%d failure", len(e.Failures))
	if len(e.Failures) != 1 {
		b.WriteString("s")
	}
	b.WriteString(")")
	for _, f := range e.Failures {
		b.WriteString("\n")
		b.WriteString(f.File)
		if f.Hunk > 0 {
			fmt.Fprintf(&b, " hunk %d", f.Hunk)
		}
		fmt.Fprintf(&b, ": %s: %s", f.Code, f.Message)
		if f.Window != nil {
			fmt.Fprintf(&b, " (re-read lines %d-%d)", f.Window.Start, f.Window.End)
		}
	}
	return b.String()
}
