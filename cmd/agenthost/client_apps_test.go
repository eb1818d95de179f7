package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// appFile is a file of an app: its content and permission bits.
type appFile struct {
	data string
	mode fs.FileMode
}

// writeTree writes files under dir.
func writeTree(t *testing.T, dir string, files map[string]appFile) {
	t.Helper()
	for p, f := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(f.data), f.mode))
		require.NoError(t, os.Chmod(full, f.mode))
	}
}

func unzipFiles(t *testing.T, body []byte) map[string]appFile {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err)
	out := map[string]appFile{}
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		out[f.Name] = appFile{string(b), f.Mode().Perm()}
	}
	return out
}

func untarFiles(t *testing.T, body []byte) map[string]appFile {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string]appFile{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[h.Name] = appFile{string(b), fs.FileMode(h.Mode).Perm()}
	}
}

var createdApp = regexp.MustCompile(`^created app (app_\w+) "([^"]+)": draft (rev_\w+), (\d+) files?`)

// createApp runs apps create and returns the app's id.
func createApp(t *testing.T, name string, args ...string) (id, stdout, stderr string) {
	t.Helper()
	code, out, errOut := runClient(t, "", append([]string{"apps", "create", name}, args...)...)
	require.Equal(t, 0, code, errOut)
	m := createdApp.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	assert.Equal(t, name, m[2])
	return m[1], out, errOut
}

// TestClientApps: apps create from a folder (its generated folders and
// links left out and said so, its paths kept even when they all lie in
// one folder, its modes kept) and from a zip; apps list and get show them
// (get by name too); apps download writes the draft as zip or tar.gz
// holding exactly the app's files, to a file or stdout, and a downloaded
// archive creates the same app again.
func TestClientApps(t *testing.T) {
	h := startHost(t)
	work := t.TempDir()
	t.Chdir(work)

	project := map[string]appFile{
		"index.html": {"<h1>Hello</h1>\n", 0o644},
		"src/app.js": {"console.log(1)\n", 0o644},
		"bin/run.sh": {"#!/bin/sh\necho run\n", 0o755},
	}
	dir := filepath.Join(work, "project")
	writeTree(t, dir, project)
	writeTree(t, dir, map[string]appFile{"node_modules/x/index.js": {"x", 0o644}, ".git/HEAD": {"ref", 0o644}})
	require.NoError(t, os.Symlink("index.html", filepath.Join(dir, "link.html")))
	fromDir, out, errOut := createApp(t, "from-dir", "--from", dir)
	assert.Contains(t, out, ", 3 files (3 left out: generated, version control, not regular files)\n")
	assert.Contains(t, errOut, "agenthost: left out node_modules/: generated or version control")
	assert.Contains(t, errOut, "agenthost: left out .git/: generated or version control")
	assert.Contains(t, errOut, "agenthost: left out link.html: not a regular file")

	// Every file in one folder: the app keeps the folder.
	nested := filepath.Join(work, "nested")
	writeTree(t, nested, map[string]appFile{"site/index.html": {"<p>x</p>\n", 0o644}})
	fromNested, _, _ := createApp(t, "nested", "--from", nested)
	var rev struct {
		Files []struct{ Path string } `json:"files"`
	}
	h.api("GET", "/admin/apps/"+fromNested+"/revisions/draft", &rev)
	require.Len(t, rev.Files, 1)
	assert.Equal(t, "site/index.html", rev.Files[0].Path)

	// A zip of a project folder: the host unwraps the folder and leaves
	// node_modules out.
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, body := range map[string]string{"proj/index.html": "<p>zipped</p>\n", "proj/node_modules/a/index.js": "x"} {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, _ = io.WriteString(w, body)
	}
	require.NoError(t, zw.Close())
	zipPath := filepath.Join(work, "proj.zip")
	require.NoError(t, os.WriteFile(zipPath, zbuf.Bytes(), 0o644))
	fromZip, out, _ := createApp(t, "from-zip", "--from", zipPath)
	assert.Contains(t, out, ", 1 file (1 left out")

	code, out, errOut := runClient(t, "", "apps", "list")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^ID\s+NAME\s+DRAFT\s+CREATED$`, out)
	for id, name := range map[string]string{fromDir: "from-dir", fromNested: "nested", fromZip: "from-zip"} {
		assert.Regexp(t, `(?m)^`+id+`\s+`+name+`\s+rev_\w+\s+\d{4}-`, out)
	}

	code, out, errOut = runClient(t, "", "apps", "get", "from-dir")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^id\s+`+fromDir+`$`, out)
	assert.Regexp(t, `(?m)^draft\s+rev_\w+ \(3 files, \d+ bytes\)$`, out)
	assert.Regexp(t, `(?m)^\s+bin/run\.sh\s+19 bytes\s+0755$`, out)
	assert.Regexp(t, `(?m)^\s+index\.html\s+15 bytes\s+0644$`, out)

	// Downloads: the host's name, a named zip, a tar.gz, stdout.
	var app struct {
		Draft string `json:"draft_revision_id"`
	}
	h.api("GET", "/admin/apps/"+fromDir, &app)
	code, out, errOut = runClient(t, "", "apps", "download", "from-dir")
	require.Equal(t, 0, code, errOut)
	suggested := "from-dir-" + app.Draft + ".zip"
	assert.Equal(t, "wrote "+suggested+" (", out[:len("wrote "+suggested+" (")])
	assert.Contains(t, out, "revision "+app.Draft+" of app "+fromDir)
	body, err := os.ReadFile(filepath.Join(work, suggested))
	require.NoError(t, err)
	assert.Equal(t, project, unzipFiles(t, body))

	code, _, errOut = runClient(t, "", "apps", "download", fromDir, "-o", "out.tar.gz")
	require.Equal(t, 0, code, errOut)
	body, err = os.ReadFile("out.tar.gz")
	require.NoError(t, err)
	assert.Equal(t, project, untarFiles(t, body))

	code, out, errOut = runClient(t, "", "apps", "download", fromDir, "--revision", app.Draft, "-o", "-")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, project, unzipFiles(t, []byte(out)))

	// What downloads creates the same app again.
	again, _, _ := createApp(t, "again", "--from", filepath.Join(work, suggested))
	var a, b struct {
		Files []struct {
			Path, SHA256 string
			Mode         uint32
		} `json:"files"`
	}
	h.api("GET", "/admin/apps/"+fromDir+"/revisions/draft", &a)
	h.api("GET", "/admin/apps/"+again+"/revisions/draft", &b)
	assert.Equal(t, a.Files, b.Files)

	// A download that fails leaves no file behind.
	entries, err := os.ReadDir(work)
	require.NoError(t, err)
	code, _, errOut = runClient(t, "", "apps", "download", fromDir, "--revision", "rev_000000000000000000000000", "-o", "missing.zip")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "agenthost: NOT_FOUND: revision rev_000000000000000000000000 not found")
	after, err := os.ReadDir(work)
	require.NoError(t, err)
	assert.Equal(t, len(entries), len(after), "nothing half written")

	// A template, and the usage errors of create.
	code, out, errOut = runClient(t, "", "apps", "create", "tpl", "--template", "static-site")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, createdApp, out)
	for _, args := range [][]string{{"apps", "create", "x"}, {"apps", "create", "x", "--from", dir, "--template", "static-site"}, {"apps", "create", "x", "--from", filepath.Join(work, "nope")}, {"apps", "create", "x", "--from", "out.tar.gz.txt"}} {
		if args[len(args)-1] == "out.tar.gz.txt" {
			require.NoError(t, os.WriteFile("out.tar.gz.txt", []byte("x"), 0o644))
		}
		code, _, errOut = runClient(t, "", args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.True(t, strings.HasPrefix(errOut, "agenthost: apps create: "), errOut)
	}
}
