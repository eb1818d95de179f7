package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// patterned is n bytes that differ chunk to chunk, so that a chunk read
// out of order or twice shows.
func patterned(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i/4093) + seed
	}
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func countRows(t *testing.T, s *Store, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.r.GetContext(context.Background(), &n, s.rebind(q), args...))
	return n
}

// failingReader gives some bytes, then fails.
type failingReader struct {
	r io.Reader
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("the sandbox went away")
	}
	return n, err
}

// TestBlobChunks: content bigger than a chunk is stored in chunks as it
// streams and reads back the same through every reader; content stored
// twice is stored once; a failed stream leaves nothing behind.
func TestBlobChunks(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		big := patterned(2*BlobChunkBytes+BlobChunkBytes/2, 1)
		exact := patterned(BlobChunkBytes, 7) // one full chunk: stays inline
		small := []byte("hello")

		for _, data := range [][]byte{big, exact, small, {}} {
			sha, size, err := s.PutBlobFrom(ctx, bytes.NewReader(data))
			require.NoError(t, err)
			assert.Equal(t, sum(data), sha)
			assert.Equal(t, int64(len(data)), size)
		}
		assert.Equal(t, 3, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks`), "only the big content is chunked")
		assert.Equal(t, 1, countRows(t, s, `SELECT COUNT(*) FROM blobs WHERE chunk_key IS NOT NULL`))

		// The same content again, streamed or whole, adds nothing.
		sha, _, err := s.PutBlobFrom(ctx, bytes.NewReader(big))
		require.NoError(t, err)
		assert.Equal(t, sum(big), sha)
		sha, err = s.PutBlob(ctx, big)
		require.NoError(t, err)
		assert.Equal(t, sum(big), sha)
		assert.Equal(t, 3, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks`))

		// A stream that fails keeps nothing, chunks included.
		_, _, err = s.PutBlobFrom(ctx, &failingReader{r: bytes.NewReader(patterned(3*BlobChunkBytes, 9))})
		require.Error(t, err)
		assert.Equal(t, 3, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks`))
		assert.Equal(t, 4, countRows(t, s, `SELECT COUNT(*) FROM blobs`))

		// Whole content given to a revision is chunked the same way.
		other := patterned(BlobChunkBytes+1, 3)
		_, _, err = s.CreateRevision(ctx, NewRevision{ID: "rev1", AppID: newTestApp(t, s), Source: "upload", Files: []sandbox.File{
			{Path: "big.bin", Data: big}, {Path: "other.bin", Data: other}, {Path: "small.txt", Data: small}, {Path: "empty", Data: []byte{}},
		}})
		require.NoError(t, err)
		assert.Equal(t, 5, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks`))

		got, err := s.Blobs(ctx, []string{sum(big), sum(other), sum(small), sum(exact)})
		require.NoError(t, err)
		for _, want := range [][]byte{big, other, small, exact} {
			assert.True(t, bytes.Equal(want, got[sum(want)]), "Blobs of %d bytes", len(want))
		}
		r, size, err := s.OpenBlob(ctx, sum(big))
		require.NoError(t, err)
		assert.Equal(t, int64(len(big)), size)
		read, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(big, read))

		files, err := s.RevisionFiles(ctx, "rev1")
		require.NoError(t, err)
		require.Len(t, files, 4)
		for i, want := range [][]byte{big, []byte{}, other, small} {
			assert.True(t, bytes.Equal(want, files[i].Data), files[i].Path)
		}
		data, err := s.ReadRevisionFile(ctx, "rev1", "other.bin")
		require.NoError(t, err)
		assert.True(t, bytes.Equal(other, data))
		r, size, err = s.OpenRevisionFile(ctx, "rev1", "big.bin")
		require.NoError(t, err)
		assert.Equal(t, int64(len(big)), size)
		read, err = io.ReadAll(r)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(big, read))
		_, _, err = s.OpenRevisionFile(ctx, "rev1", "nope")
		assert.ErrorIs(t, err, ErrNotFound)
		_, rev, err := s.GetRevision(ctx, "rev1")
		require.NoError(t, err)
		assert.Equal(t, int64(len(big)), rev[0].Size)
	})
}

// TestFillChunk: a content is read whole up to BlobChunkBytes whatever its
// size against the first buffer, from a reader that gives little per
// call, with io.ReadFull's errors; a full chunk leaves the rest unread.
func TestFillChunk(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		want int
		err  error
	}{
		{"empty", 0, 0, io.EOF},
		{"small", 10, 10, io.ErrUnexpectedEOF},
		{"first buffer", firstBufferBytes, firstBufferBytes, io.ErrUnexpectedEOF},
		{"past the first buffer", firstBufferBytes + 1, firstBufferBytes + 1, io.ErrUnexpectedEOF},
		{"grown", 5*firstBufferBytes + 3, 5*firstBufferBytes + 3, io.ErrUnexpectedEOF},
		{"one chunk", BlobChunkBytes, BlobChunkBytes, nil},
		{"more than a chunk", BlobChunkBytes + 7, BlobChunkBytes, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := patterned(tc.size, 1)
			r := iotest.HalfReader(bytes.NewReader(data))
			got, err := fillChunk(r, make([]byte, firstBufferBytes))
			assert.Equal(t, tc.err, err)
			assert.True(t, bytes.Equal(data[:tc.want], got), "got %d bytes, want %d", len(got), tc.want)
			rest, err := io.ReadAll(r)
			require.NoError(t, err)
			assert.Len(t, rest, tc.size-tc.want)
		})
	}
}

// TestBlobsStoredInlineStayReadable: a content stored whole in one row, as
// every content was before chunks (schema 2), of any size, still reads.
func TestBlobsStoredInlineStayReadable(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		old := patterned(BlobChunkBytes*2, 5)
		_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)`),
			sum(old), len(old), old, time.Now().UnixMilli())
		require.NoError(t, err)
		got, err := s.Blobs(ctx, []string{sum(old)})
		require.NoError(t, err)
		assert.True(t, bytes.Equal(old, got[sum(old)]))
		r, size, err := s.OpenBlob(ctx, sum(old))
		require.NoError(t, err)
		assert.Equal(t, int64(len(old)), size)
		read, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(old, read))
	})
}

// TestSweepOrphanChunks: chunks a dead write left behind go once they are
// old; chunks in use, or young enough to be a write under way, stay.
func TestSweepOrphanChunks(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		_, _, err := s.PutBlobFrom(ctx, bytes.NewReader(patterned(BlobChunkBytes+10, 2)))
		require.NoError(t, err)
		old := time.Now().Add(-2 * orphanChunkAge).UnixMilli()
		_, err = s.w.ExecContext(ctx, s.rebind(`UPDATE blob_chunks SET created_at = ?`), old)
		require.NoError(t, err)
		for key, at := range map[string]int64{"ck_dead": old, "ck_streaming": time.Now().UnixMilli()} {
			_, err = s.w.ExecContext(ctx, s.rebind(`INSERT INTO blob_chunks (chunk_key, seq, created_at, data) VALUES (?, 0, ?, ?)`), key, at, []byte("x"))
			require.NoError(t, err)
		}
		require.NoError(t, s.sweepOrphanChunks(ctx))
		assert.Equal(t, 2, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks WHERE chunk_key <> 'ck_streaming'`), "the blob's own chunks stay")
		assert.Equal(t, 0, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks WHERE chunk_key = 'ck_dead'`))
		assert.Equal(t, 1, countRows(t, s, `SELECT COUNT(*) FROM blob_chunks WHERE chunk_key = 'ck_streaming'`))
	})
}

// newTestApp stores a tenant and an app and returns the app's id.
func newTestApp(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.EnsureTenant(ctx, "t1", "T"))
	require.NoError(t, s.CreateApp(ctx, App{ID: "app1", TenantID: "t1", Name: "demo"}))
	return "app1"
}
