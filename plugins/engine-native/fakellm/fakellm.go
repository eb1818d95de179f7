// Package fakellm is a scripted model provider for tests: one local HTTP
// server that speaks the real streaming wire formats of OpenAI chat
// completions (POST /v1/chat/completions) and Anthropic Messages
// (POST /v1/messages). Each model name has a script of turns; the turn
// answered is the number of assistant messages in the request, so a
// conversation gets the same answers whoever asks and however often.
package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call is a tool call the model makes; Args is streamed in the given pieces
// (joined, they need not be valid JSON: that is a test too).
type Call struct {
	ID   string
	Name string
	Args []string
}

// Turn is one scripted answer.
type Turn struct {
	// Text is streamed one piece per chunk.
	Text []string
	// Reasoning is streamed before the text (reasoning_content / thinking).
	Reasoning string
	Calls     []Call
	// Status, when set, answers with this HTTP error (and Message) instead;
	// Times limits it to the first Times attempts at this turn (0: always).
	Status     int
	Message    string
	Times      int
	RetryAfter string
	// CutAfter > 0 drops the connection after that many chunks, on the
	// first attempt at this turn only (every attempt with CutAlways).
	CutAfter  int
	CutAlways bool
	// Hang keeps the stream open after the text until the client leaves;
	// with HangTimes, only the first HangTimes attempts at this turn hang
	// (later ones answer normally).
	Hang      bool
	HangTimes int
	// Stamps streams this many extra text chunks, each "<unix nanos>;",
	// StampEvery apart: the benchmark's clock.
	Stamps     int
	StampEvery time.Duration
	// InputTokens and OutputTokens are the usage reported (defaults 10, 5).
	InputTokens, OutputTokens int64
}

// Request is what the server saw of one request.
type Request struct {
	Path     string
	Model    string
	Turn     int
	Auth     string
	Tools    int
	Messages int
	Body     []byte
}

// Server is the fake provider.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	scripts map[string][]Turn
	// routes are a model's scripts chosen by a marker in the request, so
	// conversations of one model can follow different scripts (ScriptWhen).
	routes   map[string][]route
	attempts map[string]int
	requests []Request
	// contexts are per-model context windows, in request body bytes.
	contexts map[string]int
}

// New starts a server; Close it when done.
func New() *Server {
	s := &Server{scripts: map[string][]Turn{}, routes: map[string][]route{}, attempts: map[string]int{}, contexts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.openAI)
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	s.Server = httptest.NewServer(mux)
	return s
}

// BaseURL is the base URL to configure a model with (".../v1").
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Script sets the turns of a model.
func (s *Server) Script(model string, turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[model] = turns
}

type route struct {
	marker string
	turns  []Turn
}

// ScriptWhen sets the turns of a model's conversations whose request
// contains marker (say, in the prompt), before the model's Script: an
// agent server that needs one model for everything can still be given a
// script per task.
func (s *Server) ScriptWhen(model, marker string, turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes[model] = append(s.routes[model], route{marker: marker, turns: turns})
}

// LimitContext gives a model a context window of maxBytes of request
// body: a larger request is refused as a real provider refuses a prompt
// over the model's context (HTTP 400, OpenAI's context_length_exceeded or
// Anthropic's "prompt is too long"), before its turn is picked.
func (s *Server) LimitContext(model string, maxBytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contexts[model] = maxBytes
}

// Requests returns what the server has seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsFor returns the requests for one model.
func (s *Server) RequestsFor(model string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Model == model {
			out = append(out, r)
		}
	}
	return out
}

type wireMessage struct {
	Role string `json:"role"`
}

type wireRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []wireMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

// pick reads a request and chooses its turn (returned with its index); ok
// is false when the request has already been answered with an error.
func (s *Server) pick(w http.ResponseWriter, r *http.Request, auth string) (Turn, int, bool) {
	body, _ := io.ReadAll(r.Body)
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"body is not JSON"}}`, http.StatusBadRequest)
		return Turn{}, 0, false
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Model: req.Model, Turn: n, Auth: auth, Tools: len(req.Tools), Messages: len(req.Messages), Body: body})
	script, scriptKey := s.scripts[req.Model], req.Model
	for _, rt := range s.routes[req.Model] {
		if bytes.Contains(body, []byte(rt.marker)) {
			script, scriptKey = rt.turns, req.Model+"@"+rt.marker
			break
		}
	}
	if limit := s.contexts[req.Model]; limit > 0 && len(body) > limit {
		s.mu.Unlock()
		writeOverflow(w, r.URL.Path, len(body), limit)
		return Turn{}, 0, false
	}
	key := scriptKey + "#" + strconv.Itoa(n)
	s.attempts[key]++
	attempt := s.attempts[key]
	s.mu.Unlock()
	if !req.Stream {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fakellm only streams", "")
		return Turn{}, 0, false
	}
	if n >= len(script) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("fakellm: model %q has no turn %d scripted", req.Model, n), "")
		return Turn{}, 0, false
	}
	t := script[n]
	if t.Status != 0 && (t.Times == 0 || attempt <= t.Times) {
		typ := "api_error"
		switch {
		case t.Status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case t.Status < 500:
			typ = "invalid_request_error"
		}
		writeError(w, t.Status, typ, t.Message, t.RetryAfter)
		return Turn{}, 0, false
	}
	if t.Hang && t.HangTimes > 0 && attempt > t.HangTimes {
		t.Hang = false
	}
	if t.CutAfter > 0 && attempt > 1 && !t.CutAlways {
		t.CutAfter = 0
	}
	return t, n, true
}

func writeError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	_, _ = w.Write(b)
}

// writeOverflow refuses a request over the model's context in the wire
// format of the path, with sizes in bytes standing in for tokens.
func writeOverflow(w http.ResponseWriter, path string, size, limit int) {
	var body any
	if strings.HasSuffix(path, "/messages") {
		body = map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error",
			"message": fmt.Sprintf("prompt is too long: %d tokens > %d maximum", size, limit)}}
	} else {
		body = map[string]any{"error": map[string]any{"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, size)}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	b, _ := json.Marshal(body)
	_, _ = w.Write(b)
}

// streamer writes server-sent events and counts chunks for CutAfter.
type streamer struct {
	w      http.ResponseWriter
	r      *http.Request
	cut    int
	sent   int
	broken bool
}

func newStreamer(w http.ResponseWriter, r *http.Request, cut int) *streamer {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &streamer{w: w, r: r, cut: cut}
}

// send writes one event; false once the stream is broken or the client left.
func (st *streamer) send(event string, v any) bool {
	if st.broken || st.r.Context().Err() != nil {
		return false
	}
	if st.cut > 0 && st.sent >= st.cut {
		st.drop()
		return false
	}
	var buf bytes.Buffer
	if event != "" {
		fmt.Fprintf(&buf, "event: %s\n", event)
	}
	if s, ok := v.(string); ok {
		fmt.Fprintf(&buf, "data: %s\n\n", s)
	} else {
		b, _ := json.Marshal(v)
		fmt.Fprintf(&buf, "data: %s\n\n", b)
	}
	if _, err := st.w.Write(buf.Bytes()); err != nil {
		st.broken = true
		return false
	}
	st.w.(http.Flusher).Flush()
	st.sent++
	return true
}

// drop breaks the connection without finishing the response, as a crashed
// server or a cut proxy would.
func (st *streamer) drop() {
	st.broken = true
	if hj, ok := st.w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// hang waits for the client to go away.
func (st *streamer) hang() { <-st.r.Context().Done() }

func (t Turn) usage() (int64, int64) {
	in, out := t.InputTokens, t.OutputTokens
	if in == 0 && out == 0 {
		in, out = 10, 5
	}
	return in, out
}

// stamps yields the benchmark's timestamp chunks, paced.
func (t Turn) stamps(emit func(string) bool) bool {
	for i := 0; i < t.Stamps; i++ {
		if i > 0 && t.StampEvery > 0 {
			time.Sleep(t.StampEvery)
		}
		if !emit(strconv.FormatInt(time.Now().UnixNano(), 10) + ";") {
			return false
		}
	}
	return true
}

// CallID makes a tool call id when a script leaves it empty.
func CallID(prefix string, turn, i int) string { return fmt.Sprintf("%s_%d_%d", prefix, turn, i) }

// bearer returns the token of an Authorization header.
func bearer(h string) string { return strings.TrimPrefix(h, "Bearer ") }
