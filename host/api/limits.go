package api

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
)

// checkFiles judges a file set about to be stored (a new app, an upload, an
// edit) against the host's file limits, given the set it replaces (nil for
// a new app). Every handler that stores files calls it, so they all answer
// the same: FILES_TOO_LARGE naming the first file at fault in field, every
// violation in the message. Files already over the limits and kept as they
// are do not count (core.FileLimits.Check), so an app over them can always
// be edited back under them.
func (s *Server) checkFiles(files, prev []sandbox.File) error {
	limit := s.deps.Limits.WithDefaults().MaxFileBytes
	v := s.deps.Limits.Check(sizedFiles(files, limit), sizedFiles(prev, limit))
	if len(v) == 0 {
		return nil
	}
	msgs := make([]string, len(v))
	for i, x := range v {
		msgs[i] = x.Message
	}
	field := "files"
	if v[0].Path != "" {
		field = "files." + v[0].Path
	}
	return core.Errf(core.CodeFilesTooLarge, field, "%s", strings.Join(msgs, "; "))
}

// sizedFiles describes files for the limit check. Only a file over the
// per-file limit needs its digest (to tell one kept as it was from one
// changed), so only those are hashed: the store digests every file again
// when it writes them.
func sizedFiles(files []sandbox.File, limit int64) []core.SizedFile {
	if files == nil {
		return nil
	}
	out := make([]core.SizedFile, len(files))
	for i, f := range files {
		out[i] = core.SizedFile{Path: f.Path, Size: int64(len(f.Data))}
		if out[i].Size > limit {
			sum := sha256.Sum256(f.Data)
			out[i].SHA256 = hex.EncodeToString(sum[:])
		}
	}
	return out
}
