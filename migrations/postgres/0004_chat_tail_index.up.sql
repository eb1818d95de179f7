-- A run reads its chat's newest turns (store.ChatSessionTail) ordered by
-- (created_at, id): with id in the index that walk needs no sort, and the
-- chat's length is counted from the index alone. It replaces the index on
-- (chat_session_id, created_at), which it covers.
CREATE INDEX chat_messages_tail ON chat_messages (chat_session_id, created_at, id);
DROP INDEX chat_messages_by_session;
