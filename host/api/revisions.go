package api

import (
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/apply"
	"github.com/agenthost/agenthost/host/linediff"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/gin-gonic/gin"
)

// maxDiffBytes bounds one diff response: a revision pair that differs by
// more is described by its file lists, and the text is cut.
const maxDiffBytes = 4 << 20

type revisionJSON struct {
	ID            string    `json:"id"`
	AppID         string    `json:"app_id"`
	ParentID      string    `json:"parent_id"`
	MergeParentID string    `json:"merge_parent_id,omitempty"`
	Source        string    `json:"source"`
	RunID         string    `json:"run_id,omitempty"`
	Message       string    `json:"message"`
	FileCount     int       `json:"file_count"`
	TotalSize     int64     `json:"total_size"`
	Applied       bool      `json:"applied"`
	IsDraft       bool      `json:"is_draft"`
	CreatedAt     time.Time `json:"created_at"`
}

func revisionOut(r store.Revision, draft string) revisionJSON {
	return revisionJSON{ID: r.ID, AppID: r.AppID, ParentID: r.ParentID, MergeParentID: r.MergeParentID, Source: r.Source,
		RunID: r.RunID, Message: r.Message, FileCount: r.FileCount, TotalSize: r.TotalSize, Applied: r.Applied,
		IsDraft: r.ID == draft, CreatedAt: r.CreatedAt}
}

type manifestJSON struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Mode   uint32 `json:"mode"`
}

// revision loads the path's (or the named query's) revision when it belongs
// to app; another app's revision answers 404 like a missing one.
func (s *Server) revision(c *gin.Context, a store.App, id, field string) (store.Revision, []store.ManifestEntry, bool) {
	if !validID(id) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, field, "malformed revision id"))
		return store.Revision{}, nil, false
	}
	rev, manifest, err := s.deps.Store.GetRevision(c.Request.Context(), id)
	if err == nil && rev.AppID != a.ID {
		err = core.Errf(core.CodeNotFound, "", "revision %s not found", id)
	}
	if err != nil {
		_ = c.Error(err)
		return store.Revision{}, nil, false
	}
	return rev, manifest, true
}

// pathRevision loads the revision the path names; "draft" names the app's
// draft head.
func (s *Server) pathRevision(c *gin.Context, a store.App) (store.Revision, []store.ManifestEntry, bool) {
	id := c.Param("revision_id")
	if id == "draft" {
		id = a.DraftRevisionID
	}
	return s.revision(c, a, id, "revision_id")
}

// listRevisions pages an app's revisions newest first.
func (s *Server) listRevisions(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	pg, ok := pageOf(c)
	if !ok {
		return
	}
	revs, err := s.deps.Store.ListRevisions(c.Request.Context(), a.ID, pg.cursor, pg.limit+1)
	if err != nil {
		_ = c.Error(err)
		return
	}
	revs, next := trimPage(pg, revs, func(r store.Revision) string { return r.ID })
	out := make([]revisionJSON, len(revs))
	for i, r := range revs {
		out[i] = revisionOut(r, a.DraftRevisionID)
	}
	c.JSON(http.StatusOK, gin.H{"items": out, "next_cursor": next})
}

// getRevision answers a revision with its manifest; "draft" names the
// app's draft head.
func (s *Server) getRevision(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	rev, manifest, ok := s.pathRevision(c, a)
	if !ok {
		return
	}
	files := make([]manifestJSON, len(manifest))
	for i, m := range manifest {
		files[i] = manifestJSON{Path: m.Path, SHA256: m.SHA256, Size: m.Size, Mode: m.Mode}
	}
	c.JSON(http.StatusOK, gin.H{"revision": revisionOut(rev, a.DraftRevisionID), "files": files})
}

// revisionFile answers one file's bytes at a revision.
func (s *Server) revisionFile(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	rev, _, ok := s.pathRevision(c, a)
	if !ok {
		return
	}
	p := strings.TrimPrefix(c.Param("path"), "/")
	if clean, err := cleanEntryPath(p); err != nil || clean != p {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "path", "give the file's path relative to the app's root, without . or .. segments"))
		return
	}
	data, err := s.deps.Store.ReadRevisionFile(c.Request.Context(), rev.ID, p)
	if err != nil {
		_ = c.Error(err)
		return
	}
	ctype := mime.TypeByExtension(path.Ext(p))
	if ctype == "" || linediff.IsBinary(data) && strings.HasPrefix(ctype, "text/") {
		ctype = "application/octet-stream"
		if !linediff.IsBinary(data) {
			ctype = "text/plain; charset=utf-8"
		}
	}
	c.Header("X-Content-Type-Options", "nosniff")
	// A file of the app is data, never a page of this API's origin.
	c.Header("Content-Security-Policy", "sandbox")
	c.Data(http.StatusOK, ctype, data)
}

type fileChangeJSON struct {
	Path   string `json:"path"`
	Status string `json:"status"`
}

// diffRevisions answers the unified diff from one revision to another:
// ?from= (default the revision's parent) to the path's revision.
func (s *Server) diffRevisions(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	to, _, ok := s.pathRevision(c, a)
	if !ok {
		return
	}
	fromID := c.Query("from")
	if fromID == "" {
		fromID = to.ParentID
	}
	var fromFiles []sandbox.File
	ctx := c.Request.Context()
	if fromID != "" {
		from, _, ok := s.revision(c, a, fromID, "from")
		if !ok {
			return
		}
		var err error
		if fromFiles, err = s.deps.Store.RevisionFiles(ctx, from.ID); err != nil {
			_ = c.Error(err)
			return
		}
	}
	toFiles, err := s.deps.Store.RevisionFiles(ctx, to.ID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	changes, text, truncated := unifiedDiff(fromFiles, toFiles)
	if c.Query("format") == "text" {
		// For terminals and patch tools: the diff itself.
		c.Data(http.StatusOK, "text/x-diff; charset=utf-8", []byte(text))
		return
	}
	// PureJSON: a diff of HTML must read as HTML, not \u003c escapes.
	c.PureJSON(http.StatusOK, gin.H{"from": fromID, "to": to.ID, "files": changes, "diff": text, "truncated": truncated})
}

// unifiedDiff renders the change from one file set to another, files in path
// order; binary files are named, not shown.
func unifiedDiff(from, to []sandbox.File) ([]fileChangeJSON, string, bool) {
	old := map[string][]byte{}
	for _, f := range from {
		old[f.Path] = f.Data
	}
	cur := map[string][]byte{}
	for _, f := range to {
		cur[f.Path] = f.Data
	}
	set := apply.ChangedPaths(from, to)
	var b strings.Builder
	changes := []fileChangeJSON{}
	truncated := false
	for _, ch := range set {
		changes = append(changes, fileChangeJSON{Path: ch.Path, Status: ch.Status})
		if truncated {
			continue
		}
		var a, z []byte
		oldPath, newPath := ch.Path, ch.Path
		switch ch.Status {
		case "added":
			z, oldPath = cur[ch.Path], ""
		case "deleted":
			a, newPath = old[ch.Path], ""
		default:
			a, z = old[ch.Path], cur[ch.Path]
		}
		var part string
		if linediff.IsBinary(a) || linediff.IsBinary(z) {
			part = "Binary files differ: " + ch.Path + "\n"
		} else {
			part = linediff.Unified(oldPath, newPath, a, z, 3)
		}
		if b.Len()+len(part) > maxDiffBytes {
			truncated = true
			continue
		}
		b.WriteString(part)
	}
	return changes, b.String(), truncated
}

type checkpointJSON struct {
	store.Checkpoint
	IsDraft bool `json:"is_draft"`
}

// listCheckpoints pages an app's checkpoints newest first
// (?chat_session_id= narrows to one conversation).
func (s *Server) listCheckpoints(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	pg, ok := pageOf(c)
	if !ok {
		return
	}
	chat := c.Query("chat_session_id")
	if chat != "" && !validID(chat) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "chat_session_id", "malformed chat_session_id"))
		return
	}
	cps, err := s.deps.Store.ListCheckpoints(c.Request.Context(), a.ID, chat, pg.cursor, pg.limit+1)
	if err != nil {
		_ = c.Error(err)
		return
	}
	cps, next := trimPage(pg, cps, func(cp store.Checkpoint) string { return cp.ID })
	out := make([]checkpointJSON, len(cps))
	for i, cp := range cps {
		out[i] = checkpointJSON{Checkpoint: cp, IsDraft: cp.RevisionID == a.DraftRevisionID}
	}
	c.JSON(http.StatusOK, gin.H{"items": out, "next_cursor": next})
}

type restoreRequest struct {
	// ChatSessionID is the conversation to tell about the restore; default
	// the checkpoint's own.
	ChatSessionID string `json:"chat_session_id"`
}

// restoreCheckpoint makes a checkpoint's files the draft head as a new
// revision; newer revisions stay.
func (s *Server) restoreCheckpoint(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	var req restoreRequest
	if err := bindOptionalJSON(c, 1<<10, &req); err != nil {
		_ = c.Error(err)
		return
	}
	id := c.Param("checkpoint_id")
	if !validID(id) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "checkpoint_id", "malformed checkpoint id"))
		return
	}
	ctx := c.Request.Context()
	p := principal(c)
	cp, err := s.deps.Store.GetCheckpoint(ctx, id)
	if err == nil && cp.AppID != a.ID {
		err = core.Errf(core.CodeNotFound, "", "checkpoint %s not found", id)
	}
	if err != nil {
		_ = c.Error(err)
		return
	}
	if req.ChatSessionID != "" {
		cs, err := s.deps.Store.GetChatSession(ctx, req.ChatSessionID)
		if err == nil && (cs.AppID != a.ID || cs.UserID != p.UserID) {
			err = core.Errf(core.CodeNotFound, "chat_session_id", "chat session %s not found", req.ChatSessionID)
		}
		if err != nil {
			_ = c.Error(err)
			return
		}
	}
	res, err := apply.Restore(ctx, s.deps.Store, a.ID, cp, p.UserID, req.ChatSessionID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{
		"revision":          revisionOut(res.Revision, res.Revision.ID),
		"checkpoint":        checkpointJSON{Checkpoint: res.Checkpoint, IsDraft: true},
		"restored_from":     res.From,
		"draft_revision_id": res.Revision.ID,
	})
}

type editRequest struct {
	// BaseRevisionID must be the app's draft head: an edit made on an older
	// revision would silently drop what came after it.
	BaseRevisionID string `json:"base_revision_id"`
	// Files maps a path to its new UTF-8 content, or null to delete it.
	Files   map[string]*string `json:"files"`
	Message string             `json:"message"`
}

// isFileContent: the values of files are contents, which may hold NUL.
func (editRequest) isFileContent(path []string) bool {
	return len(path) == 2 && path[0] == "files"
}

// createRevision records a user's own edit of the draft (an editor's save) as
// a revision on top of the head, and moves the head to it.
func (s *Server) createRevision(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	var req editRequest
	if err := bindJSON(c, maxAppBody, &req); err != nil {
		_ = c.Error(err)
		return
	}
	if req.BaseRevisionID == "" {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "base_revision_id", "base_revision_id is required: the revision the edit was made on"))
		return
	}
	if req.BaseRevisionID != a.DraftRevisionID {
		_ = c.Error(core.Errf(core.CodeRevisionConflict, "base_revision_id", "the app's draft head is %s, not %s", a.DraftRevisionID, req.BaseRevisionID))
		return
	}
	if len(req.Files) == 0 {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "files", "files is required: path to new content, or null to delete"))
		return
	}
	if len(req.Message) > 1000 {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "message", "message is over 1000 characters"))
		return
	}
	ctx := c.Request.Context()
	current, err := s.deps.Store.RevisionFiles(ctx, a.DraftRevisionID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	byPath := map[string]sandbox.File{}
	for _, f := range current {
		byPath[f.Path] = f
	}
	for p, content := range req.Files {
		clean, err := cleanEntryPath(p)
		if err != nil || clean != p {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, "files", "file path %q must be relative to the app's root, without . or .. segments", p))
			return
		}
		if content == nil {
			if _, ok := byPath[p]; !ok {
				_ = c.Error(core.Errf(core.CodeInvalidRequest, "files", "cannot delete %s: the draft has no such file", p))
				return
			}
			delete(byPath, p)
			continue
		}
		f := byPath[p]
		f.Path, f.Data = p, []byte(*content)
		byPath[p] = f
	}
	files := make([]sandbox.File, 0, len(byPath))
	for _, f := range byPath {
		files = append(files, f)
	}
	// The whole tree, not only the edit: "a/b" is fine alone but not
	// beside a file "a" of the draft.
	if err := checkTree(files); err != nil {
		_ = c.Error(err)
		return
	}
	if err := s.checkFiles(files, current); err != nil {
		_ = c.Error(err)
		return
	}
	msg := req.Message
	if msg == "" {
		msg = "edit"
	}
	cp := &store.Checkpoint{ID: core.NewID("cp"), Kind: store.CheckpointEdit, Label: core.Title(msg, core.MaxTitleRunes)}
	rev, _, err := s.deps.Store.CreateRevision(ctx, store.NewRevision{ID: core.NewID("rev"), AppID: a.ID, ParentID: a.DraftRevisionID,
		Source: "manual", AuthorID: principal(c).UserID, Message: msg, Files: files, AdvanceDraft: true, DraftFrom: a.DraftRevisionID,
		Checkpoint: cp})
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"revision": revisionOut(rev, rev.ID), "changes": apply.ChangedPaths(current, files),
		"checkpoint": checkpointJSON{Checkpoint: *cp, IsDraft: true}})
}
