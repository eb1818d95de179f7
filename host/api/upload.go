package api

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// uploadSkips are folders an upload never brings into an app: version
// control internals and everything core.GeneratedArtifacts regenerates.
var uploadSkips = sandbox.NewExcluder(append([]string{".git", ".hg", ".svn"}, core.GeneratedArtifacts...))

// unpacked is an archive read into an app's files.
type unpacked struct {
	Files []sandbox.File
	// Skipped counts entries left out as generated or version control.
	Skipped int
}

// unpackArchive reads a tar (optionally gzipped) or zip archive. Paths must
// stay inside the app; links, devices and other special entries are refused
// rather than silently dropped, since an app that depends on them would come
// out broken. A single folder holding everything (my-app/...) is unwrapped.
//
// The body limit (maxAppBody) bounds what is sent; the host's file limits
// bound what it unpacks to, so a small archive cannot expand into gigabytes
// (a zip bomb): an entry is read no further than a byte past the per-file
// limit, and the archive no further than a byte past the workspace limit,
// whatever its headers claim. Either answers FILES_TOO_LARGE, as storing
// such files by any other route would.
func unpackArchive(kind string, body []byte, limits core.FileLimits) (unpacked, error) {
	b := &budget{limits: limits.WithDefaults()}
	var entries []archiveEntry
	var err error
	switch kind {
	case "zip":
		entries, err = zipEntries(body, b)
	case "tar", "tar.gz":
		var r io.Reader = bytes.NewReader(body)
		if kind == "tar.gz" {
			gz, gerr := gzip.NewReader(r)
			if gerr != nil {
				return unpacked{}, uploadErr("", "the body is not gzip data: %v", gerr)
			}
			r = gz
		}
		entries, err = tarEntries(r, b)
	default:
		return unpacked{}, uploadErr("", "unknown archive kind %q", kind)
	}
	if err != nil {
		return unpacked{}, err
	}
	entries = unwrapSingleFolder(entries)
	var out unpacked
	seen := map[string]bool{}
	for _, e := range entries {
		if uploadSkips.Match(e.path) {
			out.Skipped++
			continue
		}
		if seen[e.path] {
			return unpacked{}, uploadErr("files", "the archive holds %s twice", e.path)
		}
		seen[e.path] = true
		out.Files = append(out.Files, sandbox.File{Path: e.path, Data: e.data, Mode: e.mode})
	}
	if len(out.Files) == 0 {
		return unpacked{}, uploadErr("files", "the archive holds no files of an app")
	}
	sort.Slice(out.Files, func(i, j int) bool { return out.Files[i].Path < out.Files[j].Path })
	return out, nil
}

type archiveEntry struct {
	path string
	data []byte
	mode uint32
}

func uploadErr(field, format string, args ...any) error {
	return core.Errf(core.CodeInvalidRequest, field, format, args...)
}

// cleanEntryPath checks an archive entry's name and returns it relative to
// the app's root.
func cleanEntryPath(name string) (string, error) {
	p := strings.TrimPrefix(name, "./")
	switch {
	case p == "" || strings.ContainsRune(p, 0) || strings.Contains(p, `\`) || !utf8.ValidString(p):
		return "", uploadErr("files", "archive entry %q has an unusable name", name)
	case strings.HasPrefix(p, "/"):
		return "", uploadErr("files", "archive entry %q is absolute; entries must be relative to the app's root", name)
	case len(p) > 1024:
		return "", uploadErr("files", "archive entry %q is over 1024 bytes long", name[:64]+"…")
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == ".." {
			return "", uploadErr("files", "archive entry %q leaves the app's root", name)
		}
	}
	return path.Clean(p), nil
}

// budget tracks what an archive unpacks to against the host's limits.
type budget struct {
	limits       core.FileLimits
	files, bytes int64
}

func tooLarge(field, format string, args ...any) error {
	return core.Errf(core.CodeFilesTooLarge, field, format, args...)
}

// take counts one more entry of p whose header claims n bytes.
func (b *budget) take(p string, n int64) error {
	b.files++
	switch l := b.limits; {
	case b.files > int64(l.MaxFiles):
		return tooLarge("files", "the archive holds more than %d files; the limit is %d", l.MaxFiles, l.MaxFiles)
	case n > l.MaxFileBytes:
		return tooLarge("files."+p, "archive entry %s has %d bytes; the limit is %d", p, n, l.MaxFileBytes)
	case b.bytes+n > l.MaxWorkspaceBytes:
		return tooLarge("files", "the archive unpacks to more than %d bytes; the limit is %d", l.MaxWorkspaceBytes, l.MaxWorkspaceBytes)
	}
	return nil
}

// read reads entry p from r, stopping a byte past the per-file limit or
// the rest of the workspace limit: sizes in an archive's headers are
// claims, not facts.
func (b *budget) read(r io.Reader, p string) ([]byte, error) {
	l := b.limits
	limit := min(l.MaxFileBytes, l.MaxWorkspaceBytes-b.bytes)
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, uploadErr("files", "%s could not be read from the archive: %v", p, err)
	}
	n := int64(len(data))
	switch {
	case n > l.MaxFileBytes:
		return nil, tooLarge("files."+p, "archive entry %s unpacks to more than %d bytes; the limit is %d", p, l.MaxFileBytes, l.MaxFileBytes)
	case n > limit:
		return nil, tooLarge("files", "the archive unpacks to more than %d bytes (at entry %s); the limit is %d", l.MaxWorkspaceBytes, p, l.MaxWorkspaceBytes)
	}
	b.bytes += n
	return data, nil
}

func tarEntries(r io.Reader, b *budget) ([]archiveEntry, error) {
	tr := tar.NewReader(r)
	var out []archiveEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, uploadErr("", "the body is not a readable tar archive: %v", err)
		}
		switch h.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
		default:
			return nil, uploadErr("files", "archive entry %q is a link or special file; upload regular files only", h.Name)
		}
		p, err := cleanEntryPath(h.Name)
		if err != nil {
			return nil, err
		}
		if err := b.take(p, h.Size); err != nil {
			return nil, err
		}
		data, err := b.read(tr, p)
		if err != nil {
			return nil, err
		}
		out = append(out, archiveEntry{path: p, data: data, mode: uint32(h.Mode) & 0o755})
	}
}

func zipEntries(body []byte, b *budget) ([]archiveEntry, error) {
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, uploadErr("", "the body is not a readable zip archive: %v", err)
	}
	var out []archiveEntry
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if !f.Mode().IsRegular() {
			return nil, uploadErr("files", "archive entry %q is a link or special file; upload regular files only", f.Name)
		}
		p, err := cleanEntryPath(f.Name)
		if err != nil {
			return nil, err
		}
		if err := b.take(p, int64(f.UncompressedSize64)); err != nil {
			return nil, err
		}
		rc, err := f.Open()
		if err != nil {
			return nil, uploadErr("files", "%s could not be opened: %v", p, err)
		}
		data, err := b.read(rc, p)
		rc.Close()
		if err != nil {
			return nil, err
		}
		mode := uint32(f.Mode().Perm()) & 0o755
		if mode == 0 {
			mode = 0o644
		}
		out = append(out, archiveEntry{path: p, data: data, mode: mode})
	}
	return out, nil
}

// unwrapSingleFolder strips a top folder every entry lies in (archives made
// by zipping a project's folder).
func unwrapSingleFolder(entries []archiveEntry) []archiveEntry {
	if len(entries) == 0 {
		return entries
	}
	top, _, ok := strings.Cut(entries[0].path, "/")
	if !ok || uploadSkips.Match(top) {
		// A lone node_modules/ or .git/ is not the project's folder.
		return entries
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.path, top+"/") {
			return entries
		}
	}
	out := make([]archiveEntry, len(entries))
	for i, e := range entries {
		e.path = strings.TrimPrefix(e.path, top+"/")
		out[i] = e
	}
	return out
}

// archiveKind names the archive a Content-Type announces, or "".
func archiveKind(contentType string) string {
	ct, _, _ := strings.Cut(contentType, ";")
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/zip", "application/x-zip-compressed":
		return "zip"
	case "application/x-tar":
		return "tar"
	case "application/gzip", "application/x-gzip", "application/x-gtar", "application/x-tar+gzip":
		return "tar.gz"
	}
	return ""
}

// validName checks an app name.
func validName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		return core.Errf(core.CodeInvalidRequest, "name", "name is required (at most 200 characters)")
	}
	return nil
}
