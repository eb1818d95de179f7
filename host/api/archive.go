package api

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/gin-gonic/gin"
)

// archiveTypes are the formats a revision downloads as (?format=), with
// the Content-Type each is served with.
var archiveTypes = map[string]string{"zip": "application/zip", "tar.gz": "application/gzip"}

// revisionArchive streams a revision's files as a zip (the default) or a
// tar.gz archive, the files at its root with their modes, each read from
// the store as it is written: a large app never sits in memory whole. The
// archive uploads back as it is (POST /admin/apps with its Content-Type).
func (s *Server) revisionArchive(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	rev, manifest, ok := s.pathRevision(c, a)
	if !ok {
		return
	}
	format := c.DefaultQuery("format", "zip")
	ctype, known := archiveTypes[format]
	if !known {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "format", `format must be "zip" or "tar.gz"`))
		return
	}
	ctx := c.Request.Context()
	open := func(e store.ManifestEntry) (io.Reader, error) {
		r, _, err := s.deps.Store.OpenBlob(ctx, e.SHA256)
		return r, err
	}
	c.Header("Content-Type", ctype)
	c.Header("Content-Disposition", `attachment; filename="`+archiveBaseName(a, rev.ID)+"."+format+`"`)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Status(http.StatusOK)
	var err error
	if format == "zip" {
		err = writeZip(c.Writer, manifest, rev.CreatedAt, open)
	} else {
		err = writeTarGz(c.Writer, manifest, rev.CreatedAt, open)
	}
	if err != nil {
		// The status is sent: the error envelope cannot follow. Cutting
		// the connection makes the client see a broken download rather
		// than a short archive that looks whole.
		if ctx.Err() == nil {
			s.log.Error("revision archive", "app", a.ID, "revision", rev.ID, "error", err)
		}
		abortResponse(c)
	}
}

// abortResponse closes the connection of a response already under way.
// (Gin's error middleware recovers panics, so http.ErrAbortHandler would
// not reach net/http; hijacking the connection does the same.)
func abortResponse(c *gin.Context) {
	conn, _, err := http.NewResponseController(c.Writer).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// archiveBaseName is an archive's file name without its extension: the
// app's name in characters safe in any file system and header, then the
// revision id. An app whose name keeps none of them is named by its id.
func archiveBaseName(a store.App, revisionID string) string {
	var b strings.Builder
	dash := false
	for _, r := range a.Name {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
		// Long names make unwieldy file names; 64 bytes keep them readable.
		if b.Len() >= 64 {
			break
		}
	}
	name := strings.Trim(b.String(), "-.")
	if name == "" {
		name = a.ID
	}
	return name + "-" + revisionID
}

// fileMode is a manifest entry's mode as a file's (0: a plain file).
func fileMode(m uint32) fs.FileMode {
	if m == 0 {
		return 0o644
	}
	return fs.FileMode(m) & fs.ModePerm
}

func writeZip(w io.Writer, manifest []store.ManifestEntry, modified time.Time, open func(store.ManifestEntry) (io.Reader, error)) error {
	zw := zip.NewWriter(w)
	for _, e := range manifest {
		h := &zip.FileHeader{Name: e.Path, Method: zip.Deflate, Modified: modified}
		h.SetMode(fileMode(e.Mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if err := copyEntry(fw, e, open); err != nil {
			return err
		}
	}
	return zw.Close()
}

func writeTarGz(w io.Writer, manifest []store.ManifestEntry, modified time.Time, open func(store.ManifestEntry) (io.Reader, error)) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range manifest {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.Path, Size: e.Size, Mode: int64(fileMode(e.Mode)), ModTime: modified, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if err := copyEntry(tw, e, open); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// copyEntry writes one file's content, which must be the size the
// manifest says (a tar header has already promised it).
func copyEntry(w io.Writer, e store.ManifestEntry, open func(store.ManifestEntry) (io.Reader, error)) error {
	r, err := open(e)
	if err != nil {
		return fmt.Errorf("open %s: %w", e.Path, err)
	}
	n, err := io.Copy(w, r)
	if err != nil {
		return fmt.Errorf("copy %s: %w", e.Path, err)
	}
	if n != e.Size {
		return fmt.Errorf("copy %s: %d bytes stored, the manifest says %d", e.Path, n, e.Size)
	}
	return nil
}
