-- Contents bigger than one chunk are stored as a series of chunks, so that
-- neither the host nor the database driver ever holds a large file whole:
-- the host writes them as they stream from a sandbox, hashing as it goes,
-- and reads them back one chunk at a time. blobs.chunk_key, when set, names
-- the chunks (blobs.data is then empty); rows without one keep their
-- content inline, as every row did before.
ALTER TABLE blobs ADD COLUMN chunk_key TEXT;
CREATE INDEX blobs_by_chunk_key ON blobs (chunk_key);

-- created_at comes before data so that sweeping orphaned chunks (from a
-- write that died before its blobs row) reads no content.
CREATE TABLE blob_chunks (
  chunk_key   TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  created_at  BIGINT NOT NULL,
  data        BYTEA NOT NULL,
  PRIMARY KEY (chunk_key, seq)
);
