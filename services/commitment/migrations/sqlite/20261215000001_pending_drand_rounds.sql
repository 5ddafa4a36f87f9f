-- Commitments with a drand round that may not be bound yet (see the PostgreSQL migration);
-- ids are hyphenated UUID text.
CREATE TABLE IF NOT EXISTS pending_drand_rounds (
    subject    TEXT    NOT NULL,
    subject_id TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (subject, subject_id)
);
