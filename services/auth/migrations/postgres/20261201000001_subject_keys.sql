-- The key each account's personal event content is sealed under (crypto-shredding,
-- crates/shred): `UserRegistered.sealed_username`. DeleteAccount deletes the row in the
-- transaction that records the deletion, and the sealed bytes can then no longer be opened
-- in any copy of the events. Accounts registered before this migration have no key: their
-- `UserRegistered` holds the username in plain text (the deprecated field).
CREATE TABLE auth_subject_keys (
    user_id     TEXT PRIMARY KEY REFERENCES auth_users (user_id),
    subject_key BYTEA NOT NULL,
    created_at  BIGINT NOT NULL
);

-- DeleteAccount deletes an account's mails by their address.
CREATE INDEX auth_mail_outbox_recipient ON auth_mail_outbox (recipient);
