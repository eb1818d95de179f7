-- Every delta manifest is written out whole before the delta's columns go.
INSERT INTO revision_files (revision_id, path, blob_sha256, mode)
SELECT r.id, f.path, f.blob_sha256, f.mode FROM revisions r JOIN revision_files f ON f.revision_id = r.manifest_base
WHERE r.manifest_base IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM revision_files o WHERE o.revision_id = r.id AND o.path = f.path)
  AND NOT EXISTS (SELECT 1 FROM revision_drops d WHERE d.revision_id = r.id AND d.path = f.path);
DROP TABLE revision_drops;
ALTER TABLE revisions DROP COLUMN manifest_base;
