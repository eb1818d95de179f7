package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openapi "github.com/agenthost/agenthost/api"
	"github.com/agenthost/agenthost/host/api"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every request the tests send to a host they started, and every answer,
// is checked against api/openapi.yaml by specTransport, which TestMain
// installs as http.DefaultTransport (every client the tests use goes
// through it: http.DefaultClient, http.Get, &http.Client{Timeout: …}). A
// mismatch fails the test that owns the host. Requests sent invalid on
// purpose (the bad-input corpus, malformed bodies, unknown routes) carry
// the invalidOnPurpose header: only their answers are checked, and those
// must still be the documented error envelope and codes.

// invalidOnPurpose marks a request the test sends invalid on purpose; the
// transport strips it before the request leaves.
const invalidOnPurpose = "X-Agenthost-Test-Invalid-On-Purpose"

// markInvalid marks req as invalid on purpose (see invalidOnPurpose).
func markInvalid(req *http.Request) { req.Header.Set(invalidOnPurpose, "1") }

// specDoc is the OpenAPI document compiled for validation.
type specDoc struct {
	doc    *openapi3.T
	router routers.Router
	// events maps an event type to its envelope schema
	// (x-agenthost-events).
	events map[string]*openapi3.Schema
	// noRoute is the answer to a request for a route the host lacks.
	noRoute *openapi3.Response
}

// loadSpec loads and compiles the document once per test binary.
var loadSpec = sync.OnceValues(func() (*specDoc, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.YAML())
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is not valid OpenAPI: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	s := &specDoc{doc: doc, router: router, events: map[string]*openapi3.Schema{}}
	refs, ok := doc.Extensions["x-agenthost-events"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("api/openapi.yaml has no x-agenthost-events map")
	}
	for typ, ref := range refs {
		name := strings.TrimPrefix(fmt.Sprint(ref), "#/components/schemas/")
		sr := doc.Components.Schemas[name]
		if sr == nil || sr.Value == nil {
			return nil, fmt.Errorf("x-agenthost-events: %s names %v, which is not a schema", typ, ref)
		}
		s.events[typ] = sr.Value
	}
	nf := doc.Components.Responses["NotFound"]
	if nf == nil || nf.Value == nil {
		return nil, fmt.Errorf("api/openapi.yaml has no components/responses/NotFound")
	}
	s.noRoute = nf.Value
	// The archive bodies of POST /admin/apps are bytes, and so are the
	// console's files.
	for _, ct := range []string{"application/zip", "application/x-zip-compressed", "application/x-tar", "application/gzip",
		"application/x-gzip", "application/x-gtar", "application/x-tar+gzip",
		"text/html", "text/javascript", "text/css", "image/svg+xml"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
	return s, nil
})

// specOptions: authentication is the host's to judge (tests send no or
// bad tokens on purpose and expect 401); the answer's status must be one
// the operation documents.
var specOptions = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
}

// specServers maps the address of each host a test started to the test.
var specServers sync.Map // host:port → *specOwner

type specOwner struct {
	t    testing.TB
	done atomic.Bool
}

// errorf fails the owning test, unless it has ended (a stream read by a
// goroutine that outlived it). kin-openapi's errors quote the whole value
// at fault: the message is cut to stay readable.
func (o *specOwner) errorf(format string, args ...any) {
	if o.done.Load() {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxSpecMessage {
		msg = msg[:maxSpecMessage] + " …"
	}
	o.t.Errorf("%s", msg)
}

// maxSpecMessage bounds one validation failure's message.
const maxSpecMessage = 3000

// checkAgainstSpec makes the transport validate the traffic of srv, a host
// started by t. Benchmarks are left out: validation would be measured with
// the host.
func checkAgainstSpec(t testing.TB, srv *httptest.Server) {
	if _, bench := t.(*testing.B); bench {
		return
	}
	_, err := loadSpec()
	require.NoError(t, err)
	o := &specOwner{t: t}
	host := srv.Listener.Addr().String()
	specServers.Store(host, o)
	t.Cleanup(func() {
		o.done.Store(true)
		specServers.Delete(host)
	})
}

// specTransport validates the traffic to registered hosts.
type specTransport struct{ base http.RoundTripper }

// catchAllRoutes find the catch-all paths (GET …/files/{path} and
// /console/{asset}): gorilla/mux matches one segment per variable, so
// their slashes are escaped for routing.
var catchAllRoutes = []*regexp.Regexp{
	regexp.MustCompile(`^(/admin/apps/[^/]+/revisions/[^/]+/files/)(.+)$`),
	regexp.MustCompile(`^(/console/)(.+)$`),
}

func (st specTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	v, ok := specServers.Load(req.URL.Host)
	if !ok {
		return st.base.RoundTrip(req)
	}
	if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		// A CORS preflight is the browser's protocol, not an operation
		// (docs/api.md); TestCORS checks its answers.
		return st.base.RoundTrip(req)
	}
	owner := v.(*specOwner)
	spec, _ := loadSpec() // loaded by checkAgainstSpec
	onPurpose := req.Header.Get(invalidOnPurpose) != ""

	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	// What leaves: the request without the mark, its body intact.
	out := req.Clone(req.Context())
	out.Header.Del(invalidOnPurpose)
	out.Body, out.GetBody = bodyOf(body)

	// The request as the validator sees it.
	probe := out.Clone(req.Context())
	probe.Body, _ = bodyOf(body)
	if probe.URL.Path == "/console/" {
		// The console's empty asset is its index page.
		probe.URL.Path, probe.URL.RawPath = "/console/index.html", ""
	}
	for _, re := range catchAllRoutes {
		if m := re.FindStringSubmatch(probe.URL.EscapedPath()); m != nil {
			probe.URL.RawPath = m[1] + strings.ReplaceAll(m[2], "/", "%2F")
		}
	}
	if len(body) > 0 && probe.Header.Get("Content-Type") == "" {
		// The host decodes JSON whatever the header says (the spec says
		// so); the tests' bodies go without one.
		probe.Header.Set("Content-Type", "application/json")
	}
	name := req.Method + " " + req.URL.Path
	route, params, routeErr := spec.router.FindRoute(probe)
	var input *openapi3filter.RequestValidationInput
	if routeErr == nil {
		name = fmt.Sprintf("%s %s (%s)", req.Method, route.Path, route.Operation.OperationID)
		input = &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: specOptions}
		if !onPurpose {
			if err := openapi3filter.ValidateRequest(req.Context(), input); err != nil {
				owner.errorf("openapi: the request %s %s does not match the spec: %v", req.Method, req.URL.RequestURI(), err)
			}
		}
	} else if !onPurpose {
		owner.errorf("openapi: %s %s is no operation of the spec (%v); mark a request sent there on purpose with markInvalid",
			req.Method, req.URL.RequestURI(), routeErr)
	}

	resp, err := st.base.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	if input == nil {
		// An unknown route: the host's answer is the no-route error.
		checkNoRoute(owner, spec, name, resp)
		return resp, nil
	}
	rv := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: resp.StatusCode, Header: resp.Header, Options: specOptions}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A stream is checked frame by frame as the test reads it.
		opts := *specOptions
		opts.ExcludeResponseBody = true
		rv.Options, rv.Body = &opts, http.NoBody
		if err := openapi3filter.ValidateResponse(req.Context(), rv); err != nil {
			owner.errorf("openapi: %s answered %d against the spec: %v", name, resp.StatusCode, err)
		}
		resp.Body = &sseChecker{ReadCloser: resp.Body, owner: owner, spec: spec, name: name}
		return resp, nil
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		owner.errorf("openapi: %s: reading the answer: %v", name, err)
		return resp, nil
	}
	rv.SetBodyBytes(raw)
	if err := openapi3filter.ValidateResponse(req.Context(), rv); err != nil {
		owner.errorf("openapi: %s answered %d against the spec: %v\nbody: %.1000s", name, resp.StatusCode, err, raw)
	}
	if route.Operation.OperationID == "listRunEvents" && resp.StatusCode == http.StatusOK {
		var page struct {
			Items []json.RawMessage `json:"items"`
		}
		if json.Unmarshal(raw, &page) == nil {
			for _, it := range page.Items {
				if err := spec.checkEvent(it); err != nil {
					owner.errorf("openapi: %s: an event does not match its schema: %v\nevent: %.1000s", name, err, it)
				}
			}
		}
	}
	return resp, nil
}

func bodyOf(b []byte) (io.ReadCloser, func() (io.ReadCloser, error)) {
	if b == nil {
		return http.NoBody, nil
	}
	get := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	rc, _ := get()
	return rc, get
}

// checkNoRoute holds the answer to a request for no operation of the spec
// to the documented no-route answer: 404 NOT_FOUND (Gin's trailing-slash
// redirects aside).
func checkNoRoute(owner *specOwner, spec *specDoc, name string, resp *http.Response) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return
	case http.StatusNotFound:
	default:
		owner.errorf("openapi: %s is no operation of the spec, and it answered %d, not 404", name, resp.StatusCode)
		return
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var v any
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err == nil {
		err = spec.noRoute.Content.Get("application/json").Schema.Value.VisitJSON(v)
	}
	if err != nil {
		owner.errorf("openapi: %s (no route) answered 404 that is not the documented NotFound: %v\nbody: %.1000s", name, err, raw)
	}
}

// checkEvent validates one event envelope against its type's schema.
func (s *specDoc) checkEvent(raw []byte) error {
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	typ, _ := v["event"].(string)
	schema := s.events[typ]
	if schema == nil {
		return fmt.Errorf("event type %q is not in x-agenthost-events", typ)
	}
	return schema.VisitJSON(v)
}

// sseChecker validates every frame of an event stream as the test reads
// it: `id` is the envelope's seq, `event` its type, `data` the envelope,
// valid against its type's schema; comments (heartbeats) are skipped.
type sseChecker struct {
	io.ReadCloser
	owner *specOwner
	spec  *specDoc
	name  string
	line  []byte // a line read in part
	frame struct{ id, event, data string }
	any   bool // the frame has a field
}

func (c *sseChecker) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	for _, b := range p[:n] {
		if b != '\n' {
			c.line = append(c.line, b)
			continue
		}
		c.takeLine(string(c.line))
		c.line = c.line[:0]
	}
	return n, err
}

func (c *sseChecker) takeLine(line string) {
	switch {
	case line == "":
		if c.any {
			c.check()
		}
		c.frame, c.any = struct{ id, event, data string }{}, false
		return
	case strings.HasPrefix(line, ":"):
		return // a comment: the heartbeat
	}
	field, value, _ := strings.Cut(line, ": ")
	switch field {
	case "id":
		c.frame.id = value
	case "event":
		c.frame.event = value
	case "data":
		if c.frame.data != "" {
			c.owner.errorf("openapi: %s: a frame has more than one data line (the envelope is one line of JSON)", c.name)
		}
		c.frame.data = value
	default:
		c.owner.errorf("openapi: %s: a frame has a line the spec does not describe: %q", c.name, line)
	}
	c.any = true
}

func (c *sseChecker) check() {
	f := c.frame
	if err := c.spec.checkEvent([]byte(f.data)); err != nil {
		c.owner.errorf("openapi: %s: the %s frame (id %s) does not match its schema: %v\ndata: %.1000s", c.name, f.event, f.id, err, f.data)
		return
	}
	var env struct {
		Event string `json:"event"`
		Seq   int64  `json:"seq"`
	}
	_ = json.Unmarshal([]byte(f.data), &env)
	if f.event != env.Event || f.id != strconv.FormatInt(env.Seq, 10) {
		c.owner.errorf("openapi: %s: a frame's id %q and event %q are not its envelope's seq %d and event %q", c.name, f.id, f.event, env.Seq, env.Event)
	}
}

// specPath is a Gin route's path in OpenAPI's form: :param and *param
// become {param}.
func specPath(ginPath string) string {
	segs := strings.Split(ginPath, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

// TestSpecCoversRoutes: the operations of api/openapi.yaml are exactly the
// routes the API registers, both ways.
func TestSpecCoversRoutes(t *testing.T) {
	spec, err := loadSpec()
	require.NoError(t, err)
	h := api.New(api.Deps{Metrics: http.NotFoundHandler()})
	registered := map[string]bool{}
	for _, r := range h.(*gin.Engine).Routes() {
		registered[r.Method+" "+specPath(r.Path)] = true
	}
	documented := map[string]bool{}
	for path, item := range spec.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var missing, extra []string
	for r := range registered {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !registered[d] {
			extra = append(extra, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	assert.Empty(t, missing, "routes the API registers that api/openapi.yaml does not describe")
	assert.Empty(t, extra, "operations of api/openapi.yaml the API does not register")
	require.NotEmpty(t, registered)
}

// TestSpecServed: the host serves the document without authentication, as
// YAML and as the same document in JSON.
func TestSpecServed(t *testing.T) {
	srv := httptest.NewServer(api.New(api.Deps{}))
	defer srv.Close()
	checkAgainstSpec(t, srv)
	get := func(path string) (*http.Response, []byte) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	resp, y := get("/openapi.yaml")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/yaml; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, openapi.YAML(), y)
	resp, j := get("/openapi.json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	fromJSON, err := openapi3.NewLoader().LoadFromData(j)
	require.NoError(t, err)
	require.NoError(t, fromJSON.Validate(context.Background()))
	fromYAML, err := loadSpec()
	require.NoError(t, err)
	a, err := json.Marshal(fromJSON)
	require.NoError(t, err)
	b, err := json.Marshal(fromYAML.doc)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(a), "/openapi.json is /openapi.yaml in JSON")
}

// TestSSECheckerCatchesMismatch: the stream checker fails a frame whose
// payload breaks its type's schema, and one whose id is not its seq.
func TestSSECheckerCatchesMismatch(t *testing.T) {
	spec, err := loadSpec()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, stream string
		fails        bool
	}{
		{"good", "id: 1\nevent: run.accepted\ndata: " + `{"event":"run.accepted","run_id":"r","app_id":"a","seq":1,"ts":"2025-01-01T00:00:00Z","payload":{"run_id":"r","engine":"mock","sandbox_backend":"local"}}` + "\n\n: keep-alive\n\n", false},
		{"undocumented payload field", "id: 1\nevent: run.accepted\ndata: " + `{"event":"run.accepted","run_id":"r","app_id":"a","seq":1,"ts":"2025-01-01T00:00:00Z","payload":{"run_id":"r","engine":"mock","sandbox_backend":"local","x":1}}` + "\n\n", true},
		{"id is not seq", "id: 2\nevent: run.accepted\ndata: " + `{"event":"run.accepted","run_id":"r","app_id":"a","seq":1,"ts":"2025-01-01T00:00:00Z","payload":{"run_id":"r","engine":"mock","sandbox_backend":"local"}}` + "\n\n", true},
		{"unknown type", "id: 1\nevent: run.exploded\ndata: " + `{"event":"run.exploded","run_id":"r","app_id":"a","seq":1,"ts":"2025-01-01T00:00:00Z","payload":{}}` + "\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			c := &sseChecker{ReadCloser: io.NopCloser(strings.NewReader(tc.stream)), owner: &specOwner{t: rec}, spec: spec, name: "stream"}
			_, err := io.Copy(io.Discard, bufio.NewReaderSize(c, 7)) // odd reads: frames split across them
			require.NoError(t, err)
			assert.Equal(t, tc.fails, len(rec.errors) > 0, "%v", rec.errors)
		})
	}
}

// recordingTB records Errorf instead of failing.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestSpecTransportCatchesMismatch: the validating transport fails an
// answer with an undocumented field, code or status, a request that breaks
// the spec unless it is marked, and a request to no operation unless it
// is marked; and it passes what the spec allows.
func TestSpecTransportCatchesMismatch(t *testing.T) {
	answer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-ID", "req_1")
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	notFound := `{"detail":{"code":"NOT_FOUND","message":"m"}}`
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		path    string
		invalid bool
		fails   bool
	}{
		{"documented", answer(200, `{"status":"ok"}`), "/healthz", false, false},
		{"undocumented field", answer(200, `{"status":"ok","uptime":1}`), "/healthz", false, true},
		{"undocumented code", answer(404, `{"detail":{"code":"BOGUS","message":"m"}}`), "/admin/apps/app_1", false, true},
		{"code of another status", answer(404, `{"detail":{"code":"INVALID_REQUEST","message":"m"}}`), "/admin/apps/app_1", false, true},
		{"undocumented status", answer(418, notFound), "/admin/apps/app_1", false, true},
		{"no X-Request-ID", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"ok"}`)
		}, "/healthz", false, true},
		{"invalid request", answer(400, `{"detail":{"code":"INVALID_REQUEST","message":"m","field":"limit"}}`), "/admin/apps?limit=0", false, true},
		{"invalid request on purpose", answer(400, `{"detail":{"code":"INVALID_REQUEST","message":"m","field":"limit"}}`), "/admin/apps?limit=0", true, false},
		{"invalid on purpose, bad answer", answer(400, `{"detail":{"code":"NOT_FOUND","message":"m"}}`), "/admin/apps?limit=0", true, true},
		{"unknown route", answer(404, notFound), "/admin/nothing", false, true},
		{"unknown route on purpose", answer(404, notFound), "/admin/nothing", true, false},
		{"unknown route on purpose, not 404", answer(200, `{}`), "/admin/nothing", true, true},
		{"a file's path holds slashes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-ID", "req_1")
			w.Header().Set("Content-Security-Policy", "sandbox")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "x")
		}, "/admin/apps/app_1/revisions/draft/files/src/a/b.ts", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			rec := &recordingTB{TB: t}
			checkAgainstSpec(rec, srv)
			req, err := http.NewRequest("GET", srv.URL+tc.path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer x")
			if tc.invalid {
				markInvalid(req)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.fails, len(rec.errors) > 0, "%v", rec.errors)
		})
	}
}

// TestEveryEventTypeMatchesItsSchema: runs that between them emit every
// event type of x-agenthost-events, read as a stream and as the /events
// listing; the transport validates each event against its type's schema
// (and this test that none of the types went unseen).
func TestEveryEventTypeMatchesItsSchema(t *testing.T) {
	eachDialect(t, func(e *env) {
		t := e.t.(*testing.T)
		app := e.createApp(e.tokenA)
		base := "/admin/apps/" + app + "/coding-agent/runs/"
		seen := map[string]bool{}
		read := func(runID string, stop func(frame) bool) {
			resp := e.openStream(e.tokenA, app, runID, "")
			frames, _ := readSSE(t, resp, stop)
			resp.Body.Close()
			for _, f := range frames {
				seen[f.Event] = true
			}
		}
		// Everything but a failure and a cancel: a status, text, a
		// permission asked and granted, a tool that fails and one that
		// edits, an engine-reported tool that fails, the result applied.
		full := e.createRun(e.tokenA, app, strings.Join([]string{
			"status planning reading the request",
			"say Let me look.",
			"ask deploy Deploy?",
			"tool coding_agent_write_file {}",
			"report started call-9 lint {\"strict\":true}",
			"report failed call-9 lint",
			patchLine(t, "index.html", "<h1>hi</h1>", "<h1>every event</h1>"),
			"say Done.",
		}, "\n"))
		read(full.ID, func(f frame) bool { return f.Event == "run.paused" })
		require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+full.ID+"/resume", map[string]string{"decision": "allow"}, nil))
		read(full.ID, nil)
		failed := e.createRun(e.tokenA, app, "say trying\nfail MOCK_BROKEN it broke")
		read(failed.ID, nil)
		cancelled := e.createRun(e.tokenA, app, "say working\nsleep 60s")
		read(cancelled.ID, func(f frame) bool { return f.Event == "assistant.delta" })
		require.Equal(t, http.StatusAccepted, e.do(e.tokenA, "POST", base+cancelled.ID+"/cancel", nil, nil))
		read(cancelled.ID, nil)
		for _, id := range []string{full.ID, failed.ID, cancelled.ID} {
			var page struct {
				Items []struct {
					Event string `json:"event"`
				} `json:"items"`
				Done bool `json:"done"`
			}
			require.Equal(t, http.StatusOK, e.do(e.tokenA, "GET", base+id+"/events", nil, &page))
			assert.True(t, page.Done, id)
			for _, it := range page.Items {
				assert.True(t, seen[it.Event], "%s: the listing has %s, the stream did not", id, it.Event)
			}
		}
		spec, err := loadSpec()
		require.NoError(t, err)
		for typ := range spec.events {
			assert.True(t, seen[typ], "no run emitted %s", typ)
		}
	})
}
