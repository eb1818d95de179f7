package core

import "fmt"

// Default file limits of an app (see FileLimits). A source tree has no file
// near 64 MiB; bundles and media that large belong in object storage, and a
// file must fit in memory a few times over wherever it is merged or served.
// 256 MiB and 20000 files hold any app's source with room to spare while
// bounding what one app can make the host store per revision.
const (
	DefaultMaxFileBytes      = 64 << 20
	DefaultMaxWorkspaceBytes = 256 << 20
	DefaultMaxFiles          = 20000
)

// FileLimits bound what an app may hold: one file, all files together and
// how many. They are the host's, configured once and applied the same to
// uploads, edits, sandboxes and run results.
type FileLimits struct {
	MaxFileBytes      int64
	MaxWorkspaceBytes int64
	MaxFiles          int
}

// WithDefaults fills zero limits with the defaults.
func (l FileLimits) WithDefaults() FileLimits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxWorkspaceBytes <= 0 {
		l.MaxWorkspaceBytes = DefaultMaxWorkspaceBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// SizedFile is what the limits look at in a file: its path, its size and
// (to tell an unchanged file) its content hash.
type SizedFile struct {
	Path string
	Size int64
	// SHA256 may be empty when unknown; the file then counts as changed.
	SHA256 string
}

// LimitViolation is one way a file set breaks the limits. Path is empty for
// the totals.
type LimitViolation struct {
	Path    string `json:"path,omitempty"`
	Size    int64  `json:"size"`
	Limit   int64  `json:"limit"`
	Message string `json:"message"`
}

// Check judges files (the new set) against the limits, given prev (the set
// it replaces; nil for a new app). A file over MaxFileBytes is a violation
// unless prev holds it unchanged, and the totals only when they are over and
// grew: an app that got over the limits earlier (they were higher, or did not
// exist) can always be edited back under them, one step at a time, and is
// never stuck. The violations come in path order of files, totals last.
func (l FileLimits) Check(files, prev []SizedFile) []LimitViolation {
	l = l.WithDefaults()
	before := make(map[string]string, len(prev))
	var prevBytes int64
	for _, f := range prev {
		before[f.Path] = f.SHA256
		prevBytes += f.Size
	}
	var out []LimitViolation
	var total int64
	for _, f := range files {
		total += f.Size
		if f.Size <= l.MaxFileBytes {
			continue
		}
		if sha, ok := before[f.Path]; ok && sha != "" && sha == f.SHA256 {
			continue
		}
		out = append(out, LimitViolation{Path: f.Path, Size: f.Size, Limit: l.MaxFileBytes,
			Message: fmt.Sprintf("file %s has %d bytes; the limit is %d", f.Path, f.Size, l.MaxFileBytes)})
	}
	if total > l.MaxWorkspaceBytes && total > prevBytes {
		out = append(out, LimitViolation{Size: total, Limit: l.MaxWorkspaceBytes,
			Message: fmt.Sprintf("the files hold %d bytes together; the limit is %d", total, l.MaxWorkspaceBytes)})
	}
	if len(files) > l.MaxFiles && len(files) > len(prev) {
		out = append(out, LimitViolation{Size: int64(len(files)), Limit: int64(l.MaxFiles),
			Message: fmt.Sprintf("there are %d files; the limit is %d", len(files), l.MaxFiles)})
	}
	return out
}
