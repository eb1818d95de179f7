ALTER TABLE chat_sessions DROP COLUMN message_count;
