ALTER TABLE engine_states DROP COLUMN work_manifest;
