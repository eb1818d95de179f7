DROP TABLE run_commands;
DROP INDEX runs_active_by_owner;
ALTER TABLE runs DROP COLUMN owner;
DROP TABLE hosts;
