CREATE INDEX chat_messages_by_session ON chat_messages (chat_session_id, created_at);
DROP INDEX chat_messages_tail;
