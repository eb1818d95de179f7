package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/gin-gonic/gin"
)

// With several hosts on one database, a run executes on the host that owns
// it, and a cancel or resume sent to another host is passed on to the
// owner as a command (Deps.Cluster): the owner carries the request out
// through its own router, as if it had been sent there, and its answer —
// status and body — is the answer the client gets. Semantics cannot drift
// between the two ways in, and the first decision wins on every host.

// forwardedKey marks an in-process request carrying a command another host
// passed on; its value is the principal the sending host authenticated.
// Only this process can put it in a request's context.
type forwardedKey struct{}

// forwardedCommand is a request another host passes on to a run's owner.
type forwardedCommand struct {
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Body      string          `json:"body"`
	Principal store.Principal `json:"principal"`
	RequestID string          `json:"request_id"`
	// IdempotencyKey is the request's Idempotency-Key header.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// forwardable are the requests that may be passed on: a run's cancel and
// resume; and createRun, the chat's next run to the host holding its warm
// sandbox.
var (
	forwardable       = regexp.MustCompile(`^/admin/apps/[A-Za-z0-9_-]+/coding-agent/runs/([A-Za-z0-9_-]+)/(cancel|resume)$`)
	forwardableCreate = regexp.MustCompile(`^/admin/apps/[A-Za-z0-9_-]+/coding-agent/runs$`)
)

// Router is the API's router (a Gin engine), what ServeHTTP serves.
func (s *Server) Router() http.Handler { return s.handler }

// ErrOwnerGone is what Cluster.Forward returns (wrapped or as is) when the
// owner did not take the command up, which was then withdrawn: it was not
// carried out and will not be.
var ErrOwnerGone = errors.New("the run's owner did not take the command up")

// SetHost names this host in /readyz: its id and lease key among the
// hosts sharing its database.
func (s *Server) SetHost(id, leaseKey string) { s.hostID, s.leaseKey = id, leaseKey }

// SetCluster makes the API pass commands about runs other live hosts own
// to them; call it before serving.
func (s *Server) SetCluster(c Cluster) { s.deps.Cluster = c }

// routed passes the request about run r on to the host that owns r when
// that is another live host, answers with what the owner answered, and
// reports whether it did. A run whose owner is lost is taken over by this
// host first (Cluster.Route), and then handled here.
func (s *Server) routed(c *gin.Context, r *core.Run, kind string) bool {
	ctx := c.Request.Context()
	if s.deps.Cluster == nil || ctx.Value(forwardedKey{}) != nil || r.Status.Terminal() || s.deps.Runs.Held(r.ID) {
		return false
	}
	owner, err := s.deps.Cluster.Route(ctx, r.ID)
	if err != nil {
		_ = c.Error(err)
		return true
	}
	if owner == "" {
		return false
	}
	var body []byte
	if c.Request.Body != nil {
		body, err = io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, maxJSONBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				err = core.Errf(CodeTooLarge, "", "the request body is over %d bytes", maxJSONBody)
			}
			_ = c.Error(err)
			return true
		}
	}
	err = s.forward(c, r.ID, owner, kind, body)
	if errors.Is(err, ErrOwnerGone) {
		err = core.Errf(core.CodeOwnerUnreachable, "", "the host that owns run %s (%s) does not answer; its runs are taken over when its lease lapses, within seconds: retry then", r.ID, owner)
		c.Header("Retry-After", "2")
	}
	if err != nil {
		_ = c.Error(err)
	}
	return true
}

// forward passes the request, with body, on to owner as a command about
// run via, and answers with the owner's status and body.
func (s *Server) forward(c *gin.Context, via, owner, kind string, body []byte) error {
	cmd, _ := json.Marshal(forwardedCommand{Method: c.Request.Method, Path: c.Request.URL.Path, Body: string(body),
		Principal: principal(c), RequestID: c.GetString("request_id"), IdempotencyKey: c.GetHeader("Idempotency-Key")})
	status, answer, err := s.deps.Cluster.Forward(c.Request.Context(), via, owner, kind, cmd)
	if err != nil {
		return err
	}
	c.Header("X-Agenthost-Run-Owner", owner)
	c.Data(status, "application/json; charset=utf-8", answer)
	return nil
}

// routedChat passes a chat's next run on to the live host that ran the
// chat's newest run — its warm sandbox is there — and answers with what
// that host answered; it reports whether it did. req is the parsed body.
func (s *Server) routedChat(c *gin.Context, req createRunRequest) bool {
	ctx := c.Request.Context()
	if s.deps.Cluster == nil || ctx.Value(forwardedKey{}) != nil || s.deps.Runs.KeepsChat(req.ChatSessionID) {
		return false // this host keeps the chat's sandbox: no lookup needed
	}
	via, owner, err := s.deps.Cluster.RouteChat(ctx, req.ChatSessionID)
	if err != nil || owner == "" {
		return false // a failed lookup costs the warm start, not the run
	}
	body, err := json.Marshal(req)
	if err != nil {
		return false
	}
	err = s.forward(c, via, owner, "create", body)
	if errors.Is(err, ErrOwnerGone) {
		return false // that host seems gone: the run starts here, in a fresh sandbox
	}
	if err != nil {
		_ = c.Error(err)
	}
	return true
}

// ExecuteCommand carries out a request another host passed on for a run
// this host owns and returns the status and body to answer with. Only a
// cancel or resume of the command's own run is accepted.
func (s *Server) ExecuteCommand(ctx context.Context, cmd store.RunCommand) (int, []byte) {
	var fc forwardedCommand
	if err := json.Unmarshal(cmd.Body, &fc); err != nil {
		return commandError(http.StatusBadRequest, core.CodeInvalidRequest, "the forwarded command is not JSON")
	}
	m := forwardable.FindStringSubmatch(fc.Path)
	ok := m != nil && m[1] == cmd.RunID && m[2] == cmd.Kind
	if cmd.Kind == "create" {
		ok = forwardableCreate.MatchString(fc.Path)
	}
	if fc.Method != http.MethodPost || !ok {
		return commandError(http.StatusBadRequest, core.CodeInvalidRequest, "only a run's cancel or resume, or a chat's next run, may be forwarded")
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, forwardedKey{}, fc.Principal), fc.Method, fc.Path, strings.NewReader(fc.Body))
	if err != nil {
		return commandError(http.StatusBadRequest, core.CodeInvalidRequest, err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	if fc.RequestID != "" {
		req.Header.Set("X-Request-ID", fc.RequestID)
	}
	if fc.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", fc.IdempotencyKey)
	}
	rec := &answerRecorder{header: http.Header{}}
	s.handler.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.status, rec.body.Bytes()
}

func commandError(status int, code, msg string) (int, []byte) {
	var body errorBody
	body.Detail.Code, body.Detail.Message = code, msg
	b, _ := json.Marshal(body)
	return status, b
}

// answerRecorder is the response writer of a forwarded request.
type answerRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answerRecorder) Header() http.Header { return a.header }

func (a *answerRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(b)
}

func (a *answerRecorder) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}
