//! The SQL of [`AuthStore`], written once for PostgreSQL and SQLite.
//!
//! Both databases accept `$1`-style parameters, `RETURNING`, partial indexes and the same
//! column types once ids are TEXT, times INTEGER seconds and hashes byte strings, so one
//! body implements the trait for both pools (`fairdeal_db::for_each_backend!`); the few
//! differences (how a write transaction starts, the row lock serialising an account's
//! appends on PostgreSQL) come from `fairdeal_db::Backend`. Concurrency never relies
//! on row locks: every spend of a single-use token is a conditional `UPDATE ... WHERE <unused>`
//! whose affected-row count decides who won.

use std::time::{Duration, UNIX_EPOCH};

use async_trait::async_trait;
use fairdeal_bus::AppendSignal;
use fairdeal_eventstore::EventBackend;
use fairdeal_shred::SubjectKey;
use sqlx::Row;
use uuid::Uuid;

use super::{
    Account, AuthStore, EmailTokenKind, NewAccount, NewEmailToken, NewRefreshToken, OutgoingMail,
    QueuedMail, RotateOutcome, StoreError, StoredKey,
};
use crate::domain::{PasswordHash, RefreshDecision, RefreshRecord, TokenHash};
use crate::events::{AuthEvent, Revocation};

fn parse_uuid(s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|_| StoreError::Corrupt("uuid"))
}

fn occurred_at(now: i64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(now).unwrap_or(0))
}

fn unique_violation(e: &sqlx::Error) -> Option<StoreError> {
    let sqlx::Error::Database(db) = e else {
        return None;
    };
    if !db.is_unique_violation() {
        return None;
    }
    let detail = format!("{} {}", db.message(), db.constraint().unwrap_or_default());
    Some(if detail.contains("username_key") {
        StoreError::UsernameTaken
    } else {
        StoreError::EmailTaken
    })
}

const ACCOUNT_COLUMNS: &str = "user_id, username, username_key, email, password_hash, confirmed";

macro_rules! account_from_row {
    ($row:expr) => {{
        let row = $row;
        Account {
            user_id: parse_uuid(&row.try_get::<String, _>("user_id")?)?,
            username: row.try_get("username")?,
            username_key: row.try_get("username_key")?,
            email: row.try_get("email")?,
            password_hash: PasswordHash::from_stored(row.try_get("password_hash")?),
            confirmed: row.try_get("confirmed")?,
        }
    }};
}

// [`AuthStore`] for both backends, written once (the `for_each_backend!` pattern).
fairdeal_db::for_each_backend! { DB =>
        impl SqlAuthStore<DB> {
            async fn revoke_families_in(
                tx: &mut sqlx::Transaction<'static, DB>,
                user_id: Uuid,
                reason: Revocation,
                now: i64,
                events: &mut Vec<AuthEvent>,
            ) -> Result<(), StoreError> {
                let rows = sqlx::query(
                    "UPDATE auth_refresh_families SET revoked_at = $1, revoked_reason = $2
                     WHERE user_id = $3 AND revoked_at IS NULL RETURNING family_id",
                )
                .bind(now)
                .bind(reason.as_str())
                .bind(user_id.to_string())
                .fetch_all(&mut **tx)
                .await?;
                for row in rows {
                    let family_id = parse_uuid(&row.try_get::<String, _>("family_id")?)?;
                    events.push(AuthEvent::FamilyRevoked { user_id, family_id, reason });
                }
                Ok(())
            }

            async fn queue_mail_in(
                tx: &mut sqlx::Transaction<'static, DB>,
                mail: &OutgoingMail,
                now: i64,
            ) -> Result<(), StoreError> {
                sqlx::query(
                    "INSERT INTO auth_mail_outbox (mail_id, recipient, subject, body, created_at, next_attempt_at)
                     VALUES ($1, $2, $3, $4, $5, $5)",
                )
                .bind(mail.mail_id.to_string())
                .bind(&mail.to)
                .bind(&mail.subject)
                .bind(&mail.body)
                .bind(now)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }

            async fn account_where(&self, column: &str, value: String) -> Result<Option<Account>, StoreError> {
                let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM auth_users WHERE {column} = $1");
                // Safe: `column` is one of our own column names, never input.
                let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(value).fetch_optional(&self.pool).await?;
                Ok(match row {
                    Some(row) => Some(account_from_row!(row)),
                    None => None,
                })
            }
        }

        #[async_trait]
        impl AuthStore for SqlAuthStore<DB> {
            async fn register(&self, account: NewAccount, token: NewEmailToken, mail: OutgoingMail) -> Result<(), StoreError> {
                let mut tx = self.begin().await?;
                let inserted = sqlx::query(
                    "INSERT INTO auth_users (user_id, username, username_key, email, email_key, password_hash,
                                             confirmed, created_at, password_changed_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
                )
                .bind(account.user_id.to_string())
                .bind(&account.username)
                .bind(&account.username_key)
                .bind(&account.email)
                .bind(&account.email_key)
                .bind(account.password_hash.as_str())
                .bind(false)
                .bind(account.created_at)
                .execute(&mut *tx)
                .await;
                if let Err(e) = inserted {
                    return Err(unique_violation(&e).unwrap_or(StoreError::Database(e)));
                }
                sqlx::query("INSERT INTO auth_subject_keys (user_id, subject_key, created_at) VALUES ($1, $2, $3)")
                    .bind(account.user_id.to_string())
                    .bind(account.key.as_bytes().to_vec())
                    .bind(account.created_at)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("INSERT INTO auth_email_tokens (token_hash, user_id, kind, expires_at) VALUES ($1, $2, $3, $4)")
                    .bind(token.hash.as_bytes().to_vec())
                    .bind(account.user_id.to_string())
                    .bind(token.kind.as_str())
                    .bind(token.expires_at)
                    .execute(&mut *tx)
                    .await?;
                Self::queue_mail_in(&mut tx, &mail, account.created_at).await?;
                let events = vec![AuthEvent::Registered { user_id: account.user_id, sealed_username: account.sealed_username }];
                self.append(&mut tx, events, account.created_at).await?;
                self.commit(tx).await?;
                Ok(())
            }

            async fn account_by_username(&self, username_key: &str) -> Result<Option<Account>, StoreError> {
                self.account_where("username_key", username_key.to_owned()).await
            }

            async fn account_by_email(&self, email_key: &str) -> Result<Option<Account>, StoreError> {
                self.account_where("email_key", email_key.to_owned()).await
            }

            async fn account_by_id(&self, user_id: Uuid) -> Result<Option<Account>, StoreError> {
                self.account_where("user_id", user_id.to_string()).await
            }

            async fn email_token_owner(&self, token: &TokenHash, kind: EmailTokenKind, now: i64) -> Result<Option<Account>, StoreError> {
                let sql = format!(
                    "SELECT {} FROM auth_users u JOIN auth_email_tokens t ON t.user_id = u.user_id
                     WHERE t.token_hash = $1 AND t.kind = $2 AND t.used_at IS NULL AND t.expires_at > $3",
                    ACCOUNT_COLUMNS.split(", ").map(|c| format!("u.{c}")).collect::<Vec<_>>().join(", ")
                );
                // Safe: built from our constant column list only.
                let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(token.as_bytes().to_vec())
                    .bind(kind.as_str())
                    .bind(now)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(match row {
                    Some(row) => Some(account_from_row!(row)),
                    None => None,
                })
            }

            async fn issue_email_token(&self, user_id: Uuid, token: NewEmailToken, mail: OutgoingMail, events: Vec<AuthEvent>, now: i64) -> Result<(), StoreError> {
                let mut tx = self.begin().await?;
                // Older unused links of the same kind stop working: only the latest mail counts.
                sqlx::query("DELETE FROM auth_email_tokens WHERE user_id = $1 AND kind = $2 AND used_at IS NULL")
                    .bind(user_id.to_string())
                    .bind(token.kind.as_str())
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("INSERT INTO auth_email_tokens (token_hash, user_id, kind, expires_at) VALUES ($1, $2, $3, $4)")
                    .bind(token.hash.as_bytes().to_vec())
                    .bind(user_id.to_string())
                    .bind(token.kind.as_str())
                    .bind(token.expires_at)
                    .execute(&mut *tx)
                    .await?;
                Self::queue_mail_in(&mut tx, &mail, now).await?;
                if !events.is_empty() {
                    self.append(&mut tx, events, now).await?;
                }
                self.commit(tx).await?;
                Ok(())
            }

            async fn confirm_email(&self, token: &TokenHash, now: i64) -> Result<Option<Uuid>, StoreError> {
                let mut tx = self.begin().await?;
                let row = sqlx::query(
                    "UPDATE auth_email_tokens SET used_at = $1
                     WHERE token_hash = $2 AND kind = 'confirm' AND used_at IS NULL AND expires_at > $1
                     RETURNING user_id",
                )
                .bind(now)
                .bind(token.as_bytes().to_vec())
                .fetch_optional(&mut *tx)
                .await?;
                // Roll back here rather than leave it to the drop, which only queues the
                // ROLLBACK for the connection's next use (an unknown token is a common case).
                let Some(row) = row else {
                    tx.rollback().await?;
                    return Ok(None);
                };
                let user_id = parse_uuid(&row.try_get::<String, _>("user_id")?)?;
                let changed = sqlx::query("UPDATE auth_users SET confirmed = $1 WHERE user_id = $2 AND confirmed = $3")
                    .bind(true)
                    .bind(user_id.to_string())
                    .bind(false)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if changed == 1 {
                    self.append(&mut tx, vec![AuthEvent::EmailConfirmed { user_id }], now).await?;
                }
                self.commit(tx).await?;
                Ok(Some(user_id))
            }

            async fn start_family(&self, user_id: Uuid, family_id: Uuid, first: NewRefreshToken, family_expires_at: i64, now: i64, rehash: Option<PasswordHash>) -> Result<(), StoreError> {
                let mut tx = self.begin().await?;
                sqlx::query("INSERT INTO auth_refresh_families (family_id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
                    .bind(family_id.to_string())
                    .bind(user_id.to_string())
                    .bind(now)
                    .bind(family_expires_at)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("INSERT INTO auth_refresh_tokens (token_hash, family_id, expires_at) VALUES ($1, $2, $3)")
                    .bind(first.hash.as_bytes().to_vec())
                    .bind(family_id.to_string())
                    .bind(first.expires_at)
                    .execute(&mut *tx)
                    .await?;
                if let Some(hash) = rehash {
                    sqlx::query("UPDATE auth_users SET password_hash = $1 WHERE user_id = $2")
                        .bind(hash.as_str())
                        .bind(user_id.to_string())
                        .execute(&mut *tx)
                        .await?;
                }
                self.append(&mut tx, vec![AuthEvent::LoggedIn { user_id, family_id }], now).await?;
                self.commit(tx).await?;
                Ok(())
            }

            async fn refresh_record(&self, token: &TokenHash) -> Result<Option<RefreshRecord>, StoreError> {
                let row = sqlx::query(
                    "SELECT f.family_id, f.user_id, t.expires_at, f.expires_at AS family_expires_at,
                            t.spent_at, f.revoked_at
                     FROM auth_refresh_tokens t JOIN auth_refresh_families f ON f.family_id = t.family_id
                     WHERE t.token_hash = $1",
                )
                .bind(token.as_bytes().to_vec())
                .fetch_optional(&self.pool)
                .await?;
                let Some(row) = row else { return Ok(None) };
                Ok(Some(RefreshRecord {
                    family_id: parse_uuid(&row.try_get::<String, _>("family_id")?)?,
                    user_id: parse_uuid(&row.try_get::<String, _>("user_id")?)?,
                    expires_at: row.try_get("expires_at")?,
                    family_expires_at: row.try_get("family_expires_at")?,
                    spent: row.try_get::<Option<i64>, _>("spent_at")?.is_some(),
                    family_revoked: row.try_get::<Option<i64>, _>("revoked_at")?.is_some(),
                }))
            }

            async fn rotate_refresh(&self, presented: &TokenHash, next: NewRefreshToken, now: i64) -> Result<RotateOutcome, StoreError> {
                let record = self.refresh_record(presented).await?;
                let mut tx = self.begin().await?;
                let (family_id, user_id) = match RefreshDecision::decide(record.as_ref(), now) {
                    RefreshDecision::Refuse => {
                        tx.rollback().await?;
                        return Ok(RotateOutcome::Refused);
                    }
                    RefreshDecision::ReuseDetected { family_id, user_id } => (family_id, user_id),
                    RefreshDecision::Rotate { family_id, user_id } => {
                        let spent = sqlx::query(
                            "UPDATE auth_refresh_tokens SET spent_at = $1 WHERE token_hash = $2 AND spent_at IS NULL",
                        )
                        .bind(now)
                        .bind(presented.as_bytes().to_vec())
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                        let live = sqlx::query_scalar::<_, i64>(
                            "SELECT COUNT(*) FROM auth_refresh_families WHERE family_id = $1 AND revoked_at IS NULL",
                        )
                        .bind(family_id.to_string())
                        .fetch_one(&mut *tx)
                        .await?;
                        if spent == 1 && live == 1 {
                            sqlx::query("INSERT INTO auth_refresh_tokens (token_hash, family_id, expires_at) VALUES ($1, $2, $3)")
                                .bind(next.hash.as_bytes().to_vec())
                                .bind(family_id.to_string())
                                .bind(next.expires_at)
                                .execute(&mut *tx)
                                .await?;
                            self.commit(tx).await?;
                            return Ok(RotateOutcome::Rotated { user_id, family_id });
                        }
                        if live == 0 {
                            // Revoked between our read and our write: refuse like any revoked family.
                            tx.rollback().await?;
                            return Ok(RotateOutcome::Refused);
                        }
                        // Someone spent it between our read and our write: two holders of one
                        // token, which is exactly what reuse detection is for.
                        (family_id, user_id)
                    }
                };
                let revoked = sqlx::query(
                    "UPDATE auth_refresh_families SET revoked_at = $1, revoked_reason = $2
                     WHERE family_id = $3 AND revoked_at IS NULL",
                )
                .bind(now)
                .bind(Revocation::ReuseDetected.as_str())
                .bind(family_id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if revoked == 1 {
                    let event = AuthEvent::FamilyRevoked { user_id, family_id, reason: Revocation::ReuseDetected };
                    self.append(&mut tx, vec![event], now).await?;
                }
                self.commit(tx).await?;
                Ok(RotateOutcome::ReuseDetected)
            }

            async fn logout(&self, token: &TokenHash, now: i64) -> Result<bool, StoreError> {
                let Some(record) = self.refresh_record(token).await? else { return Ok(false) };
                let mut tx = self.begin().await?;
                let revoked = sqlx::query(
                    "UPDATE auth_refresh_families SET revoked_at = $1, revoked_reason = $2
                     WHERE family_id = $3 AND revoked_at IS NULL",
                )
                .bind(now)
                .bind(Revocation::Logout.as_str())
                .bind(record.family_id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if revoked == 1 {
                    let event = AuthEvent::FamilyRevoked { user_id: record.user_id, family_id: record.family_id, reason: Revocation::Logout };
                    self.append(&mut tx, vec![event], now).await?;
                }
                self.commit(tx).await?;
                Ok(true)
            }

            async fn change_password(&self, user_id: Uuid, hash: PasswordHash, now: i64) -> Result<(), StoreError> {
                let mut tx = self.begin().await?;
                sqlx::query("UPDATE auth_users SET password_hash = $1, password_changed_at = $2 WHERE user_id = $3")
                    .bind(hash.as_str())
                    .bind(now)
                    .bind(user_id.to_string())
                    .execute(&mut *tx)
                    .await?;
                let mut events = vec![AuthEvent::PasswordChanged { user_id, reset: false }];
                Self::revoke_families_in(&mut tx, user_id, Revocation::PasswordChanged, now, &mut events).await?;
                self.append(&mut tx, events, now).await?;
                self.commit(tx).await?;
                Ok(())
            }

            async fn reset_password(&self, token: &TokenHash, hash: PasswordHash, now: i64) -> Result<Option<Uuid>, StoreError> {
                let mut tx = self.begin().await?;
                let row = sqlx::query(
                    "UPDATE auth_email_tokens SET used_at = $1
                     WHERE token_hash = $2 AND kind = 'reset' AND used_at IS NULL AND expires_at > $1
                     RETURNING user_id",
                )
                .bind(now)
                .bind(token.as_bytes().to_vec())
                .fetch_optional(&mut *tx)
                .await?;
                // Roll back here rather than leave it to the drop, which only queues the
                // ROLLBACK for the connection's next use (an unknown token is a common case).
                let Some(row) = row else {
                    tx.rollback().await?;
                    return Ok(None);
                };
                let user_id = parse_uuid(&row.try_get::<String, _>("user_id")?)?;
                let was_confirmed: bool = sqlx::query_scalar("SELECT confirmed FROM auth_users WHERE user_id = $1")
                    .bind(user_id.to_string())
                    .fetch_one(&mut *tx)
                    .await?;
                sqlx::query("UPDATE auth_users SET password_hash = $1, password_changed_at = $2, confirmed = $3 WHERE user_id = $4")
                    .bind(hash.as_str())
                    .bind(now)
                    .bind(true)
                    .bind(user_id.to_string())
                    .execute(&mut *tx)
                    .await?;
                let mut events = Vec::new();
                if !was_confirmed {
                    events.push(AuthEvent::EmailConfirmed { user_id });
                }
                events.push(AuthEvent::PasswordChanged { user_id, reset: true });
                Self::revoke_families_in(&mut tx, user_id, Revocation::PasswordChanged, now, &mut events).await?;
                self.append(&mut tx, events, now).await?;
                self.commit(tx).await?;
                Ok(Some(user_id))
            }

            async fn subject_key(&self, user_id: Uuid) -> Result<Option<SubjectKey>, StoreError> {
                let bytes: Option<Vec<u8>> = sqlx::query_scalar("SELECT subject_key FROM auth_subject_keys WHERE user_id = $1")
                    .bind(user_id.to_string())
                    .fetch_optional(&self.pool)
                    .await?;
                bytes
                    .map(|b| SubjectKey::from_bytes(&b).map_err(|_| StoreError::Corrupt("auth_subject_keys.subject_key")))
                    .transpose()
            }

            async fn delete_account(&self, user_id: Uuid, now: i64) -> Result<Option<Vec<Uuid>>, StoreError> {
                let mut tx = self.begin().await?;
                // PostgreSQL: holding the account's row makes a concurrent change of it (a
                // login, a mail issued) wait for this transaction, then fail on its foreign
                // key, rather than leave a session or a mail behind. (SQLite has one writer.)
                let lookup = if DB::KIND == fairdeal_db::BackendKind::Postgres {
                    "SELECT email FROM auth_users WHERE user_id = $1 FOR UPDATE"
                } else {
                    "SELECT email FROM auth_users WHERE user_id = $1"
                };
                let id = user_id.to_string();
                let email: Option<String> = sqlx::query_scalar(lookup)
                    .bind(&id)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(email) = email else {
                    tx.rollback().await?;
                    return Ok(None);
                };
                // Appended while the account row still exists (PostgreSQL serialises the
                // account's appends on it).
                self.append(&mut tx, vec![AuthEvent::AccountDeleted { user_id }], now).await?;
                sqlx::query(
                    "DELETE FROM auth_refresh_tokens
                     WHERE family_id IN (SELECT family_id FROM auth_refresh_families WHERE user_id = $1)",
                )
                .bind(&id)
                .execute(&mut *tx)
                .await?;
                sqlx::query("DELETE FROM auth_refresh_families WHERE user_id = $1")
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM auth_email_tokens WHERE user_id = $1")
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
                // Every mail of the account went to its address (queued, or sent with the body
                // already cleared: the address stays in `recipient`, maybe in `last_error`).
                let mails: Vec<String> = sqlx::query_scalar("DELETE FROM auth_mail_outbox WHERE recipient = $1 RETURNING mail_id")
                    .bind(&email)
                    .fetch_all(&mut *tx)
                    .await?;
                let mails = mails.iter().map(|m| parse_uuid(m)).collect::<Result<Vec<_>, _>>()?;
                sqlx::query("DELETE FROM auth_subject_keys WHERE user_id = $1")
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM auth_users WHERE user_id = $1")
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
                self.commit(tx).await?;
                Ok(Some(mails))
            }

            async fn scrub(&self) -> Result<(), StoreError> {
                Ok(self.db.scrub().await?)
            }

            async fn signing_keys(&self) -> Result<Vec<StoredKey>, StoreError> {
                let rows = sqlx::query("SELECT key_id, secret, public_key, created_at FROM auth_signing_keys ORDER BY created_at DESC, key_id")
                    .fetch_all(&self.pool)
                    .await?;
                rows.into_iter()
                    .map(|row| {
                        Ok(StoredKey {
                            key_id: row.try_get("key_id")?,
                            secret: row.try_get("secret")?,
                            public_key: row.try_get("public_key")?,
                            created_at: row.try_get("created_at")?,
                        })
                    })
                    .collect()
            }

            async fn add_signing_key(&self, key: StoredKey) -> Result<(), StoreError> {
                // Tokens are signed with this key once it is stored: it must really commit.
                let mut conn = self.pool.acquire().await?;
                sqlx::query("INSERT INTO auth_signing_keys (key_id, secret, public_key, created_at) VALUES ($1, $2, $3, $4)")
                    .bind(&key.key_id)
                    .bind(&key.secret)
                    .bind(&key.public_key)
                    .bind(key.created_at)
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            }

            async fn claim_mail(&self, now: i64, lease_until: i64, limit: u32) -> Result<Vec<QueuedMail>, StoreError> {
                // A lease that never commits would let another replica send the mail again.
                let mut conn = self.pool.acquire().await?;
                let ids: Vec<String> = sqlx::query_scalar(
                    "SELECT mail_id FROM auth_mail_outbox WHERE sent_at IS NULL AND next_attempt_at <= $1
                     ORDER BY next_attempt_at, created_at LIMIT $2",
                )
                .bind(now)
                .bind(i64::from(limit))
                .fetch_all(&mut *conn)
                .await?;
                let mut claimed = Vec::new();
                for id in ids {
                    // The lease is taken only if nobody took it since our read.
                    let row = sqlx::query(
                        "UPDATE auth_mail_outbox SET next_attempt_at = $1, attempts = attempts + 1
                         WHERE mail_id = $2 AND sent_at IS NULL AND next_attempt_at <= $3
                         RETURNING mail_id, recipient, subject, body, attempts, created_at",
                    )
                    .bind(lease_until)
                    .bind(&id)
                    .bind(now)
                    .fetch_optional(&mut *conn)
                    .await?;
                    if let Some(row) = row {
                        claimed.push(QueuedMail {
                            mail: OutgoingMail {
                                mail_id: parse_uuid(&row.try_get::<String, _>("mail_id")?)?,
                                to: row.try_get("recipient")?,
                                subject: row.try_get("subject")?,
                                body: row.try_get("body")?,
                            },
                            attempts: fairdeal_db::stored_u32(
                                i64::from(row.try_get::<i32, _>("attempts")?),
                                "auth_mail_outbox.attempts",
                            )
                            .map_err(sqlx::Error::from)?,
                            created_at: row.try_get("created_at")?,
                        });
                    }
                }
                Ok(claimed)
            }

            async fn mail_sent(&self, mail_id: Uuid, now: i64) -> Result<bool, StoreError> {
                let mut conn = self.pool.acquire().await?;
                let marked = sqlx::query("UPDATE auth_mail_outbox SET sent_at = $1, body = '', last_error = NULL WHERE mail_id = $2")
                    .bind(now)
                    .bind(mail_id.to_string())
                    .execute(&mut *conn)
                    .await?
                    .rows_affected();
                Ok(marked == 1)
            }

            async fn mail_failed(&self, mail_id: Uuid, retry_at: i64, error: &str) -> Result<(), StoreError> {
                let mut conn = self.pool.acquire().await?;
                sqlx::query("UPDATE auth_mail_outbox SET next_attempt_at = $1, last_error = $2 WHERE mail_id = $3 AND sent_at IS NULL")
                    .bind(retry_at)
                    .bind(error)
                    .bind(mail_id.to_string())
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            }

            async fn unsent_mail_count(&self) -> Result<u64, StoreError> {
                let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM auth_mail_outbox WHERE sent_at IS NULL")
                    .fetch_one(&self.pool)
                    .await?;
                Ok(fairdeal_db::stored_u64(n, "count(auth_mail_outbox)").map_err(sqlx::Error::from)?)
            }
        }
}

/// The store on either backend, sharing the event store's database: PostgreSQL (the store
/// of record, tables in the service's schema) or SQLite (the embedded default).
#[derive(Debug, Clone)]
pub struct SqlAuthStore<DB: EventBackend> {
    /// Connections to the service's database.
    pool: sqlx::Pool<DB>,
    /// The same database, for what is not SQL written once (`Db::scrub`).
    db: fairdeal_db::Db,
    /// The event log, appended to inside our transactions.
    events: DB::Store,
    /// Fired after a transaction with events commits (wakes the relay).
    signal: AppendSignal,
}

/// The service's schema, both backends (tracked in `_auth_migrations`).
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "auth",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// The auth store of `storage` (migrated with [`MIGRATIONS`]).
pub fn auth_store(storage: &fairdeal_platform::Storage) -> std::sync::Arc<dyn AuthStore> {
    let signal = storage.signal().clone();
    match storage.backend() {
        fairdeal_eventstore::AnyEventStore::Postgres(events) => std::sync::Arc::new(SqlAuthStore {
            pool: events.pool().clone(),
            db: storage.db().clone(),
            events: events.clone(),
            signal,
        }),
        fairdeal_eventstore::AnyEventStore::Sqlite(events) => std::sync::Arc::new(SqlAuthStore {
            pool: events.pool().clone(),
            db: storage.db().clone(),
            events: events.clone(),
            signal,
        }),
    }
}

/// Groups events by stream and appends each group in `tx` through `append`.
fn by_stream(
    events: Vec<AuthEvent>,
    now: i64,
) -> Result<
    Vec<(
        fairdeal_eventstore::StreamId,
        Vec<fairdeal_eventstore::NewEvent>,
    )>,
    StoreError,
> {
    let mut groups: Vec<(Uuid, Vec<fairdeal_eventstore::NewEvent>)> = Vec::new();
    for event in events {
        let user = event.user_id();
        let new = to_new_event(&event, occurred_at(now));
        match groups.iter_mut().find(|(u, _)| *u == user) {
            Some((_, list)) => list.push(new),
            None => groups.push((user, vec![new])),
        }
    }
    groups
        .into_iter()
        .map(|(user, list)| stream_id(user).map(|id| (id, list)))
        .collect()
}

fairdeal_db::for_each_backend! { DB =>
    impl SqlAuthStore<DB> {
        /// A write transaction (SQLite takes the write lock up front).
        async fn begin(&self) -> Result<sqlx::Transaction<'static, DB>, StoreError> {
            Ok(DB::begin_write(&self.pool).await?)
        }

        /// Commits `tx` and wakes the relay for the events it holds.
        async fn commit(&self, tx: sqlx::Transaction<'static, DB>) -> Result<(), StoreError> {
            tx.commit().await?;
            self.signal.notify();
            Ok(())
        }

        async fn append(
            &self,
            tx: &mut sqlx::Transaction<'static, DB>,
            events: Vec<AuthEvent>,
            now: i64,
        ) -> Result<(), StoreError> {
            for (stream, list) in by_stream(events, now)? {
                // PostgreSQL: appends to one account's stream are serialised on its row, so
                // two concurrent changes of one account (two logins) never race for the same
                // stream version. The account row exists: it was inserted earlier in this
                // very transaction or long before. (SQLite has one writer at a time.)
                if DB::KIND == fairdeal_db::BackendKind::Postgres
                    && let Some(user) = stream.as_str().strip_prefix("user-")
                {
                    sqlx::query("SELECT 1 FROM auth_users WHERE user_id = $1 FOR UPDATE")
                        .bind(user)
                        .execute(&mut **tx)
                        .await?;
                }
                self.events
                    .append_in_tx(tx, &stream, fairdeal_eventstore::ExpectedVersion::Any, list)
                    .await
                    .map_err(|e| StoreError::Events(e.to_string()))?;
            }
            Ok(())
        }
    }
}

/// The account's stream, `user-<uuid>`.
fn stream_id(user_id: Uuid) -> Result<fairdeal_eventstore::StreamId, StoreError> {
    fairdeal_eventstore::StreamId::of("user", user_id)
        .map_err(|e| StoreError::Events(e.to_string()))
}

/// The event as the event store takes it: its protobuf message (typed by its full name),
/// correlated to the account, carrying the current trace context.
fn to_new_event(
    event: &AuthEvent,
    occurred_at: std::time::SystemTime,
) -> fairdeal_eventstore::NewEvent {
    use fairdeal_eventstore::NewEvent;
    use fairdeal_proto::fairdeal::auth::v1 as pb;
    let new = match event {
        AuthEvent::Registered {
            user_id,
            sealed_username,
        } => NewEvent::from_message(&pb::UserRegistered {
            user_id: user_id.to_string(),
            sealed_username: sealed_username.clone(),
            // `username` (deprecated) stays empty: the username is only ever written sealed.
            ..Default::default()
        }),
        AuthEvent::EmailConfirmed { user_id } => NewEvent::from_message(&pb::EmailConfirmed {
            user_id: user_id.to_string(),
        }),
        AuthEvent::LoggedIn { user_id, family_id } => NewEvent::from_message(&pb::LoggedIn {
            user_id: user_id.to_string(),
            family_id: family_id.to_string(),
        }),
        AuthEvent::FamilyRevoked {
            user_id,
            family_id,
            reason,
        } => {
            let reason = match reason {
                Revocation::Logout => pb::RevocationReason::Logout,
                Revocation::ReuseDetected => pb::RevocationReason::ReuseDetected,
                Revocation::PasswordChanged => pb::RevocationReason::PasswordChanged,
            };
            NewEvent::from_message(&pb::RefreshFamilyRevoked {
                user_id: user_id.to_string(),
                family_id: family_id.to_string(),
                reason: reason.into(),
            })
        }
        AuthEvent::PasswordChanged { user_id, reset } => {
            NewEvent::from_message(&pb::PasswordChanged {
                user_id: user_id.to_string(),
                kind: if *reset {
                    pb::PasswordChangeKind::Reset
                } else {
                    pb::PasswordChangeKind::Change
                }
                .into(),
            })
        }
        AuthEvent::PasswordResetRequested { user_id } => {
            NewEvent::from_message(&pb::PasswordResetRequested {
                user_id: user_id.to_string(),
            })
        }
        AuthEvent::AccountDeleted { user_id } => NewEvent::from_message(&pb::AccountDeleted {
            user_id: user_id.to_string(),
        }),
    };
    let mut trace = std::collections::BTreeMap::new();
    fairdeal_kit::propagation::inject_current(&mut trace);
    new.with_occurred_at(occurred_at)
        .with_correlation_id(format!("user-{}", event.user_id()))
        .with_trace_context(trace)
}
