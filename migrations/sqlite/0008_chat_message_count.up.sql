-- A chat session counts its messages, kept in the statements that add and
-- remove them: reading a chat's tail then needs no count(*) over the whole
-- chat, whose cost grew with every turn.
ALTER TABLE chat_sessions ADD COLUMN message_count BIGINT NOT NULL DEFAULT 0;
UPDATE chat_sessions SET message_count = (SELECT count(*) FROM chat_messages m WHERE m.chat_session_id = chat_sessions.id);
