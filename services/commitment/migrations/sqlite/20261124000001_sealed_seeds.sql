-- Server seeds sealed at rest (see the PostgreSQL migration); ids are hyphenated UUID text.
-- IF NOT EXISTS: deployments before this migration created the same table at start.
CREATE TABLE IF NOT EXISTS sealed_seeds (
    seed_id    TEXT PRIMARY KEY NOT NULL,
    key_id     TEXT NOT NULL,
    nonce      BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
