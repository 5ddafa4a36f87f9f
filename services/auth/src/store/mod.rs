//! Storage of accounts, credentials, signing keys and the mail outbox, behind [`AuthStore`].
//! Each account also has a subject key (`auth_subject_keys`) its username is sealed under in
//! its `UserRegistered` event; [`AuthStore::delete_account`] deletes it with the account.
//!
//! Every state change is one database transaction that also appends the change's events to
//! the account's stream (`user-<uuid>`) in the platform event store, so the tables and the
//! event log never disagree, and a mail caused by the change is queued in the same
//! transaction, so it is never lost nor sent for a change that rolled back.
//!
//! Two backends share one SQL text ([`sql`], the `fairdeal_db::for_each_backend!` pattern):
//! PostgreSQL (the store of record) and SQLite (the embedded default). Migrations:
//! `migrations/postgres`, `migrations/sqlite`, tracked in their own table (`_auth_migrations`)
//! beside the event store's.

pub mod sql;

use std::fmt;

use async_trait::async_trait;
use fairdeal_shred::SubjectKey;
use uuid::Uuid;

use crate::domain::{PasswordHash, RefreshRecord, TokenHash};
use crate::events::AuthEvent;

pub use sql::{MIGRATIONS, SqlAuthStore, auth_store};

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The username's key is taken.
    #[error("username is taken")]
    UsernameTaken,
    /// The email's key is taken.
    #[error("email is taken")]
    EmailTaken,
    /// The database could not be reached or failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Appending to the event log failed.
    #[error("event store error: {0}")]
    Events(String),
    /// A stored row does not hold what the schema promises (e.g. a non-UUID id).
    #[error("corrupt row: {0}")]
    Corrupt(&'static str),
}

/// Kinds of emailed single-use tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailTokenKind {
    /// Confirms the address.
    Confirm,
    /// Resets the password.
    Reset,
}

impl EmailTokenKind {
    /// Its name in the `kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            EmailTokenKind::Confirm => "confirm",
            EmailTokenKind::Reset => "reset",
        }
    }
}

/// An emailed token to store: only its hash.
#[derive(Debug, Clone)]
pub struct NewEmailToken {
    /// SHA-256 of the token.
    pub hash: TokenHash,
    /// What it does.
    pub kind: EmailTokenKind,
    /// Refused from this time on.
    pub expires_at: i64,
}

/// A mail to queue.
#[derive(Clone)]
pub struct OutgoingMail {
    /// Outbox row id.
    pub mail_id: Uuid,
    /// Recipient address.
    pub to: String,
    /// Subject line.
    pub subject: String,
    /// Plain-text body (may hold a single-use link; cleared once sent).
    pub body: String,
}

impl fmt::Debug for OutgoingMail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingMail")
            .field("mail_id", &self.mail_id)
            .finish_non_exhaustive()
    }
}

/// A queued mail claimed for sending.
#[derive(Clone)]
pub struct QueuedMail {
    /// The mail.
    pub mail: OutgoingMail,
    /// Sending attempts so far, this one included.
    pub attempts: u32,
    /// When it was queued.
    pub created_at: i64,
}

impl fmt::Debug for QueuedMail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuedMail")
            .field("mail", &self.mail)
            .field("attempts", &self.attempts)
            .finish()
    }
}

/// A new account.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// Its id.
    pub user_id: Uuid,
    /// Display username.
    pub username: String,
    /// Username uniqueness key.
    pub username_key: String,
    /// Address.
    pub email: String,
    /// Address uniqueness key.
    pub email_key: String,
    /// Argon2id hash.
    pub password_hash: PasswordHash,
    /// Registration time.
    pub created_at: i64,
    /// The key the account's personal event content is sealed under (its `Debug` shows
    /// nothing).
    pub key: SubjectKey,
    /// The username sealed under `key` (`events::seal_username`), for `UserRegistered`.
    pub sealed_username: Vec<u8>,
}

/// A stored account.
#[derive(Debug, Clone)]
pub struct Account {
    /// Its id.
    pub user_id: Uuid,
    /// Display username.
    pub username: String,
    /// Username uniqueness key.
    pub username_key: String,
    /// Address (personal data: never logged).
    pub email: String,
    /// Argon2id hash.
    pub password_hash: PasswordHash,
    /// Whether the address is confirmed (login needs it).
    pub confirmed: bool,
}

/// A refresh token to store.
#[derive(Debug, Clone, Copy)]
pub struct NewRefreshToken {
    /// SHA-256 of the token.
    pub hash: TokenHash,
    /// Refused from this time on.
    pub expires_at: i64,
}

/// Outcome of presenting a refresh token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RotateOutcome {
    /// The presented token was spent and `next` stored in its family.
    Rotated {
        /// The account.
        user_id: Uuid,
        /// The family.
        family_id: Uuid,
    },
    /// The presented token was already spent: its family is now revoked.
    ReuseDetected,
    /// Unknown, expired or revoked: nothing changed.
    Refused,
}

/// A stored signing key.
#[derive(Clone)]
pub struct StoredKey {
    /// Key id.
    pub key_id: String,
    /// Ed25519 secret (32 bytes).
    pub secret: Vec<u8>,
    /// Ed25519 public key (32 bytes).
    pub public_key: Vec<u8>,
    /// Creation time.
    pub created_at: i64,
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredKey")
            .field("key_id", &self.key_id)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// Everything the auth service stores. Each method is one transaction.
#[async_trait]
pub trait AuthStore: Send + Sync + fmt::Debug {
    /// Creates an account with its key, confirmation token and mail, and appends
    /// `UserRegistered`.
    async fn register(
        &self,
        account: NewAccount,
        token: NewEmailToken,
        mail: OutgoingMail,
    ) -> Result<(), StoreError>;

    /// The account with this username key.
    async fn account_by_username(&self, username_key: &str) -> Result<Option<Account>, StoreError>;

    /// The account with this email key.
    async fn account_by_email(&self, email_key: &str) -> Result<Option<Account>, StoreError>;

    /// The account with this id.
    async fn account_by_id(&self, user_id: Uuid) -> Result<Option<Account>, StoreError>;

    /// The account owning an unused, unexpired email token of `kind`.
    async fn email_token_owner(
        &self,
        token: &TokenHash,
        kind: EmailTokenKind,
        now: i64,
    ) -> Result<Option<Account>, StoreError>;

    /// Replaces the account's unused tokens of the same kind with `token`, queues `mail`, and
    /// appends `events`.
    async fn issue_email_token(
        &self,
        user_id: Uuid,
        token: NewEmailToken,
        mail: OutgoingMail,
        events: Vec<AuthEvent>,
        now: i64,
    ) -> Result<(), StoreError>;

    /// Spends an unused, unexpired confirmation token and confirms its account (appending
    /// `EmailConfirmed`); `None` when the token is not such a token.
    async fn confirm_email(&self, token: &TokenHash, now: i64) -> Result<Option<Uuid>, StoreError>;

    /// Starts a refresh family with its first token (appending `LoggedIn`); replaces the
    /// password hash when `rehash` is given (parameters changed).
    async fn start_family(
        &self,
        user_id: Uuid,
        family_id: Uuid,
        first: NewRefreshToken,
        family_expires_at: i64,
        now: i64,
        rehash: Option<PasswordHash>,
    ) -> Result<(), StoreError>;

    /// The record of a refresh token, for inspection (tests and operators).
    async fn refresh_record(&self, token: &TokenHash) -> Result<Option<RefreshRecord>, StoreError>;

    /// Applies [`crate::domain::RefreshDecision`] to `presented` atomically: rotate to `next`,
    /// or revoke the family on reuse (appending `RefreshFamilyRevoked`).
    async fn rotate_refresh(
        &self,
        presented: &TokenHash,
        next: NewRefreshToken,
        now: i64,
    ) -> Result<RotateOutcome, StoreError>;

    /// Revokes the family of `token` for logout; `false` when the token is unknown.
    async fn logout(&self, token: &TokenHash, now: i64) -> Result<bool, StoreError>;

    /// Sets a new password hash, revokes every family of the account, appends
    /// `PasswordChanged` (and `RefreshFamilyRevoked` per family).
    async fn change_password(
        &self,
        user_id: Uuid,
        hash: PasswordHash,
        now: i64,
    ) -> Result<(), StoreError>;

    /// Spends an unused, unexpired reset token, sets the password, confirms the address (the
    /// reset mail proved it), revokes every family; `None` when the token is not such a token.
    async fn reset_password(
        &self,
        token: &TokenHash,
        hash: PasswordHash,
        now: i64,
    ) -> Result<Option<Uuid>, StoreError>;

    /// The key `user_id`'s personal event content is sealed under (`UserRegistered`'s
    /// username): to open it (operators, tests). `None` once the account is deleted, and for
    /// accounts registered before usernames were sealed.
    async fn subject_key(&self, user_id: Uuid) -> Result<Option<SubjectKey>, StoreError>;

    /// Deletes the account for good, appending `AccountDeleted` to its stream: its key (which
    /// makes the sealed content of its events unreadable), the account row (username, email,
    /// password hash), its refresh-token families, confirmation and reset tokens, and every
    /// queued or sent mail addressed to it. Returns the ids of the mails deleted (a transport
    /// may keep copies to erase), or `None` when there is no such account.
    async fn delete_account(
        &self,
        user_id: Uuid,
        now: i64,
    ) -> Result<Option<Vec<Uuid>>, StoreError>;

    /// Makes what committed erasures deleted unrecoverable from the database's files, as far
    /// as the backend allows (`fairdeal_db::Db::scrub`); called after [`Self::delete_account`].
    async fn scrub(&self) -> Result<(), StoreError>;

    /// Every signing key, newest first.
    async fn signing_keys(&self) -> Result<Vec<StoredKey>, StoreError>;

    /// Stores a new signing key.
    async fn add_signing_key(&self, key: StoredKey) -> Result<(), StoreError>;

    /// Claims up to `limit` mails due at `now`, leasing each until `lease_until` so another
    /// replica does not send it too.
    async fn claim_mail(
        &self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> Result<Vec<QueuedMail>, StoreError>;

    /// Marks a mail sent and clears its body; `false` when the mail is no longer in the outbox
    /// (its account was deleted while it was being sent).
    async fn mail_sent(&self, mail_id: Uuid, now: i64) -> Result<bool, StoreError>;

    /// Records a failed attempt; the mail is retried at `retry_at`.
    async fn mail_failed(
        &self,
        mail_id: Uuid,
        retry_at: i64,
        error: &str,
    ) -> Result<(), StoreError>;

    /// Mails not yet sent (operators and tests).
    async fn unsent_mail_count(&self) -> Result<u64, StoreError>;
}
