-- Accounts and credentials of the auth service. Times are seconds since the Unix epoch.
-- Tokens (refresh, confirmation, reset) are stored only as SHA-256 hashes.
CREATE TABLE auth_users (
    user_id             TEXT PRIMARY KEY,
    username            TEXT NOT NULL,
    username_key        TEXT NOT NULL UNIQUE,
    email               TEXT NOT NULL,
    email_key           TEXT NOT NULL UNIQUE,
    password_hash       TEXT NOT NULL,
    confirmed           BOOLEAN NOT NULL DEFAULT FALSE,
    created_at          BIGINT NOT NULL,
    password_changed_at BIGINT NOT NULL
);

CREATE TABLE auth_email_tokens (
    token_hash BYTEA PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES auth_users (user_id),
    kind       TEXT NOT NULL CHECK (kind IN ('confirm', 'reset')),
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX auth_email_tokens_user ON auth_email_tokens (user_id, kind);

CREATE TABLE auth_refresh_families (
    family_id      TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES auth_users (user_id),
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    revoked_at     BIGINT,
    revoked_reason TEXT
);
CREATE INDEX auth_refresh_families_user ON auth_refresh_families (user_id);

CREATE TABLE auth_refresh_tokens (
    token_hash BYTEA PRIMARY KEY,
    family_id  TEXT NOT NULL REFERENCES auth_refresh_families (family_id),
    expires_at BIGINT NOT NULL,
    spent_at   BIGINT
);
CREATE INDEX auth_refresh_tokens_family ON auth_refresh_tokens (family_id);

CREATE TABLE auth_signing_keys (
    key_id     TEXT PRIMARY KEY,
    secret     BYTEA NOT NULL,
    public_key BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);

-- Emails waiting to be sent: written in the same transaction as what caused them, sent by a
-- background task, body cleared once sent.
CREATE TABLE auth_mail_outbox (
    mail_id         TEXT PRIMARY KEY,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    sent_at         BIGINT,
    last_error      TEXT
);
CREATE INDEX auth_mail_outbox_pending ON auth_mail_outbox (next_attempt_at) WHERE sent_at IS NULL;
