-- fairdeal-bus tables (SQLite, the embedded default). Versions 2000-2999 belong to the bus; they
-- are tracked in their own table `_fairdeal_bus_migrations` so they never clash with the event
-- store's migrator. Event ids are stored as hyphenated UUID text.

-- Outbox relays: the last global position whose publish JetStream acknowledged.
CREATE TABLE bus_relay_checkpoints (
    relay      TEXT    PRIMARY KEY NOT NULL,
    position   INTEGER NOT NULL CHECK (position >= 0),
    updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Consumers: the last position (global position for the embedded bus, stream sequence for
-- JetStream) settled by the consumer, written in the same transaction as the handler's effects.
CREATE TABLE bus_consumer_positions (
    consumer   TEXT    PRIMARY KEY NOT NULL,
    position   INTEGER NOT NULL CHECK (position >= 0),
    updated_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Events settled (applied or dead-lettered) by each consumer, written in the same transaction as
-- the handler's effects: a redelivered event whose id is here is acknowledged without re-applying.
CREATE TABLE bus_processed_events (
    consumer     TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    processed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (consumer, event_id)
) WITHOUT ROWID;

-- Poison events a consumer gave up on, with the reason, for operators to inspect and replay.
CREATE TABLE bus_dead_letters (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    consumer         TEXT    NOT NULL,
    position         INTEGER NOT NULL,
    event_id         TEXT,
    stream_id        TEXT,
    event_type       TEXT,
    attempts         INTEGER NOT NULL,
    reason           TEXT    NOT NULL,
    payload          BLOB    NOT NULL,
    dead_lettered_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (consumer, position)
);
