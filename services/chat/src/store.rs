//! The chat's tables and its writes, both backends: every write appends its event and
//! changes the read model (`chat_messages`, `chat_mutes`) in one transaction, so history
//! never disagrees with the log. A channel's appends are serialised on its
//! `chat_channels` row (PostgreSQL: `FOR UPDATE`, across replicas; SQLite has one writer),
//! which also holds whether the channel is read-only.
//!
//! A message's text is sealed in its event under a key of its own (`chat_message_keys`,
//! inserted with the event): a removal deletes the key with the tombstone and clears the
//! history row, then scrubs the database's files ([`Db::scrub`]), so the text is gone from
//! the database, and unreadable in every copy of the log. The same is done for every message
//! of a deleted account ([`ErasureDatabase::erase_author`]).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use fairdeal_bus::AppendSignal;
use fairdeal_db::{BackendKind, Db};
use fairdeal_eventstore::{
    AnyEventStore, EventBackend, ExpectedVersion, PgEventStore, RecordedEvent, SqliteEventStore,
    StoreError,
};
use fairdeal_platform::Storage;
use fairdeal_shred::{ShredError, SubjectKey};
use sqlx::Pool;
use uuid::Uuid;

use crate::domain::{Channel, MessageText, MuteScope, Reason};
use crate::events::{ChatEvent, micros, seal_text};

/// The service's migrations, both backends.
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_chat",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// A message as stored for readers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Its id (its event's id).
    pub message_id: Uuid,
    /// Its channel.
    pub channel: Channel,
    /// Its version in the channel's stream.
    pub seq: u64,
    /// The author.
    pub author: Uuid,
    /// The text (empty once removed).
    pub text: String,
    /// When it was posted, microseconds since the epoch.
    pub posted_us: i64,
    /// Removed by a moderator.
    pub removed: bool,
}

/// How a write fails.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The channel is read-only (its game finished).
    #[error("channel is read-only")]
    ReadOnly,
    /// The message to remove is not in the channel.
    #[error("no such message in the channel")]
    NoMessage,
    /// The author's account was deleted: nothing of theirs is recorded any more.
    #[error("the author's account was deleted")]
    AccountDeleted,
    /// The message's key could not be made or used (the OS random source failed).
    #[error("sealing: {0}")]
    Seal(#[from] ShredError),
    /// The database failed.
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    /// The event store refused or failed.
    #[error("event store: {0}")]
    Store(#[from] StoreError),
}

/// The outcome of a removal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Removed now, by the tombstone at this version.
    Removed(u64),
    /// It was removed before; nothing appended.
    AlreadyRemoved,
}

/// The chat's storage.
#[async_trait]
pub trait ChatStore: Send + Sync + fmt::Debug {
    /// Whether `user` sits at or watches `table`.
    async fn is_member(&self, table: Uuid, user: Uuid) -> Result<bool, sqlx::Error>;
    /// Whether `channel` is read-only.
    async fn is_read_only(&self, channel: Channel) -> Result<bool, sqlx::Error>;
    /// The latest end of `user`'s mutes covering `channel` that is after `now`, if any.
    async fn muted_until(
        &self,
        user: Uuid,
        channel: Channel,
        now: i64,
    ) -> Result<Option<i64>, sqlx::Error>;
    /// Appends `text` by `author` to `channel` (event id `message_id`), sealed under a new
    /// key of the message's, and records it; refused if the author's account was deleted.
    async fn post(
        &self,
        channel: Channel,
        message_id: Uuid,
        author: Uuid,
        text: &MessageText,
    ) -> Result<StoredMessage, WriteError>;
    /// Removes a message: a tombstone, its key deleted and the text cleared, or nothing if
    /// removed already; either way the database's files are scrubbed after.
    async fn remove(
        &self,
        channel: Channel,
        message_id: Uuid,
        moderator: Uuid,
        reason: &Reason,
    ) -> Result<Removal, WriteError>;
    /// Mutes `user` in `scope` until `until` (Unix seconds).
    async fn mute(
        &self,
        user: Uuid,
        scope: MuteScope,
        until: i64,
        moderator: Uuid,
        reason: &Reason,
    ) -> Result<(), WriteError>;
    /// The key of message `message_id`'s sealed text; `None` once the message was removed
    /// or its author's account deleted (or if there is no such message).
    async fn message_key(&self, message_id: Uuid) -> Result<Option<SubjectKey>, sqlx::Error>;
    /// The seq of `message_id` in `channel`, if it is there.
    async fn seq_of(&self, channel: Channel, message_id: Uuid) -> Result<Option<u64>, sqlx::Error>;
    /// Up to `limit` messages of `channel` before `before` (a seq; `None`: from the newest),
    /// newest first, and whether older ones exist.
    async fn history(
        &self,
        channel: Channel,
        before: Option<u64>,
        limit: u32,
    ) -> Result<(Vec<StoredMessage>, bool), sqlx::Error>;
}

/// The store over a backend's pool and event store.
struct SqlChatStore<DB: EventBackend> {
    /// The database, for scrubbing its files after an erasure.
    db: Db,
    /// Its pool.
    pool: Pool<DB>,
    /// The event store on the same database, for appends inside our transactions.
    events: DB::Store,
    /// Fired after each commit that appended events.
    signal: AppendSignal,
}

impl<DB: EventBackend> fmt::Debug for SqlChatStore<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlChatStore").finish_non_exhaustive()
    }
}

/// The chat store on `storage`'s database, appending through its event store (whose pool is
/// the database's) and firing its append signal after each commit.
pub fn chat_store(storage: &Storage) -> Arc<dyn ChatStore> {
    let db = storage.db().clone();
    let signal = storage.signal().clone();
    match storage.backend() {
        AnyEventStore::Postgres(store) => Arc::new(SqlChatStore::<sqlx::Postgres> {
            db,
            pool: store.pool().clone(),
            events: PgEventStore::clone(store),
            signal,
        }),
        AnyEventStore::Sqlite(store) => Arc::new(SqlChatStore::<sqlx::Sqlite> {
            db,
            pool: store.pool().clone(),
            events: SqliteEventStore::clone(store),
            signal,
        }),
    }
}

type Row = (String, String, i64, String, String, i64, i64);

fn message(row: Row) -> Result<StoredMessage, sqlx::Error> {
    let (message_id, channel, seq, author, text, posted_us, removed) = row;
    let bad = |column: &str| sqlx::Error::Decode(format!("chat_messages.{column}").into());
    Ok(StoredMessage {
        message_id: Uuid::try_parse(&message_id).map_err(|_| bad("message_id"))?,
        channel: Channel::parse(&channel).map_err(|_| bad("channel"))?,
        seq: u64::try_from(seq).map_err(|_| bad("seq"))?,
        author: Uuid::try_parse(&author).map_err(|_| bad("author_id"))?,
        text,
        posted_us,
        removed: removed != 0,
    })
}

/// Seq of a recorded event, for the database.
fn seq(recorded: &RecordedEvent) -> i64 {
    i64::try_from(recorded.version).unwrap_or(i64::MAX)
}

fairdeal_db::for_each_backend! { DB =>
    impl SqlChatStore<DB> {
        /// Begins a write transaction holding `channel`'s row: appends to the channel's
        /// stream are serialised on it. Answers the transaction and whether the channel is
        /// read-only.
        async fn lock_channel(
            &self,
            channel: Channel,
        ) -> Result<(sqlx::Transaction<'static, DB>, bool), sqlx::Error> {
            let mut tx = DB::begin_write(&self.pool).await?;
            let name = channel.to_string();
            sqlx::query(
                "INSERT INTO chat_channels (channel, read_only) VALUES ($1, 0) \
                 ON CONFLICT (channel) DO NOTHING",
            )
            .bind(&name)
            .execute(&mut *tx)
            .await?;
            let sql = if DB::KIND == BackendKind::Postgres {
                "SELECT read_only FROM chat_channels WHERE channel = $1 FOR UPDATE"
            } else {
                "SELECT read_only FROM chat_channels WHERE channel = $1"
            };
            let read_only: i64 = sqlx::query_scalar(sql)
            .bind(&name)
            .fetch_one(&mut *tx)
            .await?;
            Ok((tx, read_only != 0))
        }

        /// Whether `author`'s account was deleted, read in `tx` so a deletion cannot slip in
        /// before the post commits: on PostgreSQL the author's row is held (`FOR SHARE`),
        /// which the erasure's update waits for; SQLite has one writer.
        async fn author_erased(
            tx: &mut sqlx::Transaction<'static, DB>,
            author: Uuid,
        ) -> Result<bool, sqlx::Error> {
            let id = author.to_string();
            sqlx::query(
                "INSERT INTO chat_authors (user_id, erased) VALUES ($1, 0) \
                 ON CONFLICT (user_id) DO NOTHING",
            )
            .bind(&id)
            .execute(&mut **tx)
            .await?;
            let sql = if DB::KIND == BackendKind::Postgres {
                "SELECT erased FROM chat_authors WHERE user_id = $1 FOR SHARE"
            } else {
                "SELECT erased FROM chat_authors WHERE user_id = $1"
            };
            let erased: i64 = sqlx::query_scalar(sql).bind(&id).fetch_one(&mut **tx).await?;
            Ok(erased != 0)
        }
    }

    #[async_trait]
    impl ChatStore for SqlChatStore<DB> {
        async fn is_member(&self, table: Uuid, user: Uuid) -> Result<bool, sqlx::Error> {
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT seat FROM chat_members WHERE table_id = $1 AND user_id = $2 LIMIT 1",
            )
            .bind(table.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.pool)
            .await?;
            Ok(found.is_some())
        }

        async fn is_read_only(&self, channel: Channel) -> Result<bool, sqlx::Error> {
            let read_only: Option<i64> =
                sqlx::query_scalar("SELECT read_only FROM chat_channels WHERE channel = $1")
                    .bind(channel.to_string())
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(read_only.unwrap_or(0) != 0)
        }

        async fn muted_until(
            &self,
            user: Uuid,
            channel: Channel,
            now: i64,
        ) -> Result<Option<i64>, sqlx::Error> {
            let until: Option<i64> = sqlx::query_scalar(
                "SELECT MAX(until_s) FROM chat_mutes \
                 WHERE user_id = $1 AND (channel = $2 OR channel = '') AND until_s > $3",
            )
            .bind(user.to_string())
            .bind(channel.to_string())
            .bind(now)
            .fetch_one(&self.pool)
            .await?;
            Ok(until)
        }

        async fn post(
            &self,
            channel: Channel,
            message_id: Uuid,
            author: Uuid,
            text: &MessageText,
        ) -> Result<StoredMessage, WriteError> {
            let (mut tx, read_only) = self.lock_channel(channel).await?;
            if read_only {
                return Err(WriteError::ReadOnly);
            }
            if Self::author_erased(&mut tx, author).await? {
                return Err(WriteError::AccountDeleted);
            }
            let key = SubjectKey::generate()?;
            let sealed_text = seal_text(&key, message_id, text)?;
            let event = ChatEvent::Posted { channel, author, sealed_text }
                .to_new_event()
                .with_event_id(message_id)
                .with_trace_context(trace_context());
            let stream = channel.stream().map_err(|e| StoreError::InvalidArgument(e.to_string()))?;
            let appended = self
                .events
                .append_in_tx(&mut tx, &stream, ExpectedVersion::Any, vec![event])
                .await?;
            let recorded = appended.events.first().ok_or_else(|| {
                StoreError::InvalidArgument("the append recorded no event".into())
            })?;
            let stored = StoredMessage {
                message_id,
                channel,
                seq: recorded.version,
                author,
                text: text.as_str().to_owned(),
                posted_us: micros(recorded.occurred_at),
                removed: false,
            };
            sqlx::query(
                "INSERT INTO chat_messages (channel, seq, message_id, author_id, text, posted_us, \
                 removed) VALUES ($1, $2, $3, $4, $5, $6, 0)",
            )
            .bind(channel.to_string())
            .bind(seq(recorded))
            .bind(message_id.to_string())
            .bind(author.to_string())
            .bind(&stored.text)
            .bind(stored.posted_us)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO chat_message_keys (message_id, author_id, subject_key) \
                 VALUES ($1, $2, $3)",
            )
            .bind(message_id.to_string())
            .bind(author.to_string())
            .bind(key.as_bytes())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            self.signal.notify();
            Ok(stored)
        }

        async fn remove(
            &self,
            channel: Channel,
            message_id: Uuid,
            moderator: Uuid,
            reason: &Reason,
        ) -> Result<Removal, WriteError> {
            // Read-only channels can still be moderated: the lock is only for the order.
            let (mut tx, _) = self.lock_channel(channel).await?;
            let removed: Option<i64> = sqlx::query_scalar(
                "SELECT removed FROM chat_messages WHERE channel = $1 AND message_id = $2",
            )
            .bind(channel.to_string())
            .bind(message_id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
            match removed {
                None => return Err(WriteError::NoMessage),
                Some(1) => {
                    drop(tx);
                    // A removal whose scrub failed is completed by asking again.
                    self.db.scrub().await?;
                    return Ok(Removal::AlreadyRemoved);
                }
                Some(_) => {}
            }
            let event = ChatEvent::Removed {
                channel,
                message_id,
                moderator,
                reason: reason.clone(),
            }
            .to_new_event()
            .with_trace_context(trace_context());
            let stream = channel.stream().map_err(|e| StoreError::InvalidArgument(e.to_string()))?;
            let appended = self
                .events
                .append_in_tx(&mut tx, &stream, ExpectedVersion::Any, vec![event])
                .await?;
            sqlx::query(
                "UPDATE chat_messages SET removed = 1, text = '' \
                 WHERE channel = $1 AND message_id = $2",
            )
            .bind(channel.to_string())
            .bind(message_id.to_string())
            .execute(&mut *tx)
            .await?;
            sqlx::query("DELETE FROM chat_message_keys WHERE message_id = $1")
                .bind(message_id.to_string())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            self.signal.notify();
            // The old pages (text and key) out of the database's files too.
            self.db.scrub().await?;
            Ok(Removal::Removed(appended.version))
        }

        async fn mute(
            &self,
            user: Uuid,
            scope: MuteScope,
            until: i64,
            moderator: Uuid,
            reason: &Reason,
        ) -> Result<(), WriteError> {
            let stream = fairdeal_eventstore::StreamId::of(crate::domain::MUTE_CATEGORY, user)
                .map_err(|e| StoreError::InvalidArgument(e.to_string()))?;
            let event = ChatEvent::Muted {
                user,
                scope,
                until,
                moderator,
                reason: reason.clone(),
            };
            // Two moderators muting one user at once race for the stream's next version
            // (`Any` is not retried inside a transaction): the loser tries again.
            let mut attempt = 0;
            loop {
                attempt += 1;
                let mut tx = DB::begin_write(&self.pool).await?;
                let appended = self
                    .events
                    .append_in_tx(
                        &mut tx,
                        &stream,
                        ExpectedVersion::Any,
                        vec![event.to_new_event().with_trace_context(trace_context())],
                    )
                    .await;
                match appended {
                    Ok(_) => {}
                    Err(StoreError::Conflict { .. }) if attempt < 5 => continue,
                    Err(e) => return Err(e.into()),
                }
                sqlx::query(
                    "INSERT INTO chat_mutes (user_id, channel, until_s) VALUES ($1, $2, $3) \
                     ON CONFLICT (user_id, channel) DO UPDATE SET until_s = excluded.until_s",
                )
                .bind(user.to_string())
                .bind(scope.stored())
                .bind(until)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                self.signal.notify();
                return Ok(());
            }
        }

        async fn message_key(&self, message_id: Uuid) -> Result<Option<SubjectKey>, sqlx::Error> {
            let stored: Option<Vec<u8>> = sqlx::query_scalar(
                "SELECT subject_key FROM chat_message_keys WHERE message_id = $1",
            )
            .bind(message_id.to_string())
            .fetch_optional(&self.pool)
            .await?;
            stored
                .map(|bytes| {
                    SubjectKey::from_bytes(&bytes).map_err(|_| {
                        sqlx::Error::Decode("chat_message_keys.subject_key".into())
                    })
                })
                .transpose()
        }

        async fn seq_of(
            &self,
            channel: Channel,
            message_id: Uuid,
        ) -> Result<Option<u64>, sqlx::Error> {
            let seq: Option<i64> = sqlx::query_scalar(
                "SELECT seq FROM chat_messages WHERE channel = $1 AND message_id = $2",
            )
            .bind(channel.to_string())
            .bind(message_id.to_string())
            .fetch_optional(&self.pool)
            .await?;
            Ok(seq.and_then(|s| u64::try_from(s).ok()))
        }

        async fn history(
            &self,
            channel: Channel,
            before: Option<u64>,
            limit: u32,
        ) -> Result<(Vec<StoredMessage>, bool), sqlx::Error> {
            let before = before.map_or(i64::MAX, |s| i64::try_from(s).unwrap_or(i64::MAX));
            // One more than asked, to know whether older messages exist.
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT message_id, channel, seq, author_id, text, posted_us, removed \
                 FROM chat_messages WHERE channel = $1 AND seq < $2 \
                 ORDER BY seq DESC LIMIT $3",
            )
            .bind(channel.to_string())
            .bind(before)
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.pool)
            .await?;
            let more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
            let messages = rows
                .into_iter()
                .take(usize::try_from(limit).unwrap_or(usize::MAX))
                .map(message)
                .collect::<Result<Vec<_>, _>>()?;
            Ok((messages, more))
        }
    }
}

/// A backend the account erasure runs on (PostgreSQL and SQLite).
pub trait ErasureDatabase: sqlx::Database {
    /// Erases every message of `author`, whose account was deleted, through `tx` (the
    /// `chat-accounts` consumer's): their keys deleted, their history rows cleared and marked
    /// removed (no tombstone: the account's deletion is the record), their mutes and table
    /// memberships dropped, and the author marked so that no later post of theirs is
    /// recorded. Scrub the database's files once `tx` has committed.
    fn erase_author(
        tx: &mut sqlx::Transaction<'_, Self>,
        author: Uuid,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
}

fairdeal_db::for_each_backend! { DB =>
    impl ErasureDatabase for DB {
        async fn erase_author(
            tx: &mut sqlx::Transaction<'_, DB>,
            author: Uuid,
        ) -> Result<(), sqlx::Error> {
            let id = author.to_string();
            // First: on PostgreSQL this waits for the author's posts in flight (they hold
            // the row), whose messages the statements below then see.
            sqlx::query(
                "INSERT INTO chat_authors (user_id, erased) VALUES ($1, 1) \
                 ON CONFLICT (user_id) DO UPDATE SET erased = 1",
            )
            .bind(&id)
            .execute(&mut **tx)
            .await?;
            for sql in [
                "DELETE FROM chat_message_keys WHERE author_id = $1",
                "UPDATE chat_messages SET removed = 1, text = '' \
                 WHERE author_id = $1 AND removed = 0",
                "DELETE FROM chat_mutes WHERE user_id = $1",
                "DELETE FROM chat_members WHERE user_id = $1",
            ] {
                sqlx::query(sql).bind(&id).execute(&mut **tx).await?;
            }
            Ok(())
        }
    }
}

/// The current trace context, for the events' envelopes.
fn trace_context() -> std::collections::BTreeMap<String, String> {
    let mut trace = std::collections::BTreeMap::new();
    fairdeal_kit::propagation::inject_current(&mut trace);
    trace
}
