-- Channels that have a row: one is created by the first post (its row lock serialises the
-- channel's appends across replicas) or by the table's GameFinished (read_only = 1), kept by
-- the `chat-members` consumer.
CREATE TABLE chat_channels (
    channel   TEXT    PRIMARY KEY NOT NULL,
    read_only BIGINT NOT NULL DEFAULT 0
);
-- Who may read and post in a table's channel: its seated players (seat 0..3) and spectators
-- (seat -1), projected from the tables service's events by the `chat-members` consumer.
CREATE TABLE chat_members (
    table_id TEXT    NOT NULL,
    user_id  TEXT    NOT NULL,
    seat     BIGINT NOT NULL,
    PRIMARY KEY (table_id, user_id, seat)
);
-- The messages as readers see them (history), written in the transaction that appends each
-- message's event; a removal clears the text in the tombstone's transaction.
CREATE TABLE chat_messages (
    channel    TEXT    NOT NULL,
    seq        BIGINT NOT NULL,
    message_id TEXT    NOT NULL UNIQUE,
    author_id  TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    posted_us  BIGINT NOT NULL,
    removed    BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (channel, seq)
);
-- Mutes in force or past, per user and channel ('' = every channel), written with the
-- UserMuted event.
CREATE TABLE chat_mutes (
    user_id  TEXT   NOT NULL,
    channel  TEXT   NOT NULL,
    until_s  BIGINT NOT NULL,
    PRIMARY KEY (user_id, channel)
);
