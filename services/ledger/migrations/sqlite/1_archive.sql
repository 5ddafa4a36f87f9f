-- The ledger's archive: every event it ingested, leaf i of the Merkle tree being the row with
-- leaf_index i (its envelope bytes). Append-only: UPDATE and DELETE are refused by triggers,
-- so the tree rebuilt from it at start is the tree whose checkpoints were signed.
CREATE TABLE ledger_leaves (
    leaf_index     INTEGER PRIMARY KEY NOT NULL,
    event_id       TEXT    NOT NULL UNIQUE,
    stream_id      TEXT    NOT NULL,
    stream_version INTEGER NOT NULL,
    event_type     TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    -- The event's own chain hash (32 bytes): the next event of the stream must link to it.
    hash           BLOB    NOT NULL,
    -- The leaf: the fairdeal.event.v1.Envelope bytes.
    envelope       BLOB    NOT NULL,
    UNIQUE (stream_id, stream_version)
);
CREATE INDEX ledger_leaves_by_correlation ON ledger_leaves (correlation_id);

-- Events refused at ingest (a gap, a broken chain, a fork): the first one of a stream halts
-- it, every later event of that stream is refused too. Never in the tree.
CREATE TABLE ledger_refused (
    event_id       TEXT    PRIMARY KEY NOT NULL,
    stream_id      TEXT    NOT NULL,
    stream_version INTEGER NOT NULL,
    reason         TEXT    NOT NULL,
    envelope       BLOB    NOT NULL,
    refused_at_ms  INTEGER NOT NULL
);
CREATE INDEX ledger_refused_by_stream ON ledger_refused (stream_id);

-- Signed checkpoints, one per tree size.
CREATE TABLE ledger_checkpoints (
    tree_size     INTEGER PRIMARY KEY NOT NULL,
    root_hash     BLOB    NOT NULL,
    note          TEXT    NOT NULL,
    signed_at_ms  INTEGER NOT NULL
);

CREATE TRIGGER ledger_leaves_no_update BEFORE UPDATE ON ledger_leaves
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: UPDATE on ledger_leaves refused'); END;
CREATE TRIGGER ledger_leaves_no_delete BEFORE DELETE ON ledger_leaves
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: DELETE on ledger_leaves refused'); END;
CREATE TRIGGER ledger_refused_no_update BEFORE UPDATE ON ledger_refused
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: UPDATE on ledger_refused refused'); END;
CREATE TRIGGER ledger_refused_no_delete BEFORE DELETE ON ledger_refused
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: DELETE on ledger_refused refused'); END;
CREATE TRIGGER ledger_checkpoints_no_update BEFORE UPDATE ON ledger_checkpoints
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: UPDATE on ledger_checkpoints refused'); END;
CREATE TRIGGER ledger_checkpoints_no_delete BEFORE DELETE ON ledger_checkpoints
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: DELETE on ledger_checkpoints refused'); END;
