//! The use cases of the auth service, independent of gRPC: parse input into domain types,
//! apply limits, hash, store, sign. [`crate::grpc`] only translates messages and errors.

use std::net::IpAddr;
use std::sync::Arc;

use fairdeal_authn::{AccessToken, Claims, Clock};
use fairdeal_shred::SubjectKey;
use tokio::sync::Notify;
use uuid::Uuid;

use crate::domain::{
    Email, Password, PasswordError, PasswordHash, PasswordHasher, RetryAfter, SecretToken,
    SecretTokenError, Username,
};
use crate::events::{AuthEvent, seal_username};
use crate::keyring::{KeyRing, PublishedKey};
use crate::limits::{AttemptLimiter, LimiterError, RequestQuota, Subject};
use crate::mail::{Composer, MailTransport};
use crate::mail_requests::{MailKind, MailRequest, MailRequests};
use crate::store::{
    AuthStore, EmailTokenKind, NewAccount, NewEmailToken, NewRefreshToken, RotateOutcome,
    StoreError,
};

/// Why a use case failed, classified for the caller.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A field is malformed; nothing changed.
    #[error("{field}: {reason}")]
    Invalid {
        /// The request field.
        field: &'static str,
        /// What is wrong (never the value).
        reason: String,
    },
    /// The username is taken.
    #[error("username is already taken")]
    UsernameTaken,
    /// The email is taken.
    #[error("email is already registered")]
    EmailTaken,
    /// Login failed, whatever the reason.
    #[error("access denied")]
    AccessDenied,
    /// A presented token (refresh, confirmation, reset, service secret) is not valid now.
    #[error("{0} is invalid or expired")]
    InvalidToken(&'static str),
    /// Too many failures: wait.
    #[error("too many failed attempts; retry after {} seconds", .0.0)]
    RateLimited(RetryAfter),
    /// A backing service is down.
    #[error("{0} unavailable")]
    Unavailable(
        &'static str,
        #[source] Box<dyn std::error::Error + Send + Sync>,
    ),
    /// A bug or an unexpected failure.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl AuthError {
    fn invalid(field: &'static str, reason: impl ToString) -> Self {
        Self::Invalid {
            field,
            reason: reason.to_string(),
        }
    }
}

impl From<StoreError> for AuthError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UsernameTaken => AuthError::UsernameTaken,
            StoreError::EmailTaken => AuthError::EmailTaken,
            StoreError::Database(_) | StoreError::Events(_) => {
                AuthError::Unavailable("database", Box::new(e))
            }
            StoreError::Migrate(_) | StoreError::Corrupt(_) => AuthError::Internal(Box::new(e)),
        }
    }
}

impl From<LimiterError> for AuthError {
    fn from(e: LimiterError) -> Self {
        AuthError::Unavailable("rate limiter", Box::new(e))
    }
}

/// Lifetimes, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct Lifetimes {
    /// Access tokens.
    pub access_token: i64,
    /// Each refresh token.
    pub refresh_token: i64,
    /// A refresh family (a login), however often rotated.
    pub session: i64,
    /// Confirmation links.
    pub confirmation: i64,
    /// Password-reset links.
    pub reset: i64,
    /// Internal-service tokens.
    pub service_token: i64,
}

/// A configured internal service: its name and the SHA-256 of its secret.
#[derive(Clone)]
pub struct ServiceCredential {
    /// The name tokens carry as subject.
    pub name: String,
    /// SHA-256 of the secret.
    pub secret_sha256: [u8; 32],
}

impl std::fmt::Debug for ServiceCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCredential")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// How many mails (password resets and confirmations asked for again) may be requested
/// within the mail quota's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailLimits {
    /// Per address (known or not): what one inbox can be sent.
    pub per_address: u32,
    /// Per client address (IPv6 per /64): what one caller can ask for, whatever the addresses.
    pub per_client: u32,
}

impl Default for MailLimits {
    fn default() -> Self {
        Self {
            per_address: 3,
            per_client: 10,
        }
    }
}

/// Tokens handed out by login and refresh.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// The account.
    pub user_id: Uuid,
    /// Signed access token.
    pub access_token: AccessToken,
    /// Its expiry, seconds since the epoch.
    pub access_expires_at: i64,
    /// Opaque refresh token.
    pub refresh_token: SecretToken,
    /// Its expiry.
    pub refresh_expires_at: i64,
}

/// Everything the use cases need.
#[derive(Debug, Clone)]
pub struct Accounts {
    /// Storage.
    pub store: Arc<dyn AuthStore>,
    /// Password hashing (CPU-heavy: run on the blocking pool).
    pub hasher: Arc<PasswordHasher>,
    /// Brute-force limits.
    pub limiter: Arc<dyn AttemptLimiter>,
    /// Signing keys.
    pub keys: Arc<KeyRing>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Lifetimes.
    pub lifetimes: Lifetimes,
    /// Mail texts.
    pub composer: Composer,
    /// Wakes the mail dispatcher after a mail is queued.
    pub mail_wake: Arc<Notify>,
    /// The dispatcher's transport: erases what it kept of a deleted account's mails.
    pub mail_transport: Arc<dyn MailTransport>,
    /// Internal services allowed to obtain service tokens.
    pub services: Arc<Vec<ServiceCredential>>,
    /// Caseless keys of the usernames whose tokens carry the moderator role.
    pub moderators: Arc<std::collections::HashSet<String>>,
    /// Counts mail requests per address and per client.
    pub mail_quota: Arc<dyn RequestQuota>,
    /// The mail quotas.
    pub mail_limits: MailLimits,
    /// Mail requests answered before the work, done by [`crate::mail_requests::run`].
    pub mail_requests: MailRequests,
}

fn text_field(field: &'static str, value: &str, max: usize) -> Result<(), AuthError> {
    if value.is_empty() {
        Err(AuthError::invalid(field, "is required"))
    } else if value.len() > max {
        Err(AuthError::invalid(
            field,
            format!("is longer than {max} bytes"),
        ))
    } else if value.chars().any(char::is_control) {
        // No stored name, address or token holds one, and PostgreSQL refuses a NUL in text:
        // a lookup must not turn a caller's typo into a database fault.
        Err(AuthError::invalid(field, "contains a control character"))
    } else {
        Ok(())
    }
}

fn utf8_field<'a>(field: &'static str, bytes: &'a [u8]) -> Result<&'a str, AuthError> {
    if bytes.is_empty() {
        return Err(AuthError::invalid(field, "is required"));
    }
    if bytes.len() > crate::domain::password::MAX_INPUT_BYTES {
        return Err(AuthError::invalid(field, PasswordError::TooLong));
    }
    std::str::from_utf8(bytes).map_err(|_| AuthError::invalid(field, "is not valid UTF-8"))
}

fn secret_token(field: &'static str, raw: &str) -> Result<SecretToken, AuthError> {
    SecretToken::parse(raw).map_err(|e| match e {
        SecretTokenError::Randomness => AuthError::Internal(Box::new(e)),
        other => AuthError::invalid(field, other),
    })
}

impl Accounts {
    fn now(&self) -> i64 {
        self.clock.unix_seconds()
    }

    async fn hash(&self, password: Password) -> Result<PasswordHash, AuthError> {
        let hasher = self.hasher.clone();
        tokio::task::spawn_blocking(move || hasher.hash(&password))
            .await
            .map_err(|e| AuthError::Internal(Box::new(e)))?
            .map_err(|e| AuthError::Internal(Box::new(e)))
    }

    async fn verify(
        &self,
        password: Password,
        stored: Option<PasswordHash>,
    ) -> Result<bool, AuthError> {
        let hasher = self.hasher.clone();
        tokio::task::spawn_blocking(move || hasher.verify(&password, stored.as_ref()))
            .await
            .map_err(|e| AuthError::Internal(Box::new(e)))
    }

    /// A signed-in user's current password, asked again before a change that needs it
    /// (changing the password, deleting the account): limited like a login, a wrong one
    /// counting as a failed login of the account's username (and of `client`'s address).
    async fn recheck_password(
        &self,
        account: &crate::store::Account,
        password: Password,
        client: Option<IpAddr>,
        now: i64,
    ) -> Result<(), AuthError> {
        let mut subjects = vec![Subject::Username(account.username_key.clone())];
        subjects.extend(client.map(Subject::address));
        let attempt = Uuid::now_v7();
        self.admit(&subjects, attempt, now).await?;
        match self
            .verify(password, Some(account.password_hash.clone()))
            .await
        {
            Ok(true) => {
                self.release(&subjects, attempt).await;
                Ok(())
            }
            Ok(false) => {
                self.failed(&subjects, attempt, now).await?;
                Err(AuthError::AccessDenied)
            }
            Err(e) => {
                self.release(&subjects, attempt).await;
                Err(e)
            }
        }
    }

    fn new_password(
        field: &'static str,
        raw: &[u8],
        username: &str,
        email: &str,
    ) -> Result<Password, AuthError> {
        let text = utf8_field(field, raw)?;
        let local = email.split('@').next().unwrap_or_default();
        Password::new_choice(text, &[username, email, local])
            .map_err(|e| AuthError::invalid(field, e))
    }

    /// Creates an unconfirmed account and queues its confirmation mail.
    #[tracing::instrument(skip_all)]
    pub async fn register(
        &self,
        username: &str,
        email: &str,
        password: &[u8],
    ) -> Result<Uuid, AuthError> {
        let username = Username::parse(username).map_err(|e| AuthError::invalid("username", e))?;
        let email = Email::parse(email).map_err(|e| AuthError::invalid("email", e))?;
        let password =
            Self::new_password("password", password, username.as_str(), email.address())?;
        let password_hash = self.hash(password).await?;
        let now = self.now();
        let user_id = Uuid::now_v7();
        // The account's own key: the username goes into the event log sealed under it, and
        // DeleteAccount erases it from every copy of the log by deleting the key.
        let key = SubjectKey::generate().map_err(|e| AuthError::Internal(Box::new(e)))?;
        let sealed_username = seal_username(&key, user_id, username.as_str())
            .map_err(|e| AuthError::Internal(Box::new(e)))?;
        let token = SecretToken::generate().map_err(|e| AuthError::Internal(Box::new(e)))?;
        let mail = self.composer.confirmation(
            email.address(),
            username.as_str(),
            &token,
            self.lifetimes.confirmation / 3600,
        );
        let account = NewAccount {
            user_id,
            username: username.as_str().to_owned(),
            username_key: username.key().to_owned(),
            email: email.address().to_owned(),
            email_key: email.key().to_owned(),
            password_hash,
            created_at: now,
            key,
            sealed_username,
        };
        let token = NewEmailToken {
            hash: token.hash(),
            kind: EmailTokenKind::Confirm,
            expires_at: now + self.lifetimes.confirmation,
        };
        self.store.register(account, token, mail).await?;
        self.mail_wake.notify_one();
        tracing::info!(%user_id, "account registered");
        Ok(user_id)
    }

    /// Spends a confirmation token.
    #[tracing::instrument(skip_all)]
    pub async fn confirm_email(&self, token: &str) -> Result<Uuid, AuthError> {
        let token = secret_token("token", token)?;
        self.store
            .confirm_email(&token.hash(), self.now())
            .await?
            .ok_or(AuthError::InvalidToken("confirmation token"))
    }

    /// Asks for a new confirmation mail to `email`, sent (in the background) when it belongs
    /// to an unconfirmed account. See [`Self::request_mail`].
    #[tracing::instrument(skip_all)]
    pub async fn resend_confirmation(
        &self,
        email: &str,
        client: Option<IpAddr>,
    ) -> Result<(), AuthError> {
        self.request_mail(MailKind::Confirmation, email, client)
            .await
    }

    /// Asks for a password-reset mail to `email`, sent (in the background) when it belongs to
    /// an account. See [`Self::request_mail`].
    #[tracing::instrument(skip_all)]
    pub async fn request_password_reset(
        &self,
        email: &str,
        client: Option<IpAddr>,
    ) -> Result<(), AuthError> {
        self.request_mail(MailKind::PasswordReset, email, client)
            .await
    }

    /// The request path of both mail requests, the same work for every well-formed address,
    /// known or not: parse it, take the client's quota then the address's, queue the request,
    /// answer. A request over a quota is dropped without a word: the answer is the same
    /// `Ok(())` (only a malformed address, or a quota store that is down, is an error, and
    /// neither depends on the account). The account is looked up by
    /// [`Self::send_requested_mail`], off the request path.
    async fn request_mail(
        &self,
        kind: MailKind,
        email: &str,
        client: Option<IpAddr>,
    ) -> Result<(), AuthError> {
        let email = Email::parse(email).map_err(|e| AuthError::invalid("email", e))?;
        let now = self.now();
        if let Some(client) = client {
            let key = Subject::address(client).storage_id();
            if !self
                .mail_quota
                .take(&key, self.mail_limits.per_client, now)
                .await?
            {
                tracing::debug!("mail request over the client's quota: dropped");
                return Ok(());
            }
        }
        // Hashed: the quota store holds no address.
        let key = {
            use sha2::Digest as _;
            format!("e:{}", hex::encode(sha2::Sha256::digest(email.key())))
        };
        if !self
            .mail_quota
            .take(&key, self.mail_limits.per_address, now)
            .await?
        {
            tracing::debug!("mail request over the address's quota: dropped");
            return Ok(());
        }
        if !self.mail_requests.submit(MailRequest { kind, email }) {
            tracing::warn!("mail request queue full: request dropped");
        }
        Ok(())
    }

    /// Does what a queued mail request asks, when the address has an account to write to:
    /// a reset token and mail (with `PasswordResetRequested`) for any account, a new
    /// confirmation token and mail for an unconfirmed one. Failures are logged (the caller
    /// was answered long ago and asks again).
    pub async fn send_requested_mail(&self, request: MailRequest) {
        let result = match request.kind {
            MailKind::PasswordReset => self.send_password_reset(&request.email).await,
            MailKind::Confirmation => self.send_confirmation(&request.email).await,
        };
        match result {
            Ok(()) => {}
            Err(AuthError::Unavailable(what, cause)) => {
                tracing::warn!(error = %cause, "{what} unavailable: requested mail not sent");
            }
            Err(e) => tracing::error!(error = %e, "requested mail not sent"),
        }
    }

    async fn send_confirmation(&self, email: &Email) -> Result<(), AuthError> {
        let Some(account) = self.store.account_by_email(email.key()).await? else {
            return Ok(());
        };
        if account.confirmed {
            return Ok(());
        }
        let now = self.now();
        let token = SecretToken::generate().map_err(|e| AuthError::Internal(Box::new(e)))?;
        let mail = self.composer.confirmation(
            &account.email,
            &account.username,
            &token,
            self.lifetimes.confirmation / 3600,
        );
        let token = NewEmailToken {
            hash: token.hash(),
            kind: EmailTokenKind::Confirm,
            expires_at: now + self.lifetimes.confirmation,
        };
        self.store
            .issue_email_token(account.user_id, token, mail, Vec::new(), now)
            .await?;
        self.mail_wake.notify_one();
        Ok(())
    }

    async fn send_password_reset(&self, email: &Email) -> Result<(), AuthError> {
        let Some(account) = self.store.account_by_email(email.key()).await? else {
            return Ok(());
        };
        let now = self.now();
        let token = SecretToken::generate().map_err(|e| AuthError::Internal(Box::new(e)))?;
        let mail = self.composer.password_reset(
            &account.email,
            &account.username,
            &token,
            self.lifetimes.reset / 60,
        );
        let token = NewEmailToken {
            hash: token.hash(),
            kind: EmailTokenKind::Reset,
            expires_at: now + self.lifetimes.reset,
        };
        let events = vec![AuthEvent::PasswordResetRequested {
            user_id: account.user_id,
        }];
        self.store
            .issue_email_token(account.user_id, token, mail, events, now)
            .await?;
        self.mail_wake.notify_one();
        Ok(())
    }

    /// Admits `attempt` on every subject before any secret is checked, or refuses it with
    /// the longest wait (settling what was admitted, so a refusal leaves nothing in flight).
    /// Every admitted attempt is then settled by [`Self::failed`], [`Self::succeeded`] or
    /// [`Self::release`].
    async fn admit(&self, subjects: &[Subject], attempt: Uuid, now: i64) -> Result<(), AuthError> {
        let mut wait: Option<RetryAfter> = None;
        let mut admitted = Vec::new();
        for subject in subjects {
            match self.limiter.admit(subject, attempt, now).await {
                Ok(None) => admitted.push(subject),
                Ok(Some(r)) => wait = Some(wait.map_or(r, |w| RetryAfter(w.0.max(r.0)))),
                Err(e) => {
                    self.release(admitted, attempt).await;
                    return Err(e.into());
                }
            }
        }
        match wait {
            None => Ok(()),
            Some(w) => {
                self.release(admitted, attempt).await;
                Err(AuthError::RateLimited(w))
            }
        }
    }

    /// Settles an admitted attempt as a failure on every subject.
    async fn failed(&self, subjects: &[Subject], attempt: Uuid, now: i64) -> Result<(), AuthError> {
        for subject in subjects {
            self.limiter.record_failure(subject, attempt, now).await?;
        }
        Ok(())
    }

    /// Settles an admitted attempt as a success on every subject.
    async fn succeeded(
        &self,
        subjects: &[Subject],
        attempt: Uuid,
        now: i64,
    ) -> Result<(), AuthError> {
        for subject in subjects {
            self.limiter.record_success(subject, attempt, now).await?;
        }
        Ok(())
    }

    /// Settles an admitted attempt that reached no verdict (an error on the way). A failure
    /// to do so is logged, not returned: the attempt stops counting after
    /// [`crate::domain::PENDING_TTL_SECS`] by itself, and the caller's own error matters more.
    async fn release<'a>(&self, subjects: impl IntoIterator<Item = &'a Subject>, attempt: Uuid) {
        for subject in subjects {
            if let Err(e) = self.limiter.release(subject, attempt).await {
                tracing::warn!(
                    subject = ?subject,
                    error = %e,
                    "attempt not released; it stops counting when it expires"
                );
            }
        }
    }

    /// Exchanges a confirmed account's username and password for tokens. Every failure is
    /// [`AuthError::AccessDenied`], after the same work (one Argon2 verification).
    #[tracing::instrument(skip_all)]
    pub async fn login(
        &self,
        username: &str,
        password: &[u8],
        client: Option<IpAddr>,
    ) -> Result<Tokens, AuthError> {
        text_field(
            "username",
            username,
            crate::domain::username::MAX_INPUT_BYTES,
        )?;
        let password = Password::candidate(utf8_field("password", password)?)
            .map_err(|e| AuthError::invalid("password", e))?;
        let mut subjects = vec![Subject::Username(Username::key_of(username))];
        subjects.extend(client.map(Subject::address));
        let now = self.now();
        let attempt = Uuid::now_v7();
        self.admit(&subjects, attempt, now).await?;

        let checked = async {
            let account = self
                .store
                .account_by_username(&Username::key_of(username))
                .await?;
            let matches = self
                .verify(
                    password.clone(),
                    account.as_ref().map(|a| a.password_hash.clone()),
                )
                .await?;
            Ok::<_, AuthError>(account.filter(|a| matches && a.confirmed))
        }
        .await;
        let account = match checked {
            Ok(Some(account)) => account,
            Ok(None) => {
                self.failed(&subjects, attempt, now).await?;
                return Err(AuthError::AccessDenied);
            }
            Err(e) => {
                self.release(&subjects, attempt).await;
                return Err(e);
            }
        };
        self.succeeded(&subjects, attempt, now).await?;
        let rehash = if self.hasher.needs_rehash(&account.password_hash) {
            Some(self.hash(password).await?)
        } else {
            None
        };
        let family_id = Uuid::now_v7();
        let refresh = SecretToken::generate().map_err(|e| AuthError::Internal(Box::new(e)))?;
        let first = NewRefreshToken {
            hash: refresh.hash(),
            expires_at: (now + self.lifetimes.refresh_token).min(now + self.lifetimes.session),
        };
        self.store
            .start_family(
                account.user_id,
                family_id,
                first,
                now + self.lifetimes.session,
                now,
                rehash,
            )
            .await?;
        tracing::info!(user_id = %account.user_id, %family_id, "logged in");
        let moderator = self.moderators.contains(&account.username_key);
        self.tokens(account.user_id, moderator, refresh, first.expires_at, now)
    }

    /// Whether `user_id`'s account is listed as a moderator (read when the list is not empty).
    async fn is_moderator(&self, user_id: Uuid) -> Result<bool, AuthError> {
        if self.moderators.is_empty() {
            return Ok(false);
        }
        let account = self.store.account_by_id(user_id).await?;
        Ok(account.is_some_and(|a| self.moderators.contains(&a.username_key)))
    }

    fn tokens(
        &self,
        user_id: Uuid,
        moderator: bool,
        refresh: SecretToken,
        refresh_expires_at: i64,
        now: i64,
    ) -> Result<Tokens, AuthError> {
        let claims = if moderator {
            Claims::moderator(user_id, now, self.lifetimes.access_token)
        } else {
            Claims::player(user_id, now, self.lifetimes.access_token)
        };
        let access_expires_at = claims.exp;
        let access_token = self
            .keys
            .signing_key()
            .sign(&claims)
            .map_err(|e| AuthError::Internal(Box::new(e)))?;
        Ok(Tokens {
            user_id,
            access_token,
            access_expires_at,
            refresh_token: refresh,
            refresh_expires_at,
        })
    }

    /// Rotates a refresh token.
    #[tracing::instrument(skip_all)]
    pub async fn refresh(&self, token: &str) -> Result<Tokens, AuthError> {
        let presented = secret_token("refresh_token", token)?;
        let now = self.now();
        let next = SecretToken::generate().map_err(|e| AuthError::Internal(Box::new(e)))?;
        let record = self.store.refresh_record(&presented.hash()).await?;
        let family_end = record.as_ref().map_or(now, |r| r.family_expires_at);
        let next_row = NewRefreshToken {
            hash: next.hash(),
            expires_at: (now + self.lifetimes.refresh_token).min(family_end),
        };
        match self
            .store
            .rotate_refresh(&presented.hash(), next_row, now)
            .await?
        {
            RotateOutcome::Rotated { user_id, .. } => {
                let moderator = self.is_moderator(user_id).await?;
                self.tokens(user_id, moderator, next, next_row.expires_at, now)
            }
            RotateOutcome::ReuseDetected => {
                // A possible theft, or a client that refreshed twice: worth an operator's
                // attention, but the caller's doing, not a fault of the server.
                tracing::info!("refresh token reused: family revoked");
                Err(AuthError::InvalidToken("refresh token"))
            }
            RotateOutcome::Refused => Err(AuthError::InvalidToken("refresh token")),
        }
    }

    /// Revokes the login `token` belongs to.
    #[tracing::instrument(skip_all)]
    pub async fn logout(&self, token: &str) -> Result<(), AuthError> {
        let token = secret_token("refresh_token", token)?;
        if self.store.logout(&token.hash(), self.now()).await? {
            Ok(())
        } else {
            Err(AuthError::InvalidToken("refresh token"))
        }
    }

    /// Changes `user_id`'s password after checking the current one (limited like logins).
    #[tracing::instrument(skip_all, fields(%user_id))]
    pub async fn change_password(
        &self,
        user_id: Uuid,
        current: &[u8],
        new: &[u8],
        client: Option<IpAddr>,
    ) -> Result<(), AuthError> {
        let current = Password::candidate(utf8_field("current_password", current)?)
            .map_err(|e| AuthError::invalid("current_password", e))?;
        utf8_field("new_password", new)?;
        let account = self
            .store
            .account_by_id(user_id)
            .await?
            .ok_or(AuthError::AccessDenied)?;
        let new = Self::new_password("new_password", new, &account.username, &account.email)?;
        let now = self.now();
        self.recheck_password(&account, current, client, now)
            .await?;
        let hash = self.hash(new).await?;
        self.store.change_password(user_id, hash, now).await?;
        Ok(())
    }

    /// Deletes `user_id`'s account for good, after the username typed again
    /// (`confirm_username`, compared as at login) and the current password (limited like
    /// logins: a wrong one counts as a failed login). One transaction appends
    /// `AccountDeleted` and deletes the account's key, row, sessions, tokens and mails; then
    /// the database's files are scrubbed, the transport's copies of the mails erased and the
    /// username's login-limit state forgotten (those three best-effort: the deletion itself
    /// has committed, and the caller is told it succeeded).
    ///
    /// The confirmation is checked before the password, so a typo in it costs neither a
    /// password hash nor an attempt of the lockout.
    #[tracing::instrument(skip_all, fields(%user_id))]
    pub async fn delete_account(
        &self,
        user_id: Uuid,
        password: &[u8],
        confirm_username: &str,
        client: Option<IpAddr>,
    ) -> Result<(), AuthError> {
        let password = Password::candidate(utf8_field("password", password)?)
            .map_err(|e| AuthError::invalid("password", e))?;
        text_field(
            "confirm_username",
            confirm_username,
            crate::domain::username::MAX_INPUT_BYTES,
        )?;
        let account = self
            .store
            .account_by_id(user_id)
            .await?
            .ok_or(AuthError::AccessDenied)?;
        if Username::key_of(confirm_username) != account.username_key {
            return Err(AuthError::invalid(
                "confirm_username",
                "is not the account's username",
            ));
        }
        let username = Subject::Username(account.username_key.clone());
        let now = self.now();
        self.recheck_password(&account, password, client, now)
            .await?;
        // `None`: deleted by a concurrent call since the read above.
        let mails = self
            .store
            .delete_account(user_id, now)
            .await?
            .ok_or(AuthError::AccessDenied)?;
        tracing::info!(%user_id, "account deleted");
        if let Err(e) = self.store.scrub().await {
            tracing::warn!(error = %e, "database not scrubbed after an account deletion");
        }
        for mail_id in mails {
            if let Err(e) = self.mail_transport.erase(mail_id).await {
                tracing::warn!(%mail_id, error = %e, "a deleted account's mail not erased");
            }
        }
        // Its storage id is the username's hash: gone with the account, and a new account
        // of the same name starts with a clean slate.
        if let Err(e) = self.limiter.forget(&username).await {
            tracing::warn!(error = %e, "login limits of a deleted account not forgotten");
        }
        Ok(())
    }

    /// Sets a new password with a reset token.
    #[tracing::instrument(skip_all)]
    pub async fn reset_password(&self, token: &str, new: &[u8]) -> Result<(), AuthError> {
        let token = secret_token("token", token)?;
        utf8_field("new_password", new)?;
        let now = self.now();
        let account = self
            .store
            .email_token_owner(&token.hash(), EmailTokenKind::Reset, now)
            .await?
            .ok_or(AuthError::InvalidToken("reset token"))?;
        let new = Self::new_password("new_password", new, &account.username, &account.email)?;
        let hash = self.hash(new).await?;
        self.store
            .reset_password(&token.hash(), hash, now)
            .await?
            .ok_or(AuthError::InvalidToken("reset token"))?;
        Ok(())
    }

    /// The keys verifiers must trust.
    pub fn public_keys(&self) -> Vec<PublishedKey> {
        self.keys.published()
    }

    /// A service token for a configured internal service presenting its secret.
    #[tracing::instrument(skip_all)]
    pub async fn issue_service_token(
        &self,
        name: &str,
        secret: &[u8],
        client: Option<IpAddr>,
    ) -> Result<(AccessToken, i64), AuthError> {
        use sha2::{Digest, Sha256};
        use subtle::ConstantTimeEq;
        text_field("service_name", name, 64)?;
        if secret.is_empty() || secret.len() > 1024 {
            return Err(AuthError::invalid("secret", "must be 1 to 1024 bytes"));
        }
        let now = self.now();
        let subjects: Vec<Subject> = client.map(Subject::address).into_iter().collect();
        let attempt = Uuid::now_v7();
        self.admit(&subjects, attempt, now).await?;
        let presented: [u8; 32] = Sha256::digest(secret).into();
        let known = self.services.iter().find(|s| s.name == name);
        // Compare against something even for an unknown name, so timing does not say which
        // names exist.
        let expected = known.map_or([0u8; 32], |s| s.secret_sha256);
        let ok = bool::from(presented.ct_eq(&expected)) && known.is_some();
        if !ok {
            self.failed(&subjects, attempt, now).await?;
            return Err(AuthError::InvalidToken("service credential"));
        }
        self.release(&subjects, attempt).await;
        let claims = Claims::service(name, now, self.lifetimes.service_token);
        let token = self
            .keys
            .signing_key()
            .sign(&claims)
            .map_err(|e| AuthError::Internal(Box::new(e)))?;
        Ok((token, claims.exp))
    }
}
