// Package apiclient speaks agenthost's public HTTP API and nothing else: it
// is what `agenthost apps|run|runs|…` (cmd/agenthost/client) are built on,
// and it imports no package of the host (host/archtest holds it to that),
// so everything it does a script can do with curl.
//
// Every method takes the caller's context. A failure the API answered is
// an *Error carrying the envelope's code, message and field; a host that
// could not be reached is a *ConnError.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client is a connection to one host, authenticated by one token.
type Client struct {
	// BaseURL is the host's root, e.g. http://127.0.0.1:8080.
	BaseURL string
	// Token is the API token sent as Authorization: Bearer.
	Token string
	// HTTP sends the requests; nil is a client without an overall
	// timeout (a stream lasts as long as its run).
	HTTP *http.Client
	// UserAgent names the caller in the host's logs.
	UserAgent string
}

// New returns a client of the host at baseURL ("host:port" is taken as
// http://host:port), with token.
func New(baseURL, token string) *Client {
	baseURL = strings.TrimSpace(baseURL)
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{}, UserAgent: "agenthost-apiclient"}
}

// Error is an answer of the API with its error envelope
// ({"detail":{"code","message","field"}}).
type Error struct {
	// Status is the HTTP status.
	Status                          int
	Code, Message, Field, RequestID string
}

// Error is "CODE: message (field f)".
func (e *Error) Error() string {
	s := e.Code + ": " + e.Message
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// ConnError is a request that got no answer: the host is not listening
// there, the name does not resolve, the connection broke.
type ConnError struct {
	URL string
	Err error
}

// Error says which host could not be reached and why.
func (e *ConnError) Error() string {
	return fmt.Sprintf("cannot reach the host at %s: %v", e.URL, e.Err)
}

// Unwrap is the transport's error.
func (e *ConnError) Unwrap() error { return e.Err }

// CodeOf is an *Error's code in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// request is one API call.
type request struct {
	method, path string
	query        url.Values
	// body is sent as is with ctype; json, when set, is marshalled instead.
	body   io.Reader
	ctype  string
	json   any
	header http.Header
}

// send makes the request and returns the answer when its status is 2xx;
// any other status is read into an *Error and the body closed.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	u := c.BaseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	body, ctype := r.body, r.ctype
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return nil, err
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &ConnError{URL: c.BaseURL, Err: unwrapURLError(err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readError(resp)
}

// unwrapURLError drops net/http's `Get "http://…": ` prefix, which the
// ConnError says better.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// maxErrorBody bounds what is read of an error answer.
const maxErrorBody = 64 << 10

// readError reads an error answer's envelope; an answer without one (a
// proxy's page, another server) keeps its status and the start of its
// body.
func readError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Detail struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Field     string `json:"field"`
			RequestID string `json:"request_id"`
		} `json:"detail"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Detail.Code != "" {
		d := env.Detail
		return &Error{Status: resp.StatusCode, Code: d.Code, Message: d.Message, Field: d.Field, RequestID: d.RequestID}
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &Error{Status: resp.StatusCode, Code: fmt.Sprintf("HTTP_%d", resp.StatusCode), Message: "not an agenthost answer: " + msg}
}

// do makes a JSON call and decodes the answer into out (when not nil); it
// returns the answer's raw JSON.
func (c *Client) do(ctx context.Context, r request, out any) (json.RawMessage, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &ConnError{URL: c.BaseURL, Err: err}
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: the answer is not the JSON expected: %w", r.method, r.path, err)
		}
	}
	return raw, nil
}

// get is a GET of path decoded into out.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) (json.RawMessage, error) {
	return c.do(ctx, request{method: http.MethodGet, path: path, query: q}, out)
}

// ListOptions page a list: Limit (1–200, 0 for the host's default of 50)
// and Cursor (the NextCursor of the previous page).
type ListOptions struct {
	Limit  int
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", fmt.Sprint(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// Page is one page of a list; NextCursor is "" on the last.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
	// Raw is the page as the API sent it.
	Raw json.RawMessage `json:"-"`
}

func getPage[T any](ctx context.Context, c *Client, path string, q url.Values) (Page[T], error) {
	var p Page[T]
	raw, err := c.get(ctx, path, q, &p)
	p.Raw = raw
	return p, err
}

// seg escapes one path segment (an id, a name given on a command line).
func seg(s string) string { return url.PathEscape(s) }

// appPath is /admin/apps/{app} plus rest.
func appPath(app, rest string) string { return "/admin/apps/" + seg(app) + rest }

// agentPath is /admin/apps/{app}/coding-agent plus rest.
func agentPath(app, rest string) string { return appPath(app, "/coding-agent"+rest) }
