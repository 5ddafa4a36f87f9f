-- The embedded event log. Append-only: the triggers reject UPDATE and DELETE (SQLite has no
-- TRUNCATE). Positions are the rowid: SQLite has a single writer, so rows become visible in
-- position order and a reader can never skip one.
CREATE TABLE events (
    position       INTEGER PRIMARY KEY,
    event_id       BLOB    NOT NULL UNIQUE CHECK (length(event_id) = 16),
    stream_id      TEXT    NOT NULL,
    version        INTEGER NOT NULL CHECK (version >= 1),
    event_type     TEXT    NOT NULL,
    -- Microseconds since 1970-01-01T00:00:00Z.
    occurred_at_us INTEGER NOT NULL,
    correlation_id TEXT    NOT NULL,
    causation_id   TEXT    NOT NULL,
    -- W3C trace context as a JSON object of strings.
    trace_context  TEXT    NOT NULL,
    payload        BLOB    NOT NULL,
    prev_hash      BLOB    NOT NULL CHECK (length(prev_hash) = 32),
    hash           BLOB    NOT NULL CHECK (length(hash) = 32),
    UNIQUE (stream_id, version)
) STRICT;

CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: UPDATE rejected');
END;

CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: DELETE rejected');
END;
