package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
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
		if nr.RunID != "" && s.fenced() {
			// A run's result is its owner's to store: a host that lost
			// the run's lease must not add a revision for it.
			if err := s.holdRun(ctx, tx, nr.RunID); err != nil {
				return err
			}
		}
		stats, err = s.writeRevision(ctx, tx, &pr)
		return err
	})
	if err != nil {
		return Revision{}, WriteStats{}, err
	}
	s.remember(pr)
	return pr.rev, stats, nil
}

// remember puts a committed revision's manifest in the manifest cache: the
// next run of its app starts from it (its result is applied against it)
// and need not read it back.
func (s *Store) remember(pr preparedRevision) {
	m := make([]ManifestEntry, len(pr.entries))
	for i, e := range pr.entries {
		e.Mode = storedMode(e.Mode)
		m[i] = e
	}
	s.manifests.put(pr.rev.ID, m, pr.base)
}

// storedMode is the mode a manifest entry is stored with (0: a plain file).
func storedMode(m uint32) uint32 {
	if m == 0 {
		return 0o644
	}
	return m
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
	// base is set by writeRevision: the revision its stored manifest is a
	// delta against ("": stored whole).
	base string
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

// writeRevision writes a prepared revision's blobs, row and manifest (a
// delta against an earlier whole one when planDelta finds one), and moves
// the draft head when asked, inside the caller's transaction.
func (s *Store) writeRevision(ctx context.Context, tx *sqlx.Tx, pr *preparedRevision) (WriteStats, error) {
	rev, files, nr := pr.rev, pr.entries, pr.nr
	var stats WriteStats
	delta := s.planDelta(rev.ParentID, files)
	// Contents that stored manifests name are stored (revision_files
	// references blobs): only the others are checked.
	shas, bySHA := delta.unstored(pr.byDigest, pr.bySHA)
	if err := s.checkBlobs(ctx, tx, shas); err != nil {
		return stats, fmt.Errorf("store revision: %w", err)
	}
	missing, err := s.missingBlobs(ctx, tx, bySHA)
	if err != nil {
		return stats, err
	}
	written, bytes, err := putBlobs(ctx, tx, missing, bySHA)
	if err != nil {
		return stats, err
	}
	stats.BlobsWritten, stats.BlobBytes = written, bytes
	if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO revisions (id, app_id, parent_id, merge_parent_id, source, author_id,
 run_id, message, file_count, total_size, applied, created_at, manifest_base) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		rev.ID, rev.AppID, nullStr(rev.ParentID), nullStr(rev.MergeParentID), rev.Source, nullStr(rev.AuthorID),
		nullStr(rev.RunID), rev.Message, rev.FileCount, rev.TotalSize, rev.Applied, rev.CreatedAt.UnixMilli(),
		nullStr(delta.base)); err != nil {
		return stats, translate(err)
	}
	if delta.base != "" {
		files = delta.changed
		if err := s.insertDrops(ctx, tx, rev.ID, delta.dropped); err != nil {
			return stats, err
		}
	}
	pr.base = delta.base
	per := s.rowsPerInsert(4)
	for start := 0; start < len(files); start += per {
		end := min(start+per, len(files))
		var q strings.Builder
		q.WriteString(`INSERT INTO revision_files (revision_id, path, blob_sha256, mode) VALUES `)
		args := make([]any, 0, (end-start)*4)
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, rev.ID, files[i].Path, files[i].SHA256, storedMode(files[i].Mode))
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

// insertDrops records the base paths a delta manifest does not have.
func (s *Store) insertDrops(ctx context.Context, tx *sqlx.Tx, revisionID string, paths []string) error {
	per := s.rowsPerInsert(2)
	for start := 0; start < len(paths); start += per {
		end := min(start+per, len(paths))
		q := `INSERT INTO revision_drops (revision_id, path) VALUES (?, ?)` + strings.Repeat(`, (?, ?)`, end-start-1)
		args := make([]any, 0, (end-start)*2)
		for _, p := range paths[start:end] {
			args = append(args, revisionID, p)
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(q), args...); err != nil {
			return translate(err)
		}
	}
	return nil
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
	byPath := func(a, b ManifestEntry) int { return strings.Compare(a.Path, b.Path) }
	if !slices.IsSortedFunc(entries, byPath) { // a result comes in path order
		slices.SortFunc(entries, byPath)
	}
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
	// ManifestBase is read only where a revision's manifest is.
	ManifestBase sql.NullString `db:"manifest_base"`
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
	row, entries, err := s.getRevision(ctx, id)
	if err != nil {
		return Revision{}, nil, err
	}
	return row.revision(), entries, nil
}

// getRevision is GetRevision with the row as stored.
func (s *Store) getRevision(ctx context.Context, id string) (revisionRow, []ManifestEntry, error) {
	var row revisionRow
	err := s.r.GetContext(ctx, &row, s.rebind(`SELECT `+revisionColumns+`, manifest_base FROM revisions WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return row, nil, notFound("revision", id)
	}
	if err != nil {
		return row, nil, translate(err)
	}
	var entries []ManifestEntry
	if err := s.r.SelectContext(ctx, &entries, s.rebind(`SELECT m.path, m.blob_sha256, b.size, m.mode FROM `+manifestSource(false)+`
 JOIN blobs b ON b.sha256 = m.blob_sha256 ORDER BY m.path`), manifestArgs(id)...); err != nil {
		return row, nil, translate(err)
	}
	return row, entries, nil
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
	var r blobRow
	err := s.r.GetContext(ctx, &r, s.rebind(`SELECT b.sha256, b.size, b.chunk_key FROM `+manifestSource(true)+`
 JOIN blobs b ON b.sha256 = m.blob_sha256`), manifestArgs(revisionID, path)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("file", path)
	}
	if err != nil {
		return nil, translate(err)
	}
	return s.readBlob(ctx, r)
}

// OpenRevisionFile returns a reader of one file's content at a revision and
// its size; a large file is read a chunk at a time as it is consumed.
func (s *Store) OpenRevisionFile(ctx context.Context, revisionID, path string) (io.Reader, int64, error) {
	var sha string
	err := s.r.GetContext(ctx, &sha, s.rebind(`SELECT m.blob_sha256 FROM `+manifestSource(true)), manifestArgs(revisionID, path)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, notFound("file", path)
	}
	if err != nil {
		return nil, 0, translate(err)
	}
	return s.OpenBlob(ctx, sha)
}

// RevisionFiles materialises a revision as a file set (to provision a
// sandbox from it). Each file is held once, whole: a chunked content is
// read a chunk at a time into a buffer of its size.
func (s *Store) RevisionFiles(ctx context.Context, revisionID string) ([]sandbox.File, error) {
	var rows []struct {
		Path string `db:"path"`
		Mode uint32 `db:"mode"`
		blobRow
		// Data is the inline content (nil for a chunked one).
		Data []byte `db:"data"`
	}
	if err := s.r.SelectContext(ctx, &rows, s.rebind(`SELECT m.path, m.mode, b.sha256, b.size, b.chunk_key,
 CASE WHEN b.chunk_key IS NULL THEN b.data END AS data FROM `+manifestSource(false)+`
 JOIN blobs b ON b.sha256 = m.blob_sha256 ORDER BY m.path`), manifestArgs(revisionID)...); err != nil {
		return nil, translate(err)
	}
	out := make([]sandbox.File, len(rows))
	for i := range rows {
		r := &rows[i]
		data := r.Data
		if r.ChunkKey.Valid {
			var err error
			if data, err = s.readBlob(ctx, r.blobRow); err != nil {
				return nil, err
			}
		}
		if data == nil {
			data = []byte{}
		}
		out[i] = sandbox.File{Path: r.Path, Mode: r.Mode, Data: data}
		r.Data = nil
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
