package apiclient

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"
)

// App is an app as GET /admin/apps/{id} shows it.
type App struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	DraftRevisionID string    `json:"draft_revision_id"`
	CreatedAt       time.Time `json:"created_at"`
	// FileCount, SkippedFiles and CheckpointID are given when the app is
	// created: its files, those left out (generated folders, .git) and its
	// first checkpoint.
	FileCount    int    `json:"file_count,omitempty"`
	SkippedFiles int    `json:"skipped_files,omitempty"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// Raw is the app as the API sent it.
	Raw json.RawMessage `json:"-"`
}

// ArchiveTypes are the Content-Types of the archive kinds an app can be
// created from (and the formats a revision downloads as).
var ArchiveTypes = map[string]string{"zip": "application/zip", "tar": "application/x-tar", "tar.gz": "application/gzip"}

// CreateAppFromArchive makes an app from a zip, tar or tar.gz archive
// (kind is a key of ArchiveTypes).
func (c *Client) CreateAppFromArchive(ctx context.Context, name, kind string, archive io.Reader) (App, error) {
	var a App
	raw, err := c.do(ctx, request{method: http.MethodPost, path: "/admin/apps", query: url.Values{"name": {name}},
		body: archive, ctype: ArchiveTypes[kind]}, &a)
	a.Raw = raw
	return a, err
}

// CreateAppFromTemplate makes an app from a bundled template.
func (c *Client) CreateAppFromTemplate(ctx context.Context, name, template string) (App, error) {
	var a App
	raw, err := c.do(ctx, request{method: http.MethodPost, path: "/admin/apps", json: map[string]string{"name": name, "template": template}}, &a)
	a.Raw = raw
	return a, err
}

// ListApps pages the tenant's apps, newest first.
func (c *Client) ListApps(ctx context.Context, o ListOptions) (Page[App], error) {
	return getPage[App](ctx, c, "/admin/apps", o.query())
}

// GetApp reads one app.
func (c *Client) GetApp(ctx context.Context, app string) (App, error) {
	var a App
	raw, err := c.get(ctx, appPath(app, ""), nil, &a)
	a.Raw = raw
	return a, err
}

// Revision is a revision of an app, without its files.
type Revision struct {
	ID        string    `json:"id"`
	ParentID  string    `json:"parent_id"`
	Source    string    `json:"source"`
	RunID     string    `json:"run_id,omitempty"`
	Message   string    `json:"message"`
	FileCount int       `json:"file_count"`
	TotalSize int64     `json:"total_size"`
	Applied   bool      `json:"applied"`
	IsDraft   bool      `json:"is_draft"`
	CreatedAt time.Time `json:"created_at"`
}

// FileEntry is one file of a revision's manifest.
type FileEntry struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Mode   uint32 `json:"mode"`
}

// RevisionDetail is a revision with its manifest.
type RevisionDetail struct {
	Revision Revision        `json:"revision"`
	Files    []FileEntry     `json:"files"`
	Raw      json.RawMessage `json:"-"`
}

// GetRevision reads a revision and its manifest; rev "draft" is the
// app's draft head.
func (c *Client) GetRevision(ctx context.Context, app, rev string) (RevisionDetail, error) {
	var r RevisionDetail
	raw, err := c.get(ctx, appPath(app, "/revisions/"+seg(rev)), nil, &r)
	r.Raw = raw
	return r, err
}

// DownloadArchive writes a revision's files as an archive (format "zip"
// or "tar.gz") to w and returns the file name the host suggests.
func (c *Client) DownloadArchive(ctx context.Context, app, rev, format string, w io.Writer) (string, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: appPath(app, "/revisions/"+seg(rev)+"/archive"),
		query: url.Values{"format": {format}}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		// The host cuts the connection when it cannot finish an archive.
		return "", &ConnError{URL: c.BaseURL, Err: err}
	}
	_, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	return params["filename"], nil
}

// Diff is the unified diff from revision from ("" for rev's parent) to
// rev ("draft" for the draft head), as text.
func (c *Client) Diff(ctx context.Context, app, rev, from string) (string, error) {
	q := url.Values{"format": {"text"}}
	if from != "" {
		q.Set("from", from)
	}
	resp, err := c.send(ctx, request{method: http.MethodGet, path: appPath(app, "/revisions/"+seg(rev)+"/diff"), query: q})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", &ConnError{URL: c.BaseURL, Err: err}
	}
	return string(b), nil
}

// Checkpoint is a state of an app a user can go back to.
type Checkpoint struct {
	ID            string    `json:"id"`
	RevisionID    string    `json:"revision_id"`
	RunID         string    `json:"run_id,omitempty"`
	ChatSessionID string    `json:"chat_session_id,omitempty"`
	Kind          string    `json:"kind"`
	Label         string    `json:"label"`
	IsDraft       bool      `json:"is_draft"`
	CreatedAt     time.Time `json:"created_at"`
}

// ListCheckpoints pages an app's checkpoints, newest first.
func (c *Client) ListCheckpoints(ctx context.Context, app string, o ListOptions) (Page[Checkpoint], error) {
	return getPage[Checkpoint](ctx, c, agentPath(app, "/checkpoints"), o.query())
}

// Restored is what restoring a checkpoint made: a new draft revision and
// its checkpoint.
type Restored struct {
	DraftRevisionID string          `json:"draft_revision_id"`
	RestoredFrom    json.RawMessage `json:"restored_from"`
	Checkpoint      Checkpoint      `json:"checkpoint"`
	Raw             json.RawMessage `json:"-"`
}

// RestoreCheckpoint makes a checkpoint's files the app's draft, as a new
// revision (nothing newer is lost).
func (c *Client) RestoreCheckpoint(ctx context.Context, app, checkpoint string) (Restored, error) {
	var r Restored
	raw, err := c.do(ctx, request{method: http.MethodPost, path: agentPath(app, "/checkpoints/"+seg(checkpoint)+"/restore")}, &r)
	r.Raw = raw
	return r, err
}

// Model is a model runs may use.
type Model struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Provider      string `json:"provider"`
	ProviderModel string `json:"provider_model"`
	Scope         string `json:"scope"`
	Active        bool   `json:"active"`
	IsDefault     bool   `json:"is_default"`
	EndpointHost  string `json:"endpoint_host"`
}

// ListModels lists the models the tenant can use (GET /models).
func (c *Client) ListModels(ctx context.Context) (Page[Model], error) {
	return getPage[Model](ctx, c, "/models", nil)
}

// Chat is a conversation of runs on an app.
type Chat struct {
	ID        string          `json:"id"`
	AppID     string          `json:"app_id"`
	Title     string          `json:"title"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Messages  []Message       `json:"messages,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

// Message is one turn of a chat.
type Message struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	RunID     string    `json:"run_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ListChats pages an app's chat sessions (the caller's).
func (c *Client) ListChats(ctx context.Context, app string, o ListOptions) (Page[Chat], error) {
	return getPage[Chat](ctx, c, agentPath(app, "/chat-sessions"), o.query())
}

// GetChat reads a chat session with its messages.
func (c *Client) GetChat(ctx context.Context, app, chat string) (Chat, error) {
	var ch Chat
	raw, err := c.get(ctx, agentPath(app, "/chat-sessions/"+seg(chat)), nil, &ch)
	ch.Raw = raw
	return ch, err
}
