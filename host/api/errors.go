package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/host/store"
	"github.com/gin-gonic/gin"
	"github.com/hashicorp/go-hclog"
)

// API-level error codes (the domain's live in core).
const (
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeForbidden       = "FORBIDDEN"
	CodeTooLarge        = "REQUEST_TOO_LARGE"
	CodeInternal        = "INTERNAL_ERROR"
)

// statusOf maps a code to its HTTP status: the one place that does.
var statusOf = map[string]int{
	core.CodeNotFound:                 http.StatusNotFound,
	core.CodeInvalidRequest:           http.StatusBadRequest,
	core.CodeModelUnavailable:         http.StatusBadRequest,
	core.CodeEngineUnavailable:        http.StatusBadRequest,
	core.CodeEngineUnsupportedRuntime: http.StatusBadRequest,
	core.CodeSandboxRequired:          http.StatusBadRequest,
	core.CodeSandboxUnavailable:       http.StatusBadRequest,
	core.CodeRevisionConflict:         http.StatusConflict,
	core.CodeRunNotPaused:             http.StatusConflict,
	core.CodeRunFinished:              http.StatusConflict,
	core.CodeIdempotencyKeyReused:     http.StatusConflict,
	core.CodeHostShutdown:             http.StatusServiceUnavailable,
	core.CodeLeaseLost:                http.StatusConflict,
	core.CodeOwnerUnreachable:         http.StatusServiceUnavailable,
	core.CodeStoreUnavailable:         http.StatusServiceUnavailable,
	core.CodeFilesTooLarge:            http.StatusRequestEntityTooLarge,
	CodeUnauthenticated:               http.StatusUnauthorized,
	CodeForbidden:                     http.StatusForbidden,
	CodeTooLarge:                      http.StatusRequestEntityTooLarge,
	CodeModelEndpointNotAllowed:       http.StatusBadRequest,
}

// retryAfterStore is the Retry-After (seconds) of an answer refused while
// the database does not take writes: about the time a restart takes.
const retryAfterStore = "5"

// storeWritable answers 503 STORE_UNAVAILABLE (with Retry-After) and
// returns false while the database does not take writes: a new run could
// not be recorded, so it is refused rather than accepted and lost.
func (s *Server) storeWritable(c *gin.Context) bool {
	h := s.deps.Store.Health()
	if h.OK {
		return true
	}
	_ = c.Error(core.Errf(core.CodeStoreUnavailable, "", "the database is not taking writes (%s) since %s; try again shortly",
		h.Cause, h.Since.UTC().Format(time.RFC3339)))
	return false
}

// errorBody is the error envelope every failure answers with.
type errorBody struct {
	Detail struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Field     string `json:"field,omitempty"`
		RequestID string `json:"request_id,omitempty"`
	} `json:"detail"`
}

// errorMiddleware renders the first error a handler recorded with c.Error.
// A failure that has no code is a 500 carrying the request id, which is in
// the log with the cause.
func errorMiddleware(log hclog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if p := recover(); p != nil {
				_ = c.Error(fmt.Errorf("panic: %v", p))
				render(c, log)
			}
		}()
		c.Next()
		render(c, log)
	}
}

func render(c *gin.Context, log hclog.Logger) {
	if len(c.Errors) == 0 || c.Writer.Written() {
		return
	}
	err := c.Errors[0].Err
	var body errorBody
	code := core.CodeOf(err)
	var ce *core.Error
	if errors.As(err, &ce) {
		body.Detail.Message, body.Detail.Field = ce.Message, ce.Field
	}
	if code == "" && errors.Is(err, store.ErrNotFound) {
		code, body.Detail.Message = core.CodeNotFound, "not found"
	}
	if cause, transient := store.Transient(err); code == "" && transient {
		code, body.Detail.Message = core.CodeStoreUnavailable, "the database is unavailable for now ("+cause+"); try again shortly"
	}
	if code == core.CodeStoreUnavailable {
		c.Header("Retry-After", retryAfterStore)
	}
	status, known := statusOf[code]
	if !known {
		rid := c.GetString("request_id")
		log.Error("request failed", "request_id", rid, "method", c.Request.Method, "path", c.FullPath(), "error", err)
		status, code = http.StatusInternalServerError, CodeInternal
		body.Detail.Message = "internal error; quote request_id " + rid + " when reporting it"
		body.Detail.RequestID = rid
	}
	body.Detail.Code = code
	c.AbortWithStatusJSON(status, body)
}

// maxJSONBody caps request bodies (apps with inline files get more).
const maxJSONBody = 1 << 20

// bindJSON decodes a body strictly: unknown fields, trailing data, a body
// over limit, malformed JSON and text that is not UTF-8 or holds a NUL
// (checkJSONText) are all 4xx with a code, never a 500.
func bindJSON(c *gin.Context, limit int64, v any) error {
	if c.Request.Body == nil {
		return core.Errf(core.CodeInvalidRequest, "", "the request body is empty; send a JSON object")
	}
	// Read whole: the text check needs the raw bytes the decoder would
	// otherwise consume (and it buffers them anyway).
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return core.Errf(CodeTooLarge, "", "the request body is over %d bytes", limit)
		}
		return core.Errf(core.CodeInvalidRequest, "", "could not read the request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return core.Errf(core.CodeInvalidRequest, "", "the request body is empty; send a JSON object")
		case errors.As(err, &typeErr):
			return core.Errf(core.CodeInvalidRequest, typeErr.Field, "field %s must be %s", typeErr.Field, typeErr.Type)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return core.Errf(core.CodeInvalidRequest, f, "unknown field %q", f)
		}
		return core.Errf(core.CodeInvalidRequest, "", "malformed JSON: %v", err)
	}
	if dec.More() {
		return core.Errf(core.CodeInvalidRequest, "", "the body holds more than one JSON value")
	}
	return checkJSONText(body, v)
}

// bindOptionalJSON is bindJSON for endpoints whose body may be left out: an
// empty body leaves v as it is.
func bindOptionalJSON(c *gin.Context, limit int64, v any) error {
	if c.Request.Body == nil || c.Request.ContentLength == 0 {
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return core.Errf(CodeTooLarge, "", "the request body is over %d bytes", limit)
		}
		return core.Errf(core.CodeInvalidRequest, "", "could not read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	return bindJSON(c, limit, v)
}
