CREATE INDEX chat_sessions_by_app_user ON chat_sessions (app_id, user_id, updated_at);
DROP INDEX chat_sessions_by_app_owner;
