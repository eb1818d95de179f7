package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/agenthost/core"
	"github.com/agenthost/agenthost/sdk/sandbox"
	"github.com/jmoiron/sqlx"
)

// Revision is one version of an app: a manifest of path → blob.
type Revision struct {
	ID            string
	AppID         string
	ParentID      string
	MergeParentID string
	// Source says what made it: "upload", "template", "run", "merge",
	// "restore", "manual".
	Source    string
	AuthorID  string
	RunID     string
	Message   string
	FileCount int
	TotalSize int64
	// Applied is false for a run result kept aside after a conflict.
	Applied   bool
	CreatedAt time.Time
}

// ManifestEntry is one file of a revision.
type ManifestEntry struct {
	Path   string `db:"path"`
	SHA256 string `db:"blob_sha256"`
	Size   int64  `db:"size"`
	Mode   uint32 `db:"mode"`
}

// NewRevision is a revision to store.
type NewRevision struct {
	ID, AppID, ParentID, MergeParentID, Source, AuthorID, RunID, Message string
	Files                                                                []sandbox.File
	// Manifest, used when Files is nil, gives the files by content digest
	// instead: their blobs must be stored already (PutBlob). A result
	// streamed from a sandbox is stored this way, never held whole.
	Manifest []ManifestEntry
	// Unapplied keeps the revision aside (a conflicting run result).
	Unapplied bool
	// AdvanceDraft moves the app's draft head to the new revision in the
	// same transaction, but only from DraftFrom (compare-and-set): a head
	// that moved meanwhile fails with REVISION_CONFLICT and stores nothing.
	AdvanceDraft bool
	DraftFrom    string
	// Checkpoint, when set, is recorded at the new revision in the same
	// transaction (its ID, Kind and Label; the rest is filled in).
	Checkpoint *Checkpoint
}

// WriteStats says what storing a revision cost.
type WriteStats struct {
	// BlobsWritten and BlobBytes count only content not already stored.
	BlobsWritten int
	BlobBytes    int64
}

// inChunk bounds IN lists and multi-row inserts (parameter limits).
const inChunk = 400

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// CreateRevision stores a revision. File contents are stored by sha256 once:
// a file that any revision already holds costs one manifest row and no
// bytes.
func (s *Store) CreateRevision(ctx context.Context, nr NewRevision) (Revision, WriteStats, error) {
	pr, err := prepareRevision(nr)
	if err != nil {
		return Revision{}, WriteStats{}, err
	}
	var stats WriteStats
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		stats, err = s.writeRevision(ctx, tx, pr)
		return err
	})
	if err != nil {
		return Revision{}, WriteStats{}, err
	}
	return pr.rev, stats, nil
}

// preparedRevision is a NewRevision checked and digested, ready to write.
type preparedRevision struct {
	nr      NewRevision
	rev     Revision
	entries []ManifestEntry
	// bySHA holds the contents that came with Files; byDigest the
	// manifest whose blobs must already be stored.
	bySHA    map[string][]byte
	byDigest []ManifestEntry
}

// prepareRevision checks nr and digests its files, outside any transaction.
func prepareRevision(nr NewRevision) (preparedRevision, error) {
	if nr.ID == "" || nr.AppID == "" || nr.Source == "" {
		return preparedRevision{}, core.Errf(core.CodeInvalidRequest, "", "revision id, app id and source are required")
	}
	entries, bySHA, err := newManifest(nr)
	if err != nil {
		return preparedRevision{}, err
	}
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	rev := Revision{
		ID: nr.ID, AppID: nr.AppID, ParentID: nr.ParentID, MergeParentID: nr.MergeParentID, Source: nr.Source,
		AuthorID: nr.AuthorID, RunID: nr.RunID, Message: nr.Message, FileCount: len(entries), TotalSize: total,
		Applied: !nr.Unapplied, CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	byDigest := nr.Manifest
	if nr.Files != nil {
		byDigest = nil // contents come with the files
	}
	return preparedRevision{nr: nr, rev: rev, entries: entries, bySHA: bySHA, byDigest: byDigest}, nil
}

// writeRevision writes a prepared revision's blobs, row and manifest, and
// moves the draft head when asked, inside the caller's transaction.
func (s *Store) writeRevision(ctx context.Context, tx *sqlx.Tx, pr preparedRevision) (WriteStats, error) {
	rev, files, nr := pr.rev, pr.entries, pr.nr
	var stats WriteStats
	if err := s.checkBlobs(ctx, tx, pr.byDigest); err != nil {
		return stats, err
	}
	missing, err := s.missingBlobs(ctx, tx, pr.bySHA)
	if err != nil {
		return stats, err
	}
	written, bytes, err := putBlobs(ctx, tx, missing, pr.bySHA)
	if err != nil {
		return stats, err
	}
	stats.BlobsWritten, stats.BlobBytes = written, bytes
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO revisions (id, app_id, parent_id, merge_parent_id, source, author_id,
 run_id, message, file_count, total_size, applied, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		rev.ID, rev.AppID, nullStr(rev.ParentID), nullStr(rev.MergeParentID), rev.Source, nullStr(rev.AuthorID),
		nullStr(rev.RunID), rev.Message, rev.FileCount, rev.TotalSize, rev.Applied, rev.CreatedAt.UnixMilli()); err != nil {
		return stats, translate(err)
	}
	for start := 0; start < len(files); start += inChunk {
		end := min(start+inChunk, len(files))
		var q strings.Builder
		q.WriteString(`INSERT INTO revision_files (revision_id, path, blob_sha256, mode) VALUES `)
		args := make([]any, 0, (end-start)*4)
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			mode := files[i].Mode
			if mode == 0 {
				mode = 0o644
			}
			args = append(args, rev.ID, files[i].Path, files[i].SHA256, mode)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(q.String()), args...); err != nil {
			return stats, translate(err)
		}
	}
	if nr.AdvanceDraft {
		res, err := tx.ExecContext(ctx, tx.Rebind(`UPDATE apps SET draft_revision_id = ?, updated_at = ?
 WHERE id = ? AND COALESCE(draft_revision_id, '') = ?`), rev.ID, time.Now().UnixMilli(), rev.AppID, nr.DraftFrom)
		if err != nil {
			return stats, translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return stats, core.Errf(core.CodeRevisionConflict, "base_revision_id", "the app's draft head is no longer %q", nr.DraftFrom)
		}
	}
	if cp := nr.Checkpoint; cp != nil {
		cp.AppID, cp.RevisionID = rev.AppID, rev.ID
		if err := insertCheckpoint(ctx, tx, cp); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// newManifest sorts and checks a new revision's files, digesting Files'
// contents (returned by digest, to store) or taking Manifest as it is.
func newManifest(nr NewRevision) ([]ManifestEntry, map[string][]byte, error) {
	var entries []ManifestEntry
	bySHA := map[string][]byte{}
	if nr.Files != nil || nr.Manifest == nil {
		entries = make([]ManifestEntry, len(nr.Files))
		for i, f := range nr.Files {
			sha := digest(f.Data)
			entries[i] = ManifestEntry{Path: f.Path, SHA256: sha, Size: int64(len(f.Data)), Mode: f.Mode}
			bySHA[sha] = f.Data
		}
	} else {
		entries = append([]ManifestEntry(nil), nr.Manifest...)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	for i, e := range entries {
		if i > 0 && entries[i-1].Path == e.Path {
			return nil, nil, core.Errf(core.CodeInvalidRequest, "files", "path %s appears twice", e.Path)
		}
		if len(e.SHA256) != sha256.Size*2 {
			return nil, nil, core.Errf(core.CodeInvalidRequest, "files", "file %s has no content digest", e.Path)
		}
	}
	return entries, bySHA, nil
}

// checkBlobs fails unless every digest of manifest is stored.
func (s *Store) checkBlobs(ctx context.Context, tx *sqlx.Tx, manifest []ManifestEntry) error {
	if len(manifest) == 0 {
		return nil
	}
	want := make(map[string][]byte, len(manifest))
	for _, e := range manifest {
		want[e.SHA256] = nil
	}
	missing, err := s.missingBlobs(ctx, tx, want)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("store revision: content %s is not stored", missing[0])
	}
	return nil
}

// PutBlob stores one file's content under its sha256, unless it is stored
// already, and returns the digest. Contents are written one by one as a
// sandbox streams them, so a result is never held whole in memory.
func (s *Store) PutBlob(ctx context.Context, data []byte) (string, error) {
	sha := digest(data)
	var n int
	if err := s.r.GetContext(ctx, &n, s.rebind(`SELECT COUNT(*) FROM blobs WHERE sha256 = ?`), sha); err != nil {
		return "", translate(err)
	}
	if n > 0 {
		return sha, nil
	}
	if data == nil {
		data = []byte{}
	}
	_, err := s.w.ExecContext(ctx, s.rebind(`INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)
 ON CONFLICT (sha256) DO NOTHING`), sha, len(data), data, time.Now().UnixMilli())
	return sha, translate(err)
}

// Blobs reads contents by sha256 (those stored; a digest not stored is
// simply absent from the map).
func (s *Store) Blobs(ctx context.Context, shas []string) (map[string][]byte, error) {
	return s.blobs(ctx, shas)
}

// missingBlobs lists the digests not stored yet, in sorted order.
func (s *Store) missingBlobs(ctx context.Context, tx *sqlx.Tx, bySHA map[string][]byte) ([]string, error) {
	all := make([]string, 0, len(bySHA))
	for sha := range bySHA {
		all = append(all, sha)
	}
	sort.Strings(all)
	have := map[string]bool{}
	for start := 0; start < len(all); start += inChunk {
		q, args, err := sqlx.In(`SELECT sha256 FROM blobs WHERE sha256 IN (?)`, all[start:min(start+inChunk, len(all))])
		if err != nil {
			return nil, err
		}
		var found []string
		if err := tx.SelectContext(ctx, &found, tx.Rebind(q), args...); err != nil {
			return nil, translate(err)
		}
		for _, f := range found {
			have[f] = true
		}
	}
	var missing []string
	for _, sha := range all {
		if !have[sha] {
			missing = append(missing, sha)
		}
	}
	return missing, nil
}

func nullStr(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// revisionRow is a revisions row as scanned.
type revisionRow struct {
	ID            string         `db:"id"`
	AppID         string         `db:"app_id"`
	ParentID      sql.NullString `db:"parent_id"`
	MergeParentID sql.NullString `db:"merge_parent_id"`
	Source        string         `db:"source"`
	AuthorID      sql.NullString `db:"author_id"`
	RunID         sql.NullString `db:"run_id"`
	Message       string         `db:"message"`
	FileCount     int            `db:"file_count"`
	TotalSize     int64          `db:"total_size"`
	Applied       bool           `db:"applied"`
	CreatedAt     int64          `db:"created_at"`
}

const revisionColumns = `id, app_id, parent_id, merge_parent_id, source, author_id, run_id, message, file_count, total_size, applied, created_at`

func (row revisionRow) revision() Revision {
	return Revision{
		ID: row.ID, AppID: row.AppID, ParentID: row.ParentID.String, MergeParentID: row.MergeParentID.String,
		Source: row.Source, AuthorID: row.AuthorID.String, RunID: row.RunID.String, Message: row.Message,
		FileCount: row.FileCount, TotalSize: row.TotalSize, Applied: row.Applied, CreatedAt: fromMS(row.CreatedAt),
	}
}

// GetRevision reads a revision and its manifest (path order).
func (s *Store) GetRevision(ctx context.Context, id string) (Revision, []ManifestEntry, error) {
	var row revisionRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT `+revisionColumns+` FROM revisions WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Revision{}, nil, notFound("revision", id)
	}
	if err != nil {
		return Revision{}, nil, translate(err)
	}
	var entries []ManifestEntry
	if err := s.r.SelectContext(ctx, &entries, s.rebind(`SELECT f.path, f.blob_sha256, b.size, f.mode FROM revision_files f
 JOIN blobs b ON b.sha256 = f.blob_sha256 WHERE f.revision_id = ? ORDER BY f.path`), id); err != nil {
		return Revision{}, nil, translate(err)
	}
	return row.revision(), entries, nil
}

// ListRevisions returns an app's revisions newest first, older than the
// cursor revision (empty: from the newest).
func (s *Store) ListRevisions(ctx context.Context, appID, before string, limit int) ([]Revision, error) {
	q := `SELECT ` + revisionColumns + ` FROM revisions WHERE app_id = ?`
	args := []any{appID}
	if before != "" {
		q += ` AND (created_at, id) < (SELECT created_at, id FROM revisions WHERE id = ?)`
		args = append(args, before)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	var rows []revisionRow
	if err := s.r.SelectContext(ctx, &rows, s.rebind(q), args...); err != nil {
		return nil, translate(err)
	}
	out := make([]Revision, len(rows))
	for i, r := range rows {
		out[i] = r.revision()
	}
	return out, nil
}

// ReadRevisionFile returns one file's content at a revision.
func (s *Store) ReadRevisionFile(ctx context.Context, revisionID, path string) ([]byte, error) {
	var data []byte
	err := s.r.GetContext(ctx, &data, s.rebind(`SELECT b.data FROM revision_files f JOIN blobs b ON b.sha256 = f.blob_sha256
 WHERE f.revision_id = ? AND f.path = ?`), revisionID, path)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("file", path)
	}
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, translate(err)
}

// putBlobs stores the contents of missing (keys of bySHA not yet stored).
func putBlobs(ctx context.Context, tx *sqlx.Tx, missing []string, bySHA map[string][]byte) (int, int64, error) {
	now := time.Now().UnixMilli()
	var n int
	var total int64
	for _, sha := range missing {
		data := bySHA[sha]
		if data == nil {
			data = []byte{}
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)
 ON CONFLICT (sha256) DO NOTHING`), sha, len(data), data, now); err != nil {
			return n, total, translate(err)
		}
		n++
		total += int64(len(data))
	}
	return n, total, nil
}

// RevisionFiles materialises a revision as a file set (to provision a
// sandbox from it).
func (s *Store) RevisionFiles(ctx context.Context, revisionID string) ([]sandbox.File, error) {
	var rows []struct {
		Path string `db:"path"`
		Mode uint32 `db:"mode"`
		Data []byte `db:"data"`
	}
	if err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT f.path, f.mode, b.data FROM revision_files f
 JOIN blobs b ON b.sha256 = f.blob_sha256 WHERE f.revision_id = ? ORDER BY f.path`), revisionID); err != nil {
		return nil, translate(err)
	}
	out := make([]sandbox.File, len(rows))
	for i, r := range rows {
		out[i] = sandbox.File{Path: r.Path, Mode: r.Mode, Data: r.Data}
	}
	return out, nil
}

// StoredBlobBytes is the size of all stored file content (each distinct
// content once): what the app revisions cost on disk, before the database's
// own overhead.
func (s *Store) StoredBlobBytes(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	err := s.r.GetContext(ctx, &n, `SELECT SUM(size) FROM blobs`)
	return n.Int64, translate(err)
}
