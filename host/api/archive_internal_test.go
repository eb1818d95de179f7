package api

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/store"
	"github.com/stretchr/testify/assert"
)

// TestArchiveBaseName: the app's name in safe characters (a run of others
// is one dash), at most 64 of them, then the revision; a name with none
// left is the app's id.
func TestArchiveBaseName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"hello", "hello-rev_1"},
		{"My App!", "My-App-rev_1"},
		{"  ../../etc/passwd", "etc-passwd-rev_1"},
		{`a"b;c\d`, "a-b-c-d-rev_1"},
		{"日本語", "app_1-rev_1"},
		{strings.Repeat("x", 100), strings.Repeat("x", 64) + "-rev_1"},
	} {
		assert.Equal(t, tc.want, archiveBaseName(store.App{ID: "app_1", Name: tc.name}, "rev_1"), tc.name)
	}
}

// TestArchiveWritersFail: a content that cannot be opened, or that is not
// the size its manifest entry says, fails the archive (the handler then
// cuts the connection) rather than writing a short file that looks whole.
func TestArchiveWritersFail(t *testing.T) {
	manifest := []store.ManifestEntry{{Path: "a.txt", Size: 5}}
	short := func(store.ManifestEntry) (io.Reader, error) { return strings.NewReader("abc"), nil }
	broken := func(store.ManifestEntry) (io.Reader, error) { return nil, errors.New("the database went away") }
	for name, write := range map[string]func(io.Writer, []store.ManifestEntry, time.Time, func(store.ManifestEntry) (io.Reader, error)) error{
		"zip": writeZip, "tar.gz": writeTarGz,
	} {
		err := write(io.Discard, manifest, time.Now(), broken)
		assert.ErrorContains(t, err, "the database went away", name)
		err = write(io.Discard, manifest, time.Now(), short)
		assert.Error(t, err, name)
	}
}
