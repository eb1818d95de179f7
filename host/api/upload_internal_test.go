package api

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"hash/crc32"
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
		u, err := unpackArchive(tc.kind, tc.body, core.FileLimits{})
		must.NoError(t, err, tc.kind)
		assert.Equal(t, []string{"package.json", "src/App.tsx"}, paths(u), "%s: the single top folder unwrapped, generated and VCS folders left out", tc.kind)
		assert.Equal(t, 3, u.Skipped, tc.kind)
	}
}

func TestUnpackRefusesTricks(t *testing.T) {
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
		"not an archive": {"zip", []byte("hello"), "not a readable zip"},
		"not gzip":       {"tar.gz", []byte("hello"), "not gzip"},
		"empty":          {"tar", makeTar(t, false), "no files"},
		"only generated": {"zip", makeZip(t, entry{name: "node_modules/x.js", body: "x"}), "no files"},
		"duplicate":      {"tar", makeTar(t, false, entry{name: "a.txt", body: "1"}, entry{name: "./a.txt", body: "2"}), "twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := unpackArchive(tc.kind, tc.body, core.FileLimits{})
			must.Error(t, err)
			assert.Equal(t, core.CodeInvalidRequest, core.CodeOf(err))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// zeros is a zip of one entry of n zero bytes: tiny packed. When claim is
// not negative, the entry's header claims that size instead (a lie the
// reader must not trust).
func zeros(t *testing.T, name string, n int, claim int64) []byte {
	t.Helper()
	var packed bytes.Buffer
	fw, err := flate.NewWriter(&packed, flate.BestCompression)
	must.NoError(t, err)
	_, err = fw.Write(make([]byte, n))
	must.NoError(t, err)
	must.NoError(t, fw.Close())
	size := uint64(n)
	if claim >= 0 {
		size = uint64(claim)
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	raw, err := w.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(make([]byte, n)),
		CompressedSize64: uint64(packed.Len()), UncompressedSize64: size})
	must.NoError(t, err)
	_, err = raw.Write(packed.Bytes())
	must.NoError(t, err)
	must.NoError(t, w.Close())
	return buf.Bytes()
}

// TestUnpackHoldsToHostLimits: what an archive unpacks to is held to the
// host's file limits (not caps of its own): an entry over the per-file
// limit, an archive over the workspace limit or over the file count is
// FILES_TOO_LARGE naming the entry, and reading stops a byte past the
// limit whatever the headers claim (a zip bomb).
func TestUnpackHoldsToHostLimits(t *testing.T) {
	const mib = 1 << 20
	small := core.FileLimits{MaxFileBytes: mib, MaxWorkspaceBytes: 3 * mib, MaxFiles: 3}
	bomb := zeros(t, "zeros.bin", core.DefaultMaxFileBytes+1, -1)
	must.Less(t, len(bomb), 1<<20, "the bomb is small when packed")
	cases := map[string]struct {
		kind   string
		body   []byte
		limits core.FileLimits
		field  string
		want   string
	}{
		"zip bomb at the defaults": {"zip", bomb, core.FileLimits{}, "files.zeros.bin", "zeros.bin has"},
		"tar entry over the file limit": {"tar", makeTar(t, false, entry{name: "a.txt", body: "a"},
			entry{name: "big.txt", body: strings.Repeat("x", mib+1)}), small, "files.big.txt", "big.txt has 1048577 bytes; the limit is 1048576"},
		"archive over the workspace limit": {"tar.gz", makeTar(t, true, entry{name: "a", body: strings.Repeat("a", mib)},
			entry{name: "b", body: strings.Repeat("b", mib)}, entry{name: "c", body: strings.Repeat("c", mib)},
			entry{name: "d", body: "d"}), core.FileLimits{MaxFileBytes: mib, MaxWorkspaceBytes: 3 * mib}, "files", "more than 3145728 bytes"},
		"too many files": {"zip", makeZip(t, entry{name: "a", body: "a"}, entry{name: "b", body: "b"},
			entry{name: "c", body: "c"}, entry{name: "d", body: "d"}), small, "files", "more than 3 files"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := unpackArchive(tc.kind, tc.body, tc.limits)
			must.Error(t, err)
			var ce *core.Error
			must.True(t, errors.As(err, &ce))
			assert.Equal(t, core.CodeFilesTooLarge, ce.Code)
			assert.Equal(t, tc.field, ce.Field)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// A zip entry bigger than its header claims is refused as malformed
	// (archive/zip reads no further than the claim).
	_, err := unpackArchive("zip", zeros(t, "lie.bin", 2*mib, 10), small)
	must.Error(t, err)
	assert.Contains(t, err.Error(), "lie.bin")

	// At the limits exactly is fine; the caps follow the limits given, not
	// a constant of their own (16 MiB was one).
	u, err := unpackArchive("zip", zeros(t, "z.bin", 20*mib, -1), core.FileLimits{MaxFileBytes: 20 * mib, MaxWorkspaceBytes: 20 * mib})
	must.NoError(t, err)
	must.Len(t, u.Files, 1)
	assert.Len(t, u.Files[0].Data, 20*mib)
	_, err = unpackArchive("zip", makeZip(t, entry{name: "a", body: "a"}, entry{name: "b", body: "b"}, entry{name: "c", body: "c"}), small)
	assert.NoError(t, err)
}

func TestArchiveKind(t *testing.T) {
	assert.Equal(t, "zip", archiveKind("application/zip"))
	assert.Equal(t, "tar.gz", archiveKind("application/gzip; charset=binary"))
	assert.Equal(t, "tar", archiveKind("Application/X-Tar"))
	assert.Equal(t, "", archiveKind("application/json"))
	assert.True(t, strings.HasPrefix(archiveKind("application/x-zip-compressed"), "zip"))
}
