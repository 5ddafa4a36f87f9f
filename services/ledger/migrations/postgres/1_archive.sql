-- The ledger's archive: every event it ingested, leaf i of the Merkle tree being the row with
-- leaf_index i (its envelope bytes). Append-only: UPDATE, DELETE and TRUNCATE are refused by
-- triggers, so the tree rebuilt from it at start is the tree whose checkpoints were signed.
CREATE TABLE ledger_leaves (
    leaf_index     BIGINT PRIMARY KEY,
    event_id       TEXT   NOT NULL UNIQUE,
    stream_id      TEXT   NOT NULL,
    stream_version BIGINT NOT NULL,
    event_type     TEXT   NOT NULL,
    correlation_id TEXT   NOT NULL,
    -- The event's own chain hash (32 bytes): the next event of the stream must link to it.
    hash           BYTEA  NOT NULL,
    -- The leaf: the fairdeal.event.v1.Envelope bytes.
    envelope       BYTEA  NOT NULL,
    UNIQUE (stream_id, stream_version)
);
CREATE INDEX ledger_leaves_by_correlation ON ledger_leaves (correlation_id);

-- Events refused at ingest (a gap, a broken chain, a fork): the first one of a stream halts
-- it, every later event of that stream is refused too. Never in the tree.
CREATE TABLE ledger_refused (
    event_id       TEXT   PRIMARY KEY,
    stream_id      TEXT   NOT NULL,
    stream_version BIGINT NOT NULL,
    reason         TEXT   NOT NULL,
    envelope       BYTEA  NOT NULL,
    refused_at_ms  BIGINT NOT NULL
);
CREATE INDEX ledger_refused_by_stream ON ledger_refused (stream_id);

-- Signed checkpoints, one per tree size.
CREATE TABLE ledger_checkpoints (
    tree_size     BIGINT PRIMARY KEY,
    root_hash     BYTEA  NOT NULL,
    note          TEXT   NOT NULL,
    signed_at_ms  BIGINT NOT NULL
);

CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the ledger archive is append-only: % on % refused', TG_OP, TG_TABLE_NAME;
END
$$;

CREATE TRIGGER ledger_leaves_append_only BEFORE UPDATE OR DELETE ON ledger_leaves
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_leaves_no_truncate BEFORE TRUNCATE ON ledger_leaves
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_refused_append_only BEFORE UPDATE OR DELETE ON ledger_refused
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_refused_no_truncate BEFORE TRUNCATE ON ledger_refused
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_checkpoints_append_only BEFORE UPDATE OR DELETE ON ledger_checkpoints
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_checkpoints_no_truncate BEFORE TRUNCATE ON ledger_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
