-- The sandbox's files as of an engine's last saved state, as a JSON
-- manifest [{"p": path, "m": mode, "s": sha256}] over blobs: a run resumed
-- after the host died starts from the files its saved conversation knows.
ALTER TABLE engine_states ADD COLUMN work_manifest TEXT;
