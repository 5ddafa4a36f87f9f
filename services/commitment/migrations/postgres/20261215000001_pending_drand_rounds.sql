-- Commitments (tables and tournaments) with a drand round fixed at commit that may not be
-- bound yet: a row is written before the commitment event and deleted once nothing is left to
-- bind, so that a starting service restarts the binders of these only, without reading the
-- whole log (services/commitment/src/pending.rs). A row whose commitment event never got
-- appended is harmless and deleted at a later start.
CREATE TABLE IF NOT EXISTS pending_drand_rounds (
    -- 'table' or 'tournament'.
    subject    text   NOT NULL,
    subject_id uuid   NOT NULL,
    -- Unix seconds of the row's writing.
    created_at bigint NOT NULL,
    PRIMARY KEY (subject, subject_id)
);
