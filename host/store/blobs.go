package store

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// BlobChunkBytes is the size of one stored chunk of a large content. A
// content up to this size is one blobs row; a bigger one is a series of
// blob_chunks rows, written and read one at a time. 4 MiB keeps what the
// host and the drivers hold per file small (lib/pq sends a []byte as hex
// text: about 3x a chunk in flight) while a 200 MB file is only 50 rows.
const BlobChunkBytes = 4 << 20

// orphanChunkAge is how old chunks without a blobs row must be before
// Open sweeps them: a write still streaming (on this host or, on
// PostgreSQL, another) is never that slow.
const orphanChunkAge = 24 * time.Hour

// firstBufferBytes is the buffer PutBlobFrom reads a content into first:
// most files of a snapshot fit in it, and a bigger content grows it (by
// doubling) up to BlobChunkBytes.
const firstBufferBytes = 64 << 10

// firstBuffers are PutBlobFrom's first buffers, reused: a fresh buffer per
// content stored cost more than the rest of storing a small file, once per
// file of every snapshot. They are small on purpose: a pool keeps what it
// is given live until two collections later, which on a host gone quiet
// after a snapshot is minutes, and every live byte raises the heap the GC
// lets grow before it collects by as much again (pooled 4 MiB chunk
// buffers left 8 of a host's 16 MB heap goal to them after one turn). The
// drivers copy what they are given before Exec returns, so a buffer is
// free for reuse when PutBlobFrom returns.
var firstBuffers = sync.Pool{New: func() any { b := make([]byte, firstBufferBytes); return &b }}

// execer runs a statement on the database or in a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	Rebind(query string) string
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func newChunkKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ck_" + hex.EncodeToString(b[:])
}

// PutBlob stores one file's content under its sha256, unless it is stored
// already, and returns the digest. Prefer PutBlobFrom for content that
// arrives as a stream.
func (s *Store) PutBlob(ctx context.Context, data []byte) (string, error) {
	sha := digest(data)
	var n int
	if err := s.r.GetContext(ctx, &n, s.rebind(`SELECT COUNT(*) FROM blobs WHERE sha256 = ?`), sha); err != nil {
		return "", translate(err)
	}
	if n > 0 {
		return sha, nil
	}
	err := s.tx(ctx, func(tx *sqlx.Tx) error { return insertBlob(ctx, tx, sha, data, time.Now().UnixMilli()) })
	return sha, err
}

// PutBlobFrom stores the content read from r up to EOF under its sha256
// and returns the digest and size. It holds at most one chunk: a content
// bigger than BlobChunkBytes is written chunk by chunk as it is read,
// hashed as it goes, and becomes a blob once whole (its chunks are dropped
// again when the same content was stored meanwhile). On an error from r
// nothing is kept.
func (s *Store) PutBlobFrom(ctx context.Context, r io.Reader) (string, int64, error) {
	pooled := firstBuffers.Get().(*[]byte)
	defer firstBuffers.Put(pooled)
	// Buffered so that a content of exactly one chunk is told from a
	// bigger one (Peek) and stays one row.
	r = bufio.NewReader(r)
	buf, err := fillChunk(r, *pooled)
	if err == nil {
		if _, perr := r.(*bufio.Reader).Peek(1); errors.Is(perr, io.EOF) {
			err = io.EOF
		}
	}
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		sha, err := s.PutBlob(ctx, buf)
		return sha, int64(len(buf)), err
	case err != nil:
		return "", 0, err
	}
	key := newChunkKey()
	h := sha256.New()
	var size int64
	now := time.Now().UnixMilli()
	put := func() (string, error) {
		for seq := 0; ; seq++ {
			h.Write(buf)
			size += int64(len(buf))
			if _, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO blob_chunks (chunk_key, seq, created_at, data) VALUES (?, ?, ?, ?)`),
				key, seq, now, buf); err != nil {
				return "", translate(err)
			}
			buf, err = fillChunk(r, buf)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				return "", err
			}
		}
		sha := hex.EncodeToString(h.Sum(nil))
		res, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO blobs (sha256, size, data, chunk_key, created_at) VALUES (?, ?, ?, ?, ?)
 ON CONFLICT (sha256) DO NOTHING`), sha, size, []byte{}, key, now)
		if err != nil {
			return "", translate(err)
		}
		if rows, _ := res.RowsAffected(); rows == 0 {
			s.dropChunks(ctx, key) // stored already: keep the older copy
		}
		return sha, nil
	}
	sha, err := put()
	if err != nil {
		s.dropChunks(ctx, key)
		return "", 0, err
	}
	return sha, size, nil
}

// fillChunk reads r into buf until it holds BlobChunkBytes or r ends,
// growing buf past its capacity as the content needs, and returns it with
// io.ReadFull's error: nil when it is full, io.ErrUnexpectedEOF when r
// ended first, io.EOF when r had nothing more.
func fillChunk(r io.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < BlobChunkBytes {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(cap(buf), firstBufferBytes), BlobChunkBytes-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), BlobChunkBytes)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF && len(buf) == 0:
			return buf, io.EOF
		case err == io.EOF:
			return buf, io.ErrUnexpectedEOF
		case err != nil:
			return buf, err
		}
	}
	return buf, nil
}

// dropChunks deletes a chunk series no blob uses, best effort: what a
// failure leaves behind, Open sweeps later (sweepOrphanChunks).
func (s *Store) dropChunks(ctx context.Context, key string) {
	_, _ = s.w.ExecContext(context.WithoutCancel(ctx), s.rebind(`DELETE FROM blob_chunks WHERE chunk_key = ?`), key)
}

// sweepOrphanChunks deletes chunk series older than orphanChunkAge that no
// blob uses: what a host that died mid-write left behind.
func (s *Store) sweepOrphanChunks(ctx context.Context) error {
	_, err := s.w.ExecContext(ctx, s.rebind(`DELETE FROM blob_chunks WHERE created_at < ?
 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.chunk_key = blob_chunks.chunk_key)`),
		time.Now().Add(-orphanChunkAge).UnixMilli())
	return translate(err)
}

// insertBlob stores data under sha inside tx (a no-op when it is stored),
// in chunks when it is bigger than one.
func insertBlob(ctx context.Context, tx execer, sha string, data []byte, now int64) error {
	if data == nil {
		data = []byte{}
	}
	if len(data) <= BlobChunkBytes {
		_, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)
 ON CONFLICT (sha256) DO NOTHING`), sha, len(data), data, now)
		return translate(err)
	}
	key := newChunkKey()
	res, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO blobs (sha256, size, data, chunk_key, created_at) VALUES (?, ?, ?, ?, ?)
 ON CONFLICT (sha256) DO NOTHING`), sha, len(data), []byte{}, key, now)
	if err != nil {
		return translate(err)
	}
	if rows, _ := res.RowsAffected(); rows == 0 {
		return nil // stored already
	}
	for seq := 0; len(data) > 0; seq++ {
		n := min(len(data), BlobChunkBytes)
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO blob_chunks (chunk_key, seq, created_at, data) VALUES (?, ?, ?, ?)`),
			key, seq, now, data[:n]); err != nil {
			return translate(err)
		}
		data = data[n:]
	}
	return nil
}

// Blobs reads contents by sha256 (those stored; a digest not stored is
// simply absent from the map). Each content is held whole: callers read
// only what they must (a three-way merge's files).
func (s *Store) Blobs(ctx context.Context, shas []string) (map[string][]byte, error) {
	return s.blobs(ctx, shas)
}

// blobRow is a blobs row without its content.
type blobRow struct {
	SHA      string         `db:"sha256"`
	Size     int64          `db:"size"`
	ChunkKey sql.NullString `db:"chunk_key"`
}

// blobs reads contents by sha256, a chunked one into a buffer of its size
// (one chunk at a time from the driver).
func (s *Store) blobs(ctx context.Context, shas []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(shas))
	for start := 0; start < len(shas); start += inChunk {
		chunk := shas[start:min(start+inChunk, len(shas))]
		q, args, err := sqlx.In(`SELECT sha256, size, chunk_key FROM blobs WHERE sha256 IN (?)`, chunk)
		if err != nil {
			return nil, err
		}
		var rows []blobRow
		if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
			return nil, translate(err)
		}
		for _, r := range rows {
			data, err := s.readBlob(ctx, r)
			if err != nil {
				return nil, err
			}
			out[r.SHA] = data
		}
	}
	return out, nil
}

// readBlob reads one content whole.
func (s *Store) readBlob(ctx context.Context, r blobRow) ([]byte, error) {
	if !r.ChunkKey.Valid {
		var data []byte
		if err := s.r.GetContext(ctx, &data, s.rebind(`SELECT data FROM blobs WHERE sha256 = ?`), r.SHA); err != nil {
			return nil, translate(err)
		}
		if data == nil {
			data = []byte{}
		}
		return data, nil
	}
	buf := make([]byte, r.Size)
	cr := &chunkReader{s: s, ctx: ctx, row: r}
	if _, err := io.ReadFull(cr, buf); err != nil {
		return nil, fmt.Errorf("content %s: %w", r.SHA, err)
	}
	if n, _ := cr.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("content %s: more than its %d bytes stored", r.SHA, r.Size)
	}
	return buf, nil
}

// OpenBlob returns a reader of one content and its size. It reads a chunked
// content one chunk at a time as it is consumed.
func (s *Store) OpenBlob(ctx context.Context, sha string) (io.Reader, int64, error) {
	var r blobRow
	err := s.r.GetContext(ctx, &r, s.rebind(`SELECT sha256, size, chunk_key FROM blobs WHERE sha256 = ?`), sha)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, notFound("content", sha)
	}
	if err != nil {
		return nil, 0, translate(err)
	}
	return &chunkReader{s: s, ctx: ctx, row: r}, r.Size, nil
}

// chunkReader is an io.Reader over a stored content: an inline one is read
// whole at the first Read, a chunked one a chunk per query.
type chunkReader struct {
	s   *Store
	ctx context.Context
	row blobRow
	buf []byte
	seq int
	eof bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.eof {
			return 0, io.EOF
		}
		if !c.row.ChunkKey.Valid {
			data, err := c.s.readBlob(c.ctx, c.row)
			if err != nil {
				return 0, err
			}
			c.buf, c.eof = data, true
			continue
		}
		var data []byte
		err := c.s.r.GetContext(c.ctx, &data, c.s.rebind(`SELECT data FROM blob_chunks WHERE chunk_key = ? AND seq = ?`),
			c.row.ChunkKey.String, c.seq)
		if errors.Is(err, sql.ErrNoRows) {
			c.eof = true
			continue
		}
		if err != nil {
			return 0, translate(err)
		}
		c.buf, c.seq = data, c.seq+1
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// selecter runs a query on the database or in a transaction.
type selecter interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	Rebind(query string) string
}

// StoredBlobs says which of the digests have their content stored. The
// orchestrator asks it before trusting what a sandbox says it holds
// unchanged since its creation.
func (s *Store) StoredBlobs(ctx context.Context, shas []string) (map[string]bool, error) {
	return storedBlobs(ctx, s.r, shas)
}

func storedBlobs(ctx context.Context, db selecter, all []string) (map[string]bool, error) {
	have := map[string]bool{}
	for start := 0; start < len(all); start += inChunk {
		q, args, err := sqlx.In(`SELECT sha256 FROM blobs WHERE sha256 IN (?)`, all[start:min(start+inChunk, len(all))])
		if err != nil {
			return nil, err
		}
		var found []string
		if err := db.SelectContext(ctx, &found, db.Rebind(q), args...); err != nil {
			return nil, translate(err)
		}
		for _, f := range found {
			have[f] = true
		}
	}
	return have, nil
}

// missingBlobs lists the digests not stored yet, in sorted order.
func (s *Store) missingBlobs(ctx context.Context, tx *sqlx.Tx, bySHA map[string][]byte) ([]string, error) {
	all := make([]string, 0, len(bySHA))
	for sha := range bySHA {
		all = append(all, sha)
	}
	sort.Strings(all)
	have, err := storedBlobs(ctx, tx, all)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, sha := range all {
		if !have[sha] {
			missing = append(missing, sha)
		}
	}
	return missing, nil
}

// checkBlobs fails unless every digest of manifest is stored.
func (s *Store) checkBlobs(ctx context.Context, tx *sqlx.Tx, shas []string) error {
	if len(shas) == 0 {
		return nil
	}
	want := make(map[string][]byte, len(shas))
	for _, sha := range shas {
		want[sha] = nil
	}
	missing, err := s.missingBlobs(ctx, tx, want)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("content %s is not stored", missing[0])
	}
	return nil
}

// putBlobs stores the contents of missing (keys of bySHA not yet stored).
func putBlobs(ctx context.Context, tx *sqlx.Tx, missing []string, bySHA map[string][]byte) (int, int64, error) {
	now := time.Now().UnixMilli()
	var n int
	var total int64
	for _, sha := range missing {
		data := bySHA[sha]
		if err := insertBlob(ctx, tx, sha, data, now); err != nil {
			return n, total, err
		}
		n++
		total += int64(len(data))
	}
	return n, total, nil
}
