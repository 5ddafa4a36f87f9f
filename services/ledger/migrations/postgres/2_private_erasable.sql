-- Leaf format 2 (crates/tlog/src/entry.rs): a new leaf is 65 bytes of salted commitments
-- (`leaf`), the event's envelope and both salts are kept beside it and disclosed by the
-- visibility rule (services/ledger/src/visibility.rs); erasing content sets `envelope` and
-- the salts to NULL, the only change the archive allows. Rows from before are format 1:
-- their leaf is `envelope` itself, never erased.
ALTER TABLE ledger_leaves ADD COLUMN leaf_format SMALLINT NOT NULL DEFAULT 1;
ALTER TABLE ledger_leaves ADD COLUMN leaf BYTEA;
-- The game (`table:<id>`, `tournament:<id>`) or person (`user:<id>`) the event is about.
ALTER TABLE ledger_leaves ADD COLUMN subject TEXT;
ALTER TABLE ledger_leaves ADD COLUMN body_salt BYTEA;
ALTER TABLE ledger_leaves ADD COLUMN chain_salt BYTEA;
-- When the content was erased (NULL: not erased).
ALTER TABLE ledger_leaves ADD COLUMN erased_at_ms BIGINT;
ALTER TABLE ledger_leaves ALTER COLUMN envelope DROP NOT NULL;
ALTER TABLE ledger_leaves ADD CONSTRAINT ledger_leaves_format CHECK (
    (leaf_format = 1 AND envelope IS NOT NULL AND leaf IS NULL)
    OR (leaf_format = 2 AND leaf IS NOT NULL AND octet_length(leaf) = 65
        AND ((envelope IS NOT NULL AND body_salt IS NOT NULL AND chain_salt IS NOT NULL
              AND erased_at_ms IS NULL)
             OR (envelope IS NULL AND body_salt IS NULL AND chain_salt IS NULL
                 AND erased_at_ms IS NOT NULL))));
-- Erasing a person's content finds their events here; a game's events need no index by
-- subject (its export reads them by correlation id).
CREATE INDEX ledger_leaves_by_person ON ledger_leaves (subject) WHERE subject LIKE 'user:%';
-- A stream's versions are checked against `ledger_heads` (below) as events arrive; a unique
-- index over every leaf's (stream, version) was a third of the cost of an insert.
ALTER TABLE ledger_leaves DROP CONSTRAINT ledger_leaves_stream_id_stream_version_key;

CREATE FUNCTION ledger_leaves_erase_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.leaf_format = 2 AND OLD.envelope IS NOT NULL
       AND NEW.leaf_index = OLD.leaf_index AND NEW.event_id = OLD.event_id
       AND NEW.stream_id = OLD.stream_id AND NEW.stream_version = OLD.stream_version
       AND NEW.event_type = OLD.event_type AND NEW.correlation_id = OLD.correlation_id
       AND NEW.hash = OLD.hash AND NEW.leaf_format = OLD.leaf_format AND NEW.leaf = OLD.leaf
       AND NEW.subject IS NOT DISTINCT FROM OLD.subject
       AND NEW.envelope IS NULL AND NEW.body_salt IS NULL AND NEW.chain_salt IS NULL
       AND NEW.erased_at_ms IS NOT NULL THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the ledger archive is append-only: % on % refused (only erasing a format 2 leaf''s content is allowed)', TG_OP, TG_TABLE_NAME;
END
$$;
DROP TRIGGER ledger_leaves_append_only ON ledger_leaves;
CREATE TRIGGER ledger_leaves_append_only BEFORE UPDATE OR DELETE ON ledger_leaves
    FOR EACH ROW EXECUTE FUNCTION ledger_leaves_erase_only();

-- Each stream's last ingested event, which the next must link to; `halted` once an event of
-- the stream was refused (every later one is refused too). One row per stream, so a batch's
-- chain checks read its streams' heads in one statement.
CREATE TABLE ledger_heads (
    stream_id      TEXT   PRIMARY KEY,
    stream_version BIGINT NOT NULL,
    hash           BYTEA  NOT NULL,
    halted         BIGINT NOT NULL DEFAULT 0
);
INSERT INTO ledger_heads (stream_id, stream_version, hash)
SELECT DISTINCT ON (stream_id) stream_id, stream_version, hash
FROM ledger_leaves ORDER BY stream_id, stream_version DESC;
INSERT INTO ledger_heads (stream_id, stream_version, hash, halted)
SELECT DISTINCT stream_id, 0, decode(repeat('00', 32), 'hex'), 1 FROM ledger_refused
ON CONFLICT (stream_id) DO UPDATE SET halted = 1;

-- Games that finished (`table:<id>` at its GameFinished, `tournament:<id>` at its reveal):
-- their private events and chain links may be seen from then on.
CREATE TABLE ledger_finished (
    subject    TEXT   PRIMARY KEY,
    leaf_index BIGINT NOT NULL
);
-- Erasures: `event:<id>` (a removed chat line) and `user:<id>` (a deleted account). An event
-- they reach that arrives later is archived without its content.
CREATE TABLE ledger_erasures (
    target     TEXT   PRIMARY KEY,
    leaf_index BIGINT NOT NULL
);
CREATE TRIGGER ledger_finished_append_only BEFORE UPDATE OR DELETE ON ledger_finished
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_finished_no_truncate BEFORE TRUNCATE ON ledger_finished
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_erasures_append_only BEFORE UPDATE OR DELETE ON ledger_erasures
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_erasures_no_truncate BEFORE TRUNCATE ON ledger_erasures
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only();
