package api

import (
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/host/templates"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/gin-gonic/gin"
)

// maxAppBody caps an app created from inline files.
const maxAppBody = 32 << 20

type createAppRequest struct {
	Name string `json:"name"`
	// Files maps a path to its UTF-8 content.
	Files map[string]string `json:"files"`
	// Template names a bundled template to start from instead.
	Template string `json:"template"`
}

// isFileContent: the values of files are contents, which may hold NUL.
func (createAppRequest) isFileContent(path []string) bool {
	return len(path) == 2 && path[0] == "files"
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

// createApp makes an app whose first revision becomes the draft head, from
// inline files or a bundled template (JSON), or from a tar, tar.gz or zip
// archive sent as the body with its Content-Type and ?name=.
func (s *Server) createApp(c *gin.Context) {
	var (
		name, source string
		files        []sandbox.File
		skipped      int
	)
	if kind := archiveKind(c.ContentType()); kind != "" {
		name, source = c.Query("name"), "upload"
		if err := validName(name); err != nil {
			_ = c.Error(err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxAppBody))
		if err != nil {
			_ = c.Error(core.Errf(CodeTooLarge, "", "the archive is over %d bytes", maxAppBody))
			return
		}
		u, err := unpackArchive(kind, body, s.deps.Limits)
		if err != nil {
			_ = c.Error(err)
			return
		}
		files, skipped = u.Files, u.Skipped
	} else {
		var req createAppRequest
		if err := bindJSON(c, maxAppBody, &req); err != nil {
			_ = c.Error(err)
			return
		}
		if err := validName(req.Name); err != nil {
			_ = c.Error(err)
			return
		}
		name, source = req.Name, "upload"
		switch {
		case req.Template != "" && len(req.Files) > 0:
			_ = c.Error(core.Errf(core.CodeInvalidRequest, "template", "give files or a template, not both"))
			return
		case req.Template != "":
			var ok bool
			if files, ok = templates.Files(req.Template); !ok {
				names := []string{}
				for _, t := range templates.List() {
					names = append(names, t.Name)
				}
				_ = c.Error(core.Errf(core.CodeInvalidRequest, "template", "no template %q; there are %s", req.Template, strings.Join(names, ", ")))
				return
			}
			source = "template"
		default:
			for p, content := range req.Files {
				clean, err := cleanEntryPath(p)
				if err != nil || clean != p {
					_ = c.Error(core.Errf(core.CodeInvalidRequest, "files", "file path %q must be relative to the app's root, without . or .. segments", p))
					return
				}
				// The same folders an archive upload leaves out (.git/,
				// node_modules/, build output) stay out of inline apps.
				if uploadSkips.Match(p) {
					skipped++
					continue
				}
				files = append(files, sandbox.File{Path: p, Data: []byte(content)})
			}
			sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
		}
	}
	if err := checkTree(files); err != nil {
		_ = c.Error(err)
		return
	}
	if err := s.checkFiles(files, nil); err != nil {
		_ = c.Error(err)
		return
	}
	ctx := c.Request.Context()
	p := principal(c)
	a := store.App{ID: core.NewID("app"), TenantID: p.TenantID, Name: name}
	// The app's first files get a checkpoint like any later state, so a
	// user can always go back to what they started with.
	cp := &store.Checkpoint{ID: core.NewID("cp"), Kind: store.CheckpointCreated, Label: "created: " + core.Title(name, core.MaxTitleRunes)}
	got, _, err := s.deps.Store.CreateAppWithRevision(ctx, a, store.NewRevision{ID: core.NewID("rev"), Source: source,
		AuthorID: p.UserID, Message: "created", Files: files, Checkpoint: cp})
	if err != nil {
		_ = c.Error(err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"id": got.ID, "name": got.Name, "draft_revision_id": got.DraftRevisionID,
		"created_at": got.CreatedAt, "file_count": len(files), "skipped_files": skipped, "checkpoint_id": cp.ID})
}

// listTemplates names the bundled templates.
func (s *Server) listTemplates(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"items": templates.List()})
}

// listApps pages the tenant's apps newest first (?limit=, ?cursor=).
func (s *Server) listApps(c *gin.Context) {
	pg, ok := pageOf(c)
	if !ok {
		return
	}
	apps, err := s.deps.Store.ListApps(c.Request.Context(), principal(c).TenantID, pg.cursor, pg.limit+1)
	if err != nil {
		_ = c.Error(err)
		return
	}
	apps, next := trimPage(pg, apps, func(a store.App) string { return a.ID })
	out := make([]appJSON, len(apps))
	for i, a := range apps {
		out[i] = appOut(a)
	}
	c.JSON(http.StatusOK, gin.H{"items": out, "next_cursor": next})
}

func (s *Server) getApp(c *gin.Context) {
	a, ok := s.app(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, appOut(a))
}
