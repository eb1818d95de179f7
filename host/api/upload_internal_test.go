package api

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/core"
	"github.com/stretchr/testify/assert"
	must "github.com/stretchr/testify/require"
)

type entry struct {
	name, body string
	typ        byte // tar type; 0 = regular
	link       string
}

func makeTar(t *testing.T, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *tar.Writer
	var g *gzip.Writer
	if gz {
		g = gzip.NewWriter(&buf)
		w = tar.NewWriter(g)
	} else {
		w = tar.NewWriter(&buf)
	}
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		must.NoError(t, w.WriteHeader(h))
		if typ == tar.TypeReg {
			_, err := w.Write([]byte(e.body))
			must.NoError(t, err)
		}
	}
	must.NoError(t, w.Close())
	if g != nil {
		must.NoError(t, g.Close())
	}
	return buf.Bytes()
}

func makeZip(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		f, err := w.Create(e.name)
		must.NoError(t, err)
		_, err = f.Write([]byte(e.body))
		must.NoError(t, err)
	}
	must.NoError(t, w.Close())
	return buf.Bytes()
}

func paths(u unpacked) []string {
	var out []string
	for _, f := range u.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestUnpackArchives(t *testing.T) {
	project := []entry{
		{name: "my-app/package.json", body: "{}"},
		{name: "my-app/src/App.tsx", body: "x"},
		{name: "my-app/node_modules/react/index.js", body: "big"},
		{name: "my-app/.git/HEAD", body: "ref"},
		{name: "my-app/dist/index.js", body: "built"},
	}
	for _, tc := range []struct {
		kind string
		body []byte
	}{
		{"tar", makeTar(t, false, project...)},
		{"tar.gz", makeTar(t, true, project...)},
		{"zip", makeZip(t, project...)},
	} {
		u, err := unpackArchive(tc.kind, tc.body)
		must.NoError(t, err, tc.kind)
		assert.Equal(t, []string{"package.json", "src/App.tsx"}, paths(u), "%s: the single top folder unwrapped, generated and VCS folders left out", tc.kind)
		assert.Equal(t, 3, u.Skipped, tc.kind)
	}
}

func TestUnpackRefusesTricks(t *testing.T) {
	bomb := func() []byte {
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		f, err := w.Create("zeros.txt")
		must.NoError(t, err)
		chunk := make([]byte, 1<<20)
		for range maxUploadFile/len(chunk) + 1 {
			_, err = f.Write(chunk)
			must.NoError(t, err)
		}
		must.NoError(t, w.Close())
		return buf.Bytes()
	}()
	must.Less(t, len(bomb), 1<<20, "the bomb is small when packed")
	cases := map[string]struct {
		kind string
		body []byte
		want string
	}{
		"traversal":      {"tar", makeTar(t, false, entry{name: "../../etc/passwd", body: "x"}), "leaves the app's root"},
		"nested escape":  {"zip", makeZip(t, entry{name: "a/../../x", body: "x"}), "leaves the app's root"},
		"absolute":       {"tar", makeTar(t, false, entry{name: "/etc/passwd", body: "x"}), "absolute"},
		"symlink":        {"tar", makeTar(t, false, entry{name: "link", typ: tar.TypeSymlink, link: "/etc"}), "link or special"},
		"hard link":      {"tar", makeTar(t, false, entry{name: "a", body: "x"}, entry{name: "b", typ: tar.TypeLink, link: "a"}), "link or special"},
		"device":         {"tar", makeTar(t, false, entry{name: "dev", typ: tar.TypeChar}), "link or special"},
		"backslash":      {"zip", makeZip(t, entry{name: `..\evil`, body: "x"}), "unusable name"},
		"zip bomb":       {"zip", bomb, "at most"},
		"not an archive": {"zip", []byte("hello"), "not a readable zip"},
		"not gzip":       {"tar.gz", []byte("hello"), "not gzip"},
		"empty":          {"tar", makeTar(t, false), "no files"},
		"only generated": {"zip", makeZip(t, entry{name: "node_modules/x.js", body: "x"}), "no files"},
		"duplicate":      {"tar", makeTar(t, false, entry{name: "a.txt", body: "1"}, entry{name: "./a.txt", body: "2"}), "twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := unpackArchive(tc.kind, tc.body)
			must.Error(t, err)
			assert.Equal(t, core.CodeInvalidRequest, core.CodeOf(err))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestArchiveKind(t *testing.T) {
	assert.Equal(t, "zip", archiveKind("application/zip"))
	assert.Equal(t, "tar.gz", archiveKind("application/gzip; charset=binary"))
	assert.Equal(t, "tar", archiveKind("Application/X-Tar"))
	assert.Equal(t, "", archiveKind("application/json"))
	assert.True(t, strings.HasPrefix(archiveKind("application/x-zip-compressed"), "zip"))
}
