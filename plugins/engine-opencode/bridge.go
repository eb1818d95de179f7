package opencode

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/sdk/engine"
)

// bridge is a loopback HTTP endpoint the seeded custom tools call: it finds
// the run of the OpenCode session and makes the call through that run's
// host, so contract tools behave as they do for every engine.
type bridge struct {
	once  sync.Once
	err   error
	url   string
	token string

	mu   sync.Mutex
	runs map[string]bridgeRun // OpenCode session → run
}

type bridgeRun struct {
	ctx  context.Context
	host engine.Host
}

// start listens on first use; the address and token stay for the life of
// the engine process (servers are started with them in their environment).
func (b *bridge) start() error {
	b.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.err = err
			return
		}
		b.url = "http://" + l.Addr().String()
		b.token = newSecret()
		b.runs = map[string]bridgeRun{}
		go func() { _ = http.Serve(l, http.HandlerFunc(b.serve)) }()
	})
	return b.err
}

func (b *bridge) env() []string {
	return []string{"AGENTHOST_TOOL_URL=" + b.url, "AGENTHOST_TOOL_TOKEN=" + b.token}
}

func (b *bridge) attach(ctx context.Context, session string, host engine.Host) func() {
	b.mu.Lock()
	b.runs[session] = bridgeRun{ctx: ctx, host: host}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.runs, session)
		b.mu.Unlock()
	}
}

func (b *bridge) serve(w http.ResponseWriter, r *http.Request) {
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if r.Method != http.MethodPost || subtle.ConstantTimeCompare([]byte(auth), []byte(b.token)) != 1 {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	tool, ok := strings.CutPrefix(r.URL.Path, "/tools/")
	if !ok || tool == "" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		SessionID string          `json:"sessionID"`
		CallID    string          `json:"callID"`
		Args      json.RawMessage `json:"args"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	run, found := b.runs[body.SessionID]
	b.mu.Unlock()
	if !found {
		http.Error(w, "no agenthost run is attached to this session", http.StatusConflict)
		return
	}
	args := body.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	res, err := run.host.CallTool(run.ctx, engine.ToolCall{CallID: body.CallID, Tool: tool, Input: args})
	if err != nil {
		http.Error(w, "the tool call failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if !res.OK {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(res.Error)
		return
	}
	_, _ = w.Write(res.Output)
}
