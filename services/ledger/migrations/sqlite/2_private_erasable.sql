-- Leaf format 2 (crates/tlog/src/entry.rs): a new leaf is 65 bytes of salted commitments
-- (`leaf`), the event's envelope and both salts are kept beside it and disclosed by the
-- visibility rule (services/ledger/src/visibility.rs); erasing content sets `envelope` and
-- the salts to NULL, the only change the archive allows. Rows from before are format 1:
-- their leaf is `envelope` itself, never erased. SQLite cannot drop a NOT NULL in place:
-- the table is rebuilt, rows copied as they are.
CREATE TABLE ledger_leaves_v2 (
    leaf_index     INTEGER PRIMARY KEY NOT NULL,
    event_id       TEXT    NOT NULL UNIQUE,
    stream_id      TEXT    NOT NULL,
    stream_version INTEGER NOT NULL,
    event_type     TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    -- The event's own chain hash (32 bytes).
    hash           BLOB    NOT NULL,
    -- The envelope (format 1: the leaf itself); NULL once erased.
    envelope       BLOB,
    leaf_format    INTEGER NOT NULL DEFAULT 1,
    -- Format 2: the 65-byte leaf.
    leaf           BLOB,
    -- The game (`table:<id>`, `tournament:<id>`) or person (`user:<id>`) it is about.
    subject        TEXT,
    body_salt      BLOB,
    chain_salt     BLOB,
    -- When the content was erased (NULL: not erased).
    erased_at_ms   INTEGER,
    CHECK (
        (leaf_format = 1 AND envelope IS NOT NULL AND leaf IS NULL)
        OR (leaf_format = 2 AND leaf IS NOT NULL AND length(leaf) = 65
            AND ((envelope IS NOT NULL AND body_salt IS NOT NULL AND chain_salt IS NOT NULL
                  AND erased_at_ms IS NULL)
                 OR (envelope IS NULL AND body_salt IS NULL AND chain_salt IS NULL
                     AND erased_at_ms IS NOT NULL))))
);
INSERT INTO ledger_leaves_v2 (leaf_index, event_id, stream_id, stream_version, event_type,
    correlation_id, hash, envelope)
SELECT leaf_index, event_id, stream_id, stream_version, event_type, correlation_id, hash,
    envelope
FROM ledger_leaves;
DROP TABLE ledger_leaves;
ALTER TABLE ledger_leaves_v2 RENAME TO ledger_leaves;
CREATE INDEX ledger_leaves_by_correlation ON ledger_leaves (correlation_id);
-- Erasing a person's content finds their events here (a game's are read by correlation id).
-- A stream's versions are checked against `ledger_heads` as events arrive: no unique index
-- over every leaf's (stream, version) any more.
CREATE INDEX ledger_leaves_by_person ON ledger_leaves (subject) WHERE subject LIKE 'user:%';
CREATE TRIGGER ledger_leaves_no_update BEFORE UPDATE ON ledger_leaves
WHEN NOT (OLD.leaf_format = 2 AND OLD.envelope IS NOT NULL
    AND NEW.leaf_index = OLD.leaf_index AND NEW.event_id = OLD.event_id
    AND NEW.stream_id = OLD.stream_id AND NEW.stream_version = OLD.stream_version
    AND NEW.event_type = OLD.event_type AND NEW.correlation_id = OLD.correlation_id
    AND NEW.hash = OLD.hash AND NEW.leaf_format = OLD.leaf_format AND NEW.leaf = OLD.leaf
    AND NEW.subject IS OLD.subject
    AND NEW.envelope IS NULL AND NEW.body_salt IS NULL AND NEW.chain_salt IS NULL
    AND NEW.erased_at_ms IS NOT NULL)
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: UPDATE on ledger_leaves refused (only erasing a format 2 leaf''s content is allowed)'); END;
CREATE TRIGGER ledger_leaves_no_delete BEFORE DELETE ON ledger_leaves
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: DELETE on ledger_leaves refused'); END;

-- Each stream's last ingested event, which the next must link to; `halted` once an event of
-- the stream was refused.
CREATE TABLE ledger_heads (
    stream_id      TEXT    PRIMARY KEY NOT NULL,
    stream_version INTEGER NOT NULL,
    hash           BLOB    NOT NULL,
    halted         INTEGER NOT NULL DEFAULT 0
);
INSERT INTO ledger_heads (stream_id, stream_version, hash)
SELECT l.stream_id, l.stream_version, l.hash FROM ledger_leaves l
WHERE l.stream_version = (SELECT MAX(m.stream_version) FROM ledger_leaves m
                          WHERE m.stream_id = l.stream_id);
INSERT INTO ledger_heads (stream_id, stream_version, hash, halted)
SELECT DISTINCT stream_id, 0, zeroblob(32), 1 FROM ledger_refused WHERE true
ON CONFLICT (stream_id) DO UPDATE SET halted = 1;

-- Games that finished: their private events and chain links may be seen from then on.
CREATE TABLE ledger_finished (
    subject    TEXT    PRIMARY KEY NOT NULL,
    leaf_index INTEGER NOT NULL
);
-- Erasures: `event:<id>` (a removed chat line) and `user:<id>` (a deleted account).
CREATE TABLE ledger_erasures (
    target     TEXT    PRIMARY KEY NOT NULL,
    leaf_index INTEGER NOT NULL
);
CREATE TRIGGER ledger_finished_no_update BEFORE UPDATE ON ledger_finished
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: UPDATE on ledger_finished refused'); END;
CREATE TRIGGER ledger_finished_no_delete BEFORE DELETE ON ledger_finished
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: DELETE on ledger_finished refused'); END;
CREATE TRIGGER ledger_erasures_no_update BEFORE UPDATE ON ledger_erasures
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: UPDATE on ledger_erasures refused'); END;
CREATE TRIGGER ledger_erasures_no_delete BEFORE DELETE ON ledger_erasures
BEGIN SELECT RAISE(ABORT, 'the ledger archive is append-only: DELETE on ledger_erasures refused'); END;
