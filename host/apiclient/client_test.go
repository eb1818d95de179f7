package apiclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrors: an error envelope becomes an *Error with its code, message
// and field; an answer without one keeps its status; a host not
// listening is a *ConnError naming it. The token goes as a bearer token.
func TestErrors(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/admin/apps/app_x":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"detail":{"code":"NOT_FOUND","message":"app app_x not found","field":"app_id"}}`))
		default:
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	c := New(srv.URL+"/", "secret")

	_, err := c.GetApp(context.Background(), "app_x")
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, &Error{Status: 404, Code: "NOT_FOUND", Message: "app app_x not found", Field: "app_id"}, ae)
	assert.Equal(t, "NOT_FOUND: app app_x not found (field app_id)", err.Error())
	assert.Equal(t, "Bearer secret", auth)

	_, err = c.ListApps(context.Background(), ListOptions{})
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "HTTP_502", ae.Code)
	assert.Contains(t, ae.Message, "<html>bad gateway</html>")

	srv.Close()
	_, err = c.ListApps(context.Background(), ListOptions{})
	var ce *ConnError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, srv.URL, ce.URL)
	assert.Contains(t, err.Error(), "cannot reach the host at "+srv.URL)

	assert.Equal(t, "http://127.0.0.1:9", New("127.0.0.1:9", "").BaseURL, "a bare host:port is http")
}
