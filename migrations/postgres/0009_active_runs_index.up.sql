-- One small index for the runs that are still going. It replaces
-- runs_by_status, which held every run ever made and was rewritten at each
-- status change, and runs_active_by_owner: together they cost six index
-- page writes per chat turn on SQLite, this one three, and it never grows
-- with the history. Queries name the same predicate, word for word
-- (store.activeRunsWhere): both databases use a partial index only for a
-- query whose WHERE contains it, and not for a bound parameter list.
CREATE INDEX runs_active ON runs (status, owner) WHERE status IN ('queued', 'running', 'paused');
DROP INDEX runs_by_status;
DROP INDEX runs_active_by_owner;
