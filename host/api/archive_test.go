package api_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// archiveFile is a file as an archive holds it.
type archiveFile struct {
	data []byte
	mode fs.FileMode
}

// newTarGz builds a tar.gz archive of files.
func newTarGz(t testing.TB, files map[string]archiveFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(f.data)), Mode: int64(f.mode)}))
		_, err := tw.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func readZip(t testing.TB, body []byte) map[string]archiveFile {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err)
	out := map[string]archiveFile{}
	for _, f := range zr.File {
		require.True(t, f.Mode().IsRegular(), "%s is a regular file", f.Name)
		rc, err := f.Open()
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		require.NotContains(t, out, f.Name, "each file once")
		out[f.Name] = archiveFile{data, f.Mode().Perm()}
	}
	return out
}

func readTarGz(t testing.TB, body []byte) map[string]archiveFile {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string]archiveFile{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Equal(t, byte(tar.TypeReg), h.Typeflag, "%s is a regular file", h.Name)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NotContains(t, out, h.Name, "each file once")
		out[h.Name] = archiveFile{data, fs.FileMode(h.Mode).Perm()}
	}
	return out
}

// download GETs a revision's archive and returns the answer and its body.
func (e *env) download(token, app, rev, query string) (*http.Response, []byte) {
	e.t.Helper()
	return e.downloadMarked(false, token, app, rev, query)
}

// downloadMarked is download; invalid marks a request that breaks the spec
// on purpose (only its answer is held to the spec).
func (e *env) downloadMarked(invalid bool, token, app, rev, query string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/admin/apps/"+app+"/revisions/"+rev+"/archive"+query, nil)
	require.NoError(e.t, err)
	if invalid {
		markInvalid(req)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp, body
}

// upload creates an app from an archive body and returns its id.
func (e *env) upload(name, ctype string, body []byte) string {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/admin/apps?name="+name, bytes.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.tokenA)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(e.t, http.StatusCreated, resp.StatusCode, "%s", raw)
	var out struct{ ID string }
	require.NoError(e.t, json.Unmarshal(raw, &out))
	return out.ID
}

type manifestEntry struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Mode   uint32 `json:"mode"`
}

// manifest is GET …/revisions/{rev}'s id and files.
func (e *env) manifest(app, rev string) (string, []manifestEntry) {
	e.t.Helper()
	var got struct {
		Revision struct {
			ID string `json:"id"`
		} `json:"revision"`
		Files []manifestEntry `json:"files"`
	}
	require.Equal(e.t, http.StatusOK, e.do(e.tokenA, "GET", "/admin/apps/"+app+"/revisions/"+rev, nil, &got))
	return got.Revision.ID, got.Files
}

// TestRevisionArchive: a revision downloads as zip (the default) and as
// tar.gz, each holding exactly the revision's files with their content
// (a binary file stored in chunks among them) and modes, under an
// attachment name of the app and the revision; the archive uploads back
// into an app with the same manifest. A read-only token may download.
func TestRevisionArchive(t *testing.T) {
	eachDialect(t, func(e *env) {
		// Over one stored chunk (4 MiB), and not text.
		big := make([]byte, 5<<20+123)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range big {
			big[i] = byte(rng.Uint32())
		}
		files := map[string]archiveFile{
			"index.html":     {[]byte("<h1>hi</h1>\n"), 0o644},
			"src/app.js":     {[]byte("console.log(1)\n"), 0o644},
			"bin/run.sh":     {[]byte("#!/bin/sh\necho run\n"), 0o755},
			"assets/big.bin": {big, 0o644},
			"empty.txt":      {[]byte{}, 0o644},
		}
		app := e.upload("My%20App!", "application/gzip", newTarGz(t, files))
		revID, manifest := e.manifest(app, "draft")
		require.Len(t, manifest, len(files))
		for _, m := range manifest {
			sum := sha256.Sum256(files[m.Path].data)
			require.Equal(t, hex.EncodeToString(sum[:]), m.SHA256, m.Path)
		}

		for _, tc := range []struct {
			query, ctype, ext string
			read              func(testing.TB, []byte) map[string]archiveFile
		}{
			{"", "application/zip", "zip", readZip},
			{"?format=zip", "application/zip", "zip", readZip},
			{"?format=tar.gz", "application/gzip", "tar.gz", readTarGz},
		} {
			for _, rev := range []string{"draft", revID} {
				resp, body := e.download(e.readA, app, rev, tc.query)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s: %s", rev, tc.query, body)
				assert.Equal(t, tc.ctype, resp.Header.Get("Content-Type"))
				assert.Equal(t, `attachment; filename="My-App-`+revID+`.`+tc.ext+`"`, resp.Header.Get("Content-Disposition"))
				got := tc.read(t, body)
				require.Len(t, got, len(files), "%s %s", rev, tc.query)
				for name, want := range files {
					require.Contains(t, got, name)
					assert.True(t, bytes.Equal(want.data, got[name].data), "%s %s: %s's content", rev, tc.query, name)
					assert.Equal(t, want.mode, got[name].mode, "%s %s: %s's mode", rev, tc.query, name)
				}
			}
		}

		// What downloads uploads back as the same files.
		for _, f := range []struct{ query, ctype string }{{"", "application/zip"}, {"?format=tar.gz", "application/gzip"}} {
			_, body := e.download(e.tokenA, app, "draft", f.query)
			_, again := e.manifest(e.upload("again", f.ctype, body), "draft")
			assert.Equal(t, manifest, again, f.ctype)
		}
	})
}

// TestRevisionArchiveErrors: an unknown format is 400 on the format
// field; another tenant's app, an unknown app or revision, and a revision
// of another app are 404 exactly like the other revision routes; no token
// is 401.
func TestRevisionArchiveErrors(t *testing.T) {
	e := startEnv(t, "sqlite")
	app := e.createApp(e.tokenA)
	other := e.createApp(e.tokenA)
	otherRev, _ := e.manifest(other, "draft")

	for _, tc := range []struct {
		name, token, app, rev, query string
		status                       int
		code, field                  string
	}{
		// The 400s send what the spec refuses, on purpose.
		{"unknown format", e.tokenA, app, "draft", "?format=rar", http.StatusBadRequest, "INVALID_REQUEST", "format"},
		{"empty format", e.tokenA, app, "draft", "?format=", http.StatusBadRequest, "INVALID_REQUEST", "format"},
		{"tar without gzip", e.tokenA, app, "draft", "?format=tar", http.StatusBadRequest, "INVALID_REQUEST", "format"},
		{"another tenant", e.tokenB, app, "draft", "", http.StatusNotFound, "NOT_FOUND", ""},
		{"unknown app", e.tokenA, "app_000000000000000000000000", "draft", "", http.StatusNotFound, "NOT_FOUND", ""},
		{"unknown revision", e.tokenA, app, "rev_000000000000000000000000", "", http.StatusNotFound, "NOT_FOUND", ""},
		{"another app's revision", e.tokenA, app, otherRev, "", http.StatusNotFound, "NOT_FOUND", ""},
		{"malformed revision", e.tokenA, app, "rev%20x", "", http.StatusBadRequest, "INVALID_REQUEST", "revision_id"},
		{"no token", "", app, "draft", "", http.StatusUnauthorized, "UNAUTHENTICATED", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.downloadMarked(tc.status == http.StatusBadRequest, tc.token, tc.app, tc.rev, tc.query)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			assert.Empty(t, resp.Header.Get("Content-Disposition"), "no attachment for an error")
			var er apiError
			require.NoError(t, json.Unmarshal(body, &er), "%s", body)
			assert.Equal(t, tc.code, er.Detail.Code)
			assert.Equal(t, tc.field, er.Detail.Field)
			assert.NotEmpty(t, er.Detail.Message)
		})
	}

	// The same 404 as the revision's own route gives the other tenant.
	var viaRevision, viaArchive apiError
	require.Equal(t, http.StatusNotFound, e.do(e.tokenB, "GET", "/admin/apps/"+app+"/revisions/draft", nil, &viaRevision))
	_, body := e.download(e.tokenB, app, "draft", "")
	require.NoError(t, json.Unmarshal(body, &viaArchive))
	assert.Equal(t, viaRevision.Detail, viaArchive.Detail)
}
