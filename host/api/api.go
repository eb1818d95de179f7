// Package api is the host's HTTP API (Gin): the seed's coding-agent runs
// contract under /admin/apps/{app_id}/coding-agent/, the apps endpoints a
// frontend needs, and health. Every failure is {"detail":{code,message,
// field}} from one middleware; runs execute in the orchestrator, never in a
// request, and streams are served from the durable log.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	openapi "github.com/agenthost/agenthost/api"
	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/console"
	"github.com/agenthost/agenthost/host/endpoints"
	"github.com/agenthost/agenthost/host/orchestrator"
	"github.com/agenthost/agenthost/host/pluginmgr"
	"github.com/agenthost/agenthost/host/store"
	"github.com/agenthost/agenthost/sdk/engine"
	"github.com/agenthost/agenthost/sdk/plugin"
	"github.com/gin-gonic/gin"
	"github.com/hashicorp/go-hclog"
)

// Runs is what the API needs of the orchestrator.
type Runs interface {
	// Ready is checked before anything is written for a new run.
	Ready(engine, sandbox string) error
	Start(ctx context.Context, req orchestrator.StartRequest) (*core.Run, error)
	Cancel(ctx context.Context, runID string) error
	Resume(ctx context.Context, runID string, d engine.PermissionDecision) error
	// Held reports whether this process holds the run; Reattach continues
	// a paused run it does not (paused by an earlier host process).
	Held(runID string) bool
	// HeldScope is the tenant and app of a run this process holds.
	HeldScope(runID string) (tenantID, appID string, ok bool)
	// AwaitsDecision reports whether a held run waits for an unanswered
	// permission question.
	AwaitsDecision(runID string) bool
	// AwaitFinished waits (until ctx ends) for a held run to record its
	// final state.
	AwaitFinished(ctx context.Context, runID string)
	Reattach(ctx context.Context, req orchestrator.StartRequest) (*core.Run, error)
	// KeepsChat reports whether this host keeps a sandbox for the chat.
	KeepsChat(chatID string) bool
	// Unpersisted is the final state of a held run whose end the database
	// has not taken yet (it was unavailable past the outage window).
	Unpersisted(runID string) (*core.Run, bool)
}

// Deps are the API's collaborators.
type Deps struct {
	Store   *store.Store
	Runs    Runs
	Plugins *pluginmgr.Manager
	Hub     *Hub
	Logger  hclog.Logger
	// DefaultEngine and DefaultSandbox are the policy defaults.
	DefaultEngine  string
	DefaultSandbox string
	// Heartbeat is the SSE keep-alive interval (15 s by default).
	Heartbeat time.Duration
	// Metrics, when set, is served at /metrics (Prometheus).
	Metrics http.Handler
	// Endpoints is the operator's key-to-endpoint policy for models; nil
	// means the implicit bindings only.
	Endpoints *endpoints.Policy
	// Limits are the host's file limits, held to by every handler that
	// stores files (checkFiles); zero fields mean the defaults.
	Limits core.FileLimits
	// Cluster, when set, passes commands about runs another live host
	// owns to that host (several hosts on one PostgreSQL database).
	Cluster Cluster
	// CORSOrigins are the browser origins allowed to call the API (exact,
	// normalised by config.ParseOrigins); none means no CORS headers.
	CORSOrigins []string
}

// Cluster is what the API needs of the hosts sharing its database.
type Cluster interface {
	// Route returns "" when a command about the run is for this host (it
	// owns the run, or just took it over from a lost host), else the lease
	// key of the live host that owns it.
	Route(ctx context.Context, runID string) (string, error)
	// RouteChat returns "" when a chat's next run is to be created here,
	// else the lease key of the live host holding the chat's warm sandbox
	// and the id of the chat's run it owns (via).
	RouteChat(ctx context.Context, chatID string) (via, owner string, err error)
	// Forward passes a command to the run's owner and returns the HTTP
	// status and body it answered with.
	Forward(ctx context.Context, runID, owner, kind string, body []byte) (int, []byte, error)
}

// Server is the HTTP API.
type Server struct {
	deps Deps
	log  hclog.Logger
	// handler is the router every request, forwarded ones included, goes
	// through.
	handler http.Handler
	// hostID and leaseKey name this host (SetHost).
	hostID, leaseKey string
	// principals remembers authenticated tokens briefly (principalTTL).
	principals principalCache
}

// New builds the handler (a Gin engine).
func New(d Deps) http.Handler { return NewServer(d).handler }

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// NewServer builds the API; it is an http.Handler that can also carry out
// commands other hosts forward to it (ExecuteCommand).
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = hclog.NewNullLogger()
	}
	if d.Heartbeat == 0 {
		d.Heartbeat = 15 * time.Second
	}
	if d.Endpoints == nil {
		d.Endpoints, _ = endpoints.New(nil) // the implicit bindings always parse
	}
	d.Limits = d.Limits.WithDefaults()
	gin.SetMode(gin.ReleaseMode)
	s := &Server{deps: d, log: d.Logger.Named("api")}
	r := gin.New()
	r.Use(requestID, errorMiddleware(s.log))
	if len(d.CORSOrigins) > 0 {
		r.Use(corsMiddleware(d.CORSOrigins))
	}
	r.Use(checkRequestText)
	r.NoRoute(func(c *gin.Context) {
		_ = c.Error(core.Errf(core.CodeNotFound, "", "no route %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	if d.Metrics != nil {
		r.GET("/metrics", gin.WrapH(d.Metrics))
	}
	// The console's static files take no token (a page cannot send one
	// before it is loaded); every API call the page makes carries it.
	console.Register(r)
	serveSpec(r)

	r.GET("/models", s.authenticate, require(ScopeRead), s.listModels)

	a := r.Group("/admin", s.authenticate)
	a.GET("/token", s.whoami) // any valid token: it describes itself
	a.POST("/models", require(ScopeAdmin), s.createModel)
	a.PUT("/models/default", require(ScopeAdmin), s.setDefaultModel)
	a.POST("/apps", require(ScopeWrite), s.createApp)
	a.GET("/apps", require(ScopeRead), s.listApps)
	a.POST("/agents", require(ScopeWrite), s.createAgent)
	a.GET("/agents", require(ScopeRead), s.listAgents)
	a.GET("/agents/:agent_id", require(ScopeRead), s.getAgent)
	a.PUT("/apps/:app_id/agent", require(ScopeWrite), s.selectAgent)
	a.GET("/apps/:app_id/builder/agent-contract", require(ScopeRead), s.getAgentContract)
	a.GET("/app-templates", require(ScopeRead), s.listTemplates)
	a.GET("/apps/:app_id", require(ScopeRead), s.getApp)

	ca := a.Group("/apps/:app_id/coding-agent")
	a.GET("/apps/:app_id/revisions", require(ScopeRead), s.listRevisions)
	a.POST("/apps/:app_id/revisions", require(ScopeWrite), s.createRevision)
	a.GET("/apps/:app_id/revisions/:revision_id", require(ScopeRead), s.getRevision)
	a.GET("/apps/:app_id/revisions/:revision_id/diff", require(ScopeRead), s.diffRevisions)
	a.GET("/apps/:app_id/revisions/:revision_id/files/*path", require(ScopeRead), s.revisionFile)
	a.GET("/apps/:app_id/revisions/:revision_id/archive", require(ScopeRead), s.revisionArchive)
	ca.GET("/capabilities", require(ScopeRead), s.capabilities)
	ca.GET("/checkpoints", require(ScopeRead), s.listCheckpoints)
	ca.POST("/checkpoints/:checkpoint_id/restore", require(ScopeWrite), s.restoreCheckpoint)
	ca.GET("/chat-sessions", require(ScopeRead), s.listChats)
	ca.POST("/chat-sessions", require(ScopeWrite), s.createChat)
	ca.GET("/chat-sessions/:chat_id", require(ScopeRead), s.getChat)
	ca.POST("/runs", require(ScopeWrite), s.createRun)
	ca.GET("/runs", require(ScopeRead), s.listRuns)
	ca.GET("/runs/:run_id", require(ScopeRead), s.getRun)
	ca.GET("/runs/:run_id/events", require(ScopeRead), s.runEvents)
	ca.POST("/runs/:run_id/stream-ticket", require(ScopeRead), s.createStreamTicket)
	// The stream takes a stream ticket as well as a token (a browser's
	// EventSource cannot send Authorization), so it is outside group a.
	r.GET("/admin/apps/:app_id/coding-agent/runs/:run_id/stream", s.authenticateStream, require(ScopeRead), s.streamRun)
	ca.POST("/runs/:run_id/cancel", require(ScopeWrite), s.cancelRun)
	ca.POST("/runs/:run_id/resume", require(ScopeWrite), s.resumeRun)
	s.handler = r
	return s
}

// serveSpec serves the API's OpenAPI document, without authentication: as
// written at /openapi.yaml and as JSON at /openapi.json. The JSON is
// converted on the first request for it, not at start-up: few hosts are
// ever asked, and converting (about 4 MB allocated to parse the YAML, for
// 100 KB of JSON) at start-up grew every host's heap for nothing.
func serveSpec(r *gin.Engine) {
	r.GET("/openapi.json", func(c *gin.Context) {
		doc, err := openapi.JSON()
		if err != nil {
			// The document is embedded and package api's tests load it:
			// only a broken build gets here.
			_ = c.Error(err)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", doc)
	})
	r.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml; charset=utf-8", openapi.YAML()) })
}

// requestID tags every request (X-Request-ID is echoed when sane: it goes
// into logs, error bodies and a response header, so printable ASCII only).
func requestID(c *gin.Context) {
	id := c.GetHeader("X-Request-ID")
	if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = "req_" + hex.EncodeToString(b[:])
	}
	c.Set("request_id", id)
	c.Header("X-Request-ID", id)
	c.Next()
}

func (s *Server) ready(c *gin.Context) {
	code := http.StatusOK
	dbState := "ok"
	// A database that answers a ping may still refuse writes (a full disk,
	// a restart under way): the store's own record of failing writes says.
	health := s.deps.Store.Health()
	if err := s.deps.Store.Ping(c.Request.Context()); err != nil {
		code, dbState = http.StatusServiceUnavailable, err.Error()
	} else if !health.OK {
		code, dbState = http.StatusServiceUnavailable, "unavailable: writes fail: "+health.Cause
	}
	var plugins []gin.H
	if s.deps.Plugins != nil {
		for _, p := range s.deps.Plugins.Statuses() {
			if p.State != pluginmgr.StateHealthy && p.State != pluginmgr.StateDisabled {
				code = http.StatusServiceUnavailable
			}
			entry := gin.H{"name": p.Name, "kind": p.Kind, "version": p.Version, "state": p.State, "reason": p.Reason, "restarts": p.Restarts}
			if p.Kind == plugin.KindSandbox {
				// How far the backend keeps commands from the host (none,
				// uid, namespaces): an operator should not have to guess.
				entry["isolation"] = plugin.IsolationOf(p.Capabilities)
			}
			plugins = append(plugins, entry)
		}
	}
	out := gin.H{"database": dbState, "plugins": plugins}
	if !health.OK {
		out["database_writes"] = gin.H{"ok": false, "cause": health.Cause, "since": health.Since.UTC(), "outage_window_ms": health.Window.Milliseconds()}
	}
	if s.hostID != "" {
		out["host"] = gin.H{"id": s.hostID, "lease": s.leaseKey}
	}
	c.JSON(code, out)
}

// validID accepts the ids this host issues (and nothing that could be a
// path or an injection): letters, digits, _ and -.
func validID(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// app loads the path's app if the caller's tenant owns it; another tenant's
// app answers exactly like a missing one.
func (s *Server) app(c *gin.Context) (store.App, bool) {
	id := c.Param("app_id")
	if !validID(id) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "app_id", "malformed app id"))
		return store.App{}, false
	}
	a, err := s.deps.Store.GetApp(c.Request.Context(), id)
	if err == nil && a.TenantID != principal(c).TenantID {
		err = core.Errf(core.CodeNotFound, "", "app %s not found", id)
	}
	if err != nil {
		_ = c.Error(err)
		return store.App{}, false
	}
	return a, true
}

// run loads the path's run if it belongs to the path's app of the caller.
// One read: a run records its app and tenant, and apps are never deleted,
// so a run of the path's app in the caller's tenant proves the app is the
// caller's; anything else is 404 as before.
// runScope checks that the request's run exists in its app and tenant,
// and returns its id, app and tenant only: a run this process holds needs
// no read for it (a stream opened right after the run was created).
func (s *Server) runScope(c *gin.Context) (*core.Run, bool) {
	id, appID := c.Param("run_id"), c.Param("app_id")
	if validID(id) && validID(appID) {
		if tenant, app, ok := s.deps.Runs.HeldScope(id); ok {
			if app != appID || tenant != principal(c).TenantID {
				_ = c.Error(core.Errf(core.CodeNotFound, "", "run %s not found", id))
				return nil, false
			}
			return &core.Run{ID: id, AppID: app, TenantID: tenant}, true
		}
	}
	return s.run(c)
}

func (s *Server) run(c *gin.Context) (*core.Run, bool) {
	appID := c.Param("app_id")
	if !validID(appID) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "app_id", "malformed app id"))
		return nil, false
	}
	id := c.Param("run_id")
	if !validID(id) {
		_ = c.Error(core.Errf(core.CodeInvalidRequest, "run_id", "malformed run id"))
		return nil, false
	}
	r, err := s.deps.Store.GetRun(c.Request.Context(), id)
	if err == nil && (r.AppID != appID || r.TenantID != principal(c).TenantID) {
		err = core.Errf(core.CodeNotFound, "", "run %s not found", id)
	}
	if err != nil {
		_ = c.Error(err)
		return nil, false
	}
	return r, true
}
