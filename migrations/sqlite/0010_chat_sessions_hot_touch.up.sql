-- A chat session is touched (updated_at) twice per turn. With updated_at in
-- an index every touch rewrote the index entries; without it PostgreSQL
-- updates the row in place (HOT) and SQLite leaves the index alone. Listing a
-- user's sessions of an app sorts them, which stays cheap for the numbers of
-- sessions one user keeps in one app.
CREATE INDEX chat_sessions_by_app_owner ON chat_sessions (app_id, user_id);
DROP INDEX chat_sessions_by_app_user;
