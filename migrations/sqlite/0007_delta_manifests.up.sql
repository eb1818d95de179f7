-- A revision's manifest may be stored as a delta: its rows in
-- revision_files are then only the files new or changed against
-- manifest_base (a revision whose rows are its whole manifest), and
-- revision_drops names base files it no longer has. A turn that changes one
-- file of a large app then writes one row, not a copy of every row.
-- (No REFERENCES on the column: SQLite cannot drop a column that is in a
-- foreign key, and the down migration drops it. Revisions are never
-- deleted, so the base a row names stays.)
ALTER TABLE revisions ADD COLUMN manifest_base TEXT;
CREATE TABLE revision_drops (
  revision_id  TEXT NOT NULL REFERENCES revisions(id),
  path         TEXT NOT NULL,
  PRIMARY KEY (revision_id, path)
);
