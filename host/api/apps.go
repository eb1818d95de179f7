package api

import (
	"net/http"
	"sort"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/gin-gonic/gin"
)

// maxAppBody caps an app created from inline files.
const maxAppBody = 32 << 20

type createAppRequest struct {
	Name string `json:"name"`
	// Files maps a path to its UTF-8 content.
	Files map[string]string `json:"files"`
}

type appJSON struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	DraftRevisionID string    `json:"draft_revision_id"`
	CreatedAt       time.Time `json:"created_at"`
}

func appOut(a store.App) appJSON {
	return appJSON{ID: a.ID, Name: a.Name, DraftRevisionID: a.DraftRevisionID, CreatedAt: a.CreatedAt}
}

// createApp makes an app from inline files; its first revision becomes the
// draft head.
func (s *Server) createApp(c *gin.Context) {
	var req createAppRequest
	if err := bindJSON(c, maxAppBody, &req); err != nil {
		_ = c.Error(err)
		return
	}
	if req.Name == "" || len(req.Name) > 200 {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "name", "name is required (at most 200 characters)"))
		return
	}
	files := make([]sandbox.File, 0, len(req.Files))
	for p, content := range req.Files {
		if p == "" || p[0] == '/' || len(p) > 1024 {
			_ = c.Error(core.Errf(core.CodeInvalidRequest, "files", "file path %q must be relative", p))
			return
		}
		files = append(files, sandbox.File{Path: p, Data: []byte(content)})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	ctx := c.Request.Context()
	p := principal(c)
	a := store.App{ID: orchestrator.NewID("app"), TenantID: p.TenantID, Name: req.Name}
	if err := s.deps.Store.CreateApp(ctx, a); err != nil {
		_ = c.Error(err)
		return
	}
	rev, _, err := s.deps.Store.CreateRevision(ctx, store.NewRevision{ID: orchestrator.NewID("rev"), AppID: a.ID, Source: "upload", AuthorID: p.UserID, Files: files})
	if err == nil {
		err = s.deps.Store.SetDraft(ctx, a.ID, "", rev.ID)
	}
	if err != nil {
		_ = c.Error(err)
		return
	}
	got, err := s.deps.Store.GetApp(ctx, a.ID)
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, appOut(got))
}

func (s *Server) listApps(c *gin.Context) {
	apps, err := s.deps.Store.ListApps(c.Request.Context(), principal(c).TenantID, 200)
	if err != nil {
		_ = c.Error(err)
		return
	}
	out := make([]appJSON, len(apps))
	for i, a := range apps {
		out[i] = appOut(a)
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
}

func (s *Server) getApp(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, appOut(a))
}
