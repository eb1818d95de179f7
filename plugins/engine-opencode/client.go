package opencode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// client talks to one `opencode serve` over its HTTP API (see
// shared/reference/opencode: every call below was observed on 1.18.33).
type client struct {
	base     string // http://127.0.0.1:port
	password string
	http     *http.Client
}

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Body   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("opencode answered HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// do sends one request with a per-request timeout and decodes a JSON answer
// into out (when not nil). OpenCode answers unknown paths with its web UI
// (200 text/html), so a JSON call insists on a JSON answer.
func (c *client) do(ctx context.Context, method, path string, body, out any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth("opencode", c.password)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &apiError{Status: resp.StatusCode, Body: string(raw)}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
		return fmt.Errorf("opencode %s %s answered %s, not JSON (is this an opencode server of the expected version?)", method, path, ct)
	}
	return json.Unmarshal(raw, out)
}

type healthAnswer struct {
	Healthy bool   `json:"healthy"`
	Version string `json:"version"`
}

func (c *client) health(ctx context.Context, timeout time.Duration) (healthAnswer, error) {
	var h healthAnswer
	err := c.do(ctx, http.MethodGet, "/global/health", nil, &h, timeout)
	return h, err
}

type sessionInfo struct {
	ID string `json:"id"`
}

func (c *client) createSession(ctx context.Context, title string) (string, error) {
	var s sessionInfo
	// A title spares a model request (OpenCode asks the model for one).
	if err := c.do(ctx, http.MethodPost, "/session", map[string]any{"title": title}, &s, 30*time.Second); err != nil {
		return "", err
	}
	if s.ID == "" {
		return "", errors.New("opencode created a session without an id")
	}
	return s.ID, nil
}

func (c *client) sessionExists(ctx context.Context, id string) (bool, error) {
	var s sessionInfo
	err := c.do(ctx, http.MethodGet, "/session/"+id, nil, &s, 10*time.Second)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return false, nil
	}
	return err == nil && s.ID == id, err
}

type promptBody struct {
	Parts  []promptPart    `json:"parts"`
	Model  *promptModel    `json:"model,omitempty"`
	System string          `json:"system,omitempty"`
	Tools  map[string]bool `json:"tools,omitempty"`
}

type promptPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type promptModel struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

func (c *client) promptAsync(ctx context.Context, session string, body promptBody) error {
	return c.do(ctx, http.MethodPost, "/session/"+session+"/prompt_async", body, nil, 30*time.Second)
}

func (c *client) abort(ctx context.Context, session string, timeout time.Duration) error {
	return c.do(ctx, http.MethodPost, "/session/"+session+"/abort", nil, nil, timeout)
}

func (c *client) replyPermission(ctx context.Context, id, reply string) error {
	return c.do(ctx, http.MethodPost, "/permission/"+id+"/reply", map[string]string{"reply": reply}, nil, 15*time.Second)
}

// event is one message of OpenCode's /event stream.
type event struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// subscribe opens /event and returns its events in order on a channel that
// closes when the stream ends; the error (nil on a clean close) is then in
// *errp. The stream ends with ctx.
func (c *client) subscribe(ctx context.Context) (<-chan event, *error, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/event", nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.SetBasicAuth("opencode", c.password)
	// No client timeout: the stream lives as long as the run. Headers are
	// bounded by the transport's ResponseHeaderTimeout.
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, nil, &apiError{Status: resp.StatusCode, Body: string(b)}
	}
	out := make(chan event, 256)
	var streamErr error
	go func() {
		defer close(out)
		defer resp.Body.Close()
		streamErr = readSSE(resp.Body, func(data []byte) bool {
			var ev event
			if json.Unmarshal(data, &ev) != nil || ev.Type == "" {
				return true // not an event we can read; the stream goes on
			}
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out, &streamErr, nil
}

// readSSE calls onData with the data of each server-sent event until the
// stream ends or onData returns false. OpenCode sends `data:` lines only.
func readSSE(r io.Reader, onData func([]byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if !onData(data) {
					return nil
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
