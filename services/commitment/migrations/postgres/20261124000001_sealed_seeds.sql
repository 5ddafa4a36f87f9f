-- Server seeds sealed at rest (XChaCha20-Poly1305 under the key `key_id` of the seed key
-- ring). A row is written before the event committing to its seed and never changed: a
-- revealed seed is in its reveal event; the sealed copy stays for audits of the key ring.
-- IF NOT EXISTS: deployments before this migration created the same table at start.
CREATE TABLE IF NOT EXISTS sealed_seeds (
    seed_id    uuid        PRIMARY KEY,
    key_id     text        NOT NULL,
    nonce      bytea       NOT NULL,
    ciphertext bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
