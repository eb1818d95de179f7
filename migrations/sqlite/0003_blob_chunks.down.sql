-- Going down loses the content of every chunked blob (its blobs row stays,
-- with empty data): a binary of schema 2 would serve those files empty.
-- Only go down on a database that never stored a file bigger than a chunk.
DROP INDEX blobs_by_chunk_key;
ALTER TABLE blobs DROP COLUMN chunk_key;
DROP TABLE blob_chunks;
