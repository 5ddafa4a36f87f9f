-- The event log of one service schema. Run by PgEventStore::migrate with search_path set
-- to that schema, so the names below are created there.
--
-- Append-only: rows are inserted once and never changed; the triggers at the end reject
-- UPDATE, DELETE and TRUNCATE whoever asks.
--
-- Global positions (see crates/eventstore/src/postgres.rs for the proof sketch): a row's
-- position is (xid of the inserting transaction << 20) + its index within that transaction.
-- Readers return only positions below (pg_snapshot_xmin(pg_current_snapshot()) << 20), i.e.
-- rows of transactions that are all settled, so an event that commits late always lands
-- above every position already returned and is never skipped.
CREATE TABLE events (
    position       BIGINT NOT NULL,
    -- The inserting transaction, stamped by a trigger (never trusted from the client).
    tx_id          xid8   NOT NULL,
    event_id       UUID   NOT NULL,
    stream_id      TEXT   NOT NULL,
    version        BIGINT NOT NULL,
    event_type     TEXT   NOT NULL,
    -- Microseconds since 1970-01-01T00:00:00Z (exact; timestamptz would round-trip through
    -- floating point in some drivers, and the value is hashed).
    occurred_at_us BIGINT NOT NULL,
    correlation_id TEXT   NOT NULL,
    causation_id   TEXT   NOT NULL,
    -- W3C trace context as a JSON object of strings.
    trace_context  JSONB  NOT NULL,
    payload        BYTEA  NOT NULL,
    prev_hash      BYTEA  NOT NULL,
    hash           BYTEA  NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (position),
    CONSTRAINT events_event_id_key UNIQUE (event_id),
    CONSTRAINT events_stream_version_key UNIQUE (stream_id, version),
    CONSTRAINT events_version_check CHECK (version >= 1),
    CONSTRAINT events_hash_length_check CHECK (octet_length(prev_hash) = 32 AND octet_length(hash) = 32),
    CONSTRAINT events_position_tx_check CHECK ((position >> 20) = tx_id::text::bigint)
);

COMMENT ON TABLE events IS
    'fairdeal event log: append-only, hash-chained per stream; position = (xid << 20) + index';

CREATE FUNCTION events_stamp_tx() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tx_id := pg_current_xact_id();
    RETURN NEW;
END
$$;

CREATE TRIGGER events_stamp_tx
    BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_stamp_tx();

CREATE FUNCTION events_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only: % rejected', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_reject_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_reject_change();
