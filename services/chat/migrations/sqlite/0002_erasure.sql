-- The key of each message's sealed text (`MessagePosted.sealed_text`, crates/shred), inserted
-- in the transaction that appends the message's event. Deleting it erases the text from every
-- copy of the log: a moderator's removal deletes it with the tombstone, the author's account
-- deletion deletes all of theirs. Never in an event, a log line or an error.
CREATE TABLE chat_message_keys (
    message_id  TEXT  PRIMARY KEY NOT NULL,
    author_id   TEXT  NOT NULL,
    subject_key BLOB  NOT NULL
);
CREATE INDEX chat_message_keys_author ON chat_message_keys (author_id);
-- An account deletion clears every history row of its author.
CREATE INDEX chat_messages_author ON chat_messages (author_id);
-- Every author, and whether their account was deleted (`fairdeal.auth.v1.AccountDeleted`, read
-- by the `chat-accounts` consumer): a post reads its author's row in its write transaction
-- (SQLite has one writer), so a post racing the deletion either commits first and is erased
-- with the rest, or sees the deletion and is refused.
CREATE TABLE chat_authors (
    user_id TEXT   PRIMARY KEY NOT NULL,
    erased  INTEGER NOT NULL DEFAULT 0
);
