//! The bus's own tables: [`BusDb`], a handle on them, and [`BusDatabase`], their statements,
//! written once for PostgreSQL and SQLite (the `fairdeal_db::for_each_backend!` pattern).
//!
//! The bus keeps four tables in the same database as the event store (see `migrations/`):
//! relay checkpoints, consumer positions, processed event ids and dead letters. Being in the
//! same database is the point: a handler's effects, the processed id and the consumer's
//! position commit in one transaction. On PostgreSQL they live in the service's schema, next
//! to its `events` table, with names qualified once at construction (like the store's).
//!
//! Migrations are numbered 2000-2999 and tracked in their own table, [`MIGRATIONS_TABLE`]
//! (in the service's schema on PostgreSQL), so they never clash with the store's migrator
//! (which tracks its own versions in `_fairdeal_eventstore_migrations`).
//!
//! Processed ids are kept for [`BusDb::prune_processed`]'s retention, not forever: they only
//! guard against the same event arriving again under a new stream sequence (a relay that
//! re-published after NATS lost acknowledged messages), which happens within the outage's
//! length; a redelivery of the same message is recognised by its sequence.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_db::{Backend, BackendKind, Schema};
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;
use sqlx::{AssertSqlSafe, Pool, Postgres, Row, SqlSafeStr, SqlStr, Sqlite, Transaction};
use uuid::Uuid;

use crate::error::BusError;

/// Name of the table tracking the bus's migrations (in the service's schema on PostgreSQL).
pub const MIGRATIONS_TABLE: &str = "_fairdeal_bus_migrations";

/// A poison event a consumer gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Durable name of the consumer that gave up.
    pub consumer: String,
    /// Position of the event in the consumer's source: JetStream stream sequence for JetStream
    /// consumers, global position for embedded consumers.
    pub position: i64,
    /// Event id, when the message could be decoded far enough to know it.
    pub event_id: Option<Uuid>,
    /// Stream the event belongs to, when known.
    pub stream_id: Option<String>,
    /// Event type, when known.
    pub event_type: Option<String>,
    /// How many times the handler was tried (0 when the message could not be decoded).
    pub attempts: u32,
    /// Why the consumer gave up: the last handler or decoding error.
    pub reason: String,
    /// The message as received (the encoded envelope), so an operator can inspect or replay it.
    pub payload: Vec<u8>,
}

/// A dead letter as stored, with what operators need to inspect and re-drive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDeadLetter {
    /// Row id (what `fairdeal-admin dead-letters show|redrive` takes).
    pub id: i64,
    /// The letter.
    pub letter: DeadLetter,
    /// When the consumer gave up, as the database prints it.
    pub dead_lettered_at: String,
    /// Where its re-drive stands.
    pub redrive: Redrive,
}

/// Where a dead letter's re-drive stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redrive {
    /// Never asked for.
    NotRequested,
    /// Asked for at this time; the consumer applies it at its next check.
    Requested(String),
    /// Applied at this time: its effects are committed.
    Done(String),
    /// The last re-drive failed with this error; it may be requested again.
    Failed(String),
}

/// The bus's statements for one backend, with table names qualified once.
#[derive(Debug)]
pub struct BusSql {
    load_position: SqlStr,
    save_position: SqlStr,
    advance_position: SqlStr,
    load_checkpoint: SqlStr,
    save_checkpoint: SqlStr,
    record_processed: SqlStr,
    is_processed: SqlStr,
    processed_ids: SqlStr,
    prune_processed: SqlStr,
    insert_dead_letter: SqlStr,
    dead_letters: SqlStr,
    stored_dead_letters: SqlStr,
    stored_dead_letter: SqlStr,
    request_redrive: SqlStr,
    pending_redrives: SqlStr,
    redrive_done: SqlStr,
    redrive_failed: SqlStr,
}

/// The table names, optionally qualified with a schema.
struct Tables {
    checkpoints: String,
    positions: String,
    processed: String,
    dead_letters: String,
}

impl Tables {
    fn new(schema: Option<&Schema>) -> Self {
        let q = |table: &str| match schema {
            Some(schema) => format!("{}.{table}", schema.quoted()),
            None => table.to_owned(),
        };
        Self {
            checkpoints: q("bus_relay_checkpoints"),
            positions: q("bus_consumer_positions"),
            processed: q("bus_processed_events"),
            dead_letters: q("bus_dead_letters"),
        }
    }
}

fn safe(sql: String) -> SqlStr {
    AssertSqlSafe(sql).into_sql_str()
}

/// The columns of a [`StoredDeadLetter`], times as text on both backends.
const STORED_COLUMNS: &str = "id, consumer, position, event_id, stream_id, event_type, attempts, \
     reason, payload, CAST(dead_lettered_at AS TEXT) AS dead_lettered_at, \
     CAST(redrive_requested_at AS TEXT) AS redrive_requested_at, \
     CAST(redriven_at AS TEXT) AS redriven_at, redrive_error";

/// The bus's migrations (versions 2000-2999), tracked in [`MIGRATIONS_TABLE`].
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_bus",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};

/// A database backend the bus keeps its tables in: PostgreSQL or SQLite.
///
/// Implemented once for both with `fairdeal_db::for_each_backend!`. The methods take a plain
/// connection so they run equally inside a transaction (`&mut *tx`) or on a pooled
/// connection. Services use [`BusDb`] rather than these methods.
pub trait BusDatabase: Backend {
    /// The statements over the tables in `schema` (PostgreSQL) or the main database (SQLite).
    fn statements(schema: Option<&Schema>) -> BusSql;

    /// Begins a consumer batch transaction (a write transaction, see
    /// [`Backend::begin_write`]).
    fn begin_batch(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;

    /// The consumer's last settled position, 0 when it has never run.
    fn load_consumer_position(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<i64, sqlx::Error>> + Send;

    /// Moves the consumer's position forward to `position` (never backwards, so a lagging
    /// instance cannot rewind a faster one).
    fn save_consumer_position(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
        position: i64,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Moves the consumer's position from `expected` to `position`, only if it still stands
    /// at `expected` (0: it has never run, and has no row yet); whether it did. A consumer
    /// that reads its source in order from its own committed position settles each event
    /// once this way, without recording event ids: a second instance that read the same
    /// batch finds the position moved, and its transaction is rolled back.
    fn advance_consumer_position(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
        expected: i64,
        position: i64,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// The relay's last acknowledged global position, 0 when it has never run.
    fn load_relay_checkpoint(
        sql: &BusSql,
        conn: &mut Self::Connection,
        relay: &str,
    ) -> impl Future<Output = Result<i64, sqlx::Error>> + Send;

    /// Moves the relay's checkpoint forward to `position` (never backwards).
    fn save_relay_checkpoint(
        sql: &BusSql,
        conn: &mut Self::Connection,
        relay: &str,
        position: i64,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Records that `consumer` settles `event_ids` and returns those that were not recorded
    /// yet; the others are redeliveries whose effects are already committed. One statement,
    /// the ids bound as one list.
    fn record_processed(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
        event_ids: &[Uuid],
    ) -> impl Future<Output = Result<HashSet<Uuid>, sqlx::Error>> + Send;

    /// Whether `consumer` has settled `event_id`.
    fn is_processed(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// Event ids settled by `consumer` (in no particular order).
    fn processed_event_ids(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<Vec<Uuid>, sqlx::Error>> + Send;

    /// Forgets `consumer`'s processed ids recorded more than `age_secs` seconds ago; returns
    /// how many.
    fn prune_processed(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
        age_secs: i64,
    ) -> impl Future<Output = Result<u64, sqlx::Error>> + Send;

    /// Stores a dead letter. Returns `false` when this consumer already dead-lettered the same
    /// position (a retried transaction), leaving the first record untouched.
    fn insert_dead_letter(
        sql: &BusSql,
        conn: &mut Self::Connection,
        letter: &DeadLetter,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// The consumer's dead letters, oldest first.
    fn dead_letters(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<Vec<DeadLetter>, sqlx::Error>> + Send;

    /// Dead letters of `consumer` (every consumer's when empty), oldest first, with their
    /// ids and re-drive state.
    fn stored_dead_letters(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<Vec<StoredDeadLetter>, sqlx::Error>> + Send;

    /// The dead letter with row id `id`.
    fn stored_dead_letter(
        sql: &BusSql,
        conn: &mut Self::Connection,
        id: i64,
    ) -> impl Future<Output = Result<Option<StoredDeadLetter>, sqlx::Error>> + Send;

    /// Asks for dead letter `id` to be applied again; `false` when there is no such letter
    /// or it was re-driven already.
    fn request_redrive(
        sql: &BusSql,
        conn: &mut Self::Connection,
        id: i64,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// `consumer`'s dead letters whose re-drive was asked for and not done.
    fn pending_redrives(
        sql: &BusSql,
        conn: &mut Self::Connection,
        consumer: &str,
    ) -> impl Future<Output = Result<Vec<StoredDeadLetter>, sqlx::Error>> + Send;

    /// Records the outcome of re-driving dead letter `id`: done (`None`, in the handler's
    /// transaction) or failed with this error (the request is cleared).
    fn finish_redrive(
        sql: &BusSql,
        conn: &mut Self::Connection,
        id: i64,
        error: Option<&str>,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Takes the lease named `key` if no other process holds it (see [`Lease`]).
    fn try_lease(
        pool: &Pool<Self>,
        key: &str,
    ) -> impl Future<Output = Result<Option<Lease<Self>>, sqlx::Error>> + Send;

    /// Checks that `lease` is still held (its session is alive) and keeps it from idling
    /// out; an error means it is lost.
    fn keep_lease(lease: &mut Lease<Self>) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
}

/// How long a lease's session may stay silent before the server ends it, releasing the
/// lease (PostgreSQL `idle_session_timeout`). The holder checks its lease far more often
/// (every [`LEASE_CHECK_INTERVAL`]); this bounds how long a holder that vanished without
/// closing its connection (a lost node) keeps the others waiting.
pub const LEASE_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a lease holder checks its lease.
pub const LEASE_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// An exclusive, process-wide claim on a name, such as "the relay of this events table":
/// of all the replicas of a service, the one holding the lease does the work and the others
/// stand by, taking over when it is released.
///
/// On PostgreSQL it is a session advisory lock (`pg_try_advisory_lock`) held by a dedicated
/// connection outside the pool: released when the lease is dropped, when the process dies
/// (its connection closes), or when the session stays silent for [`LEASE_IDLE_TIMEOUT`].
/// On SQLite (one process owns the file) every request is granted.
#[derive(Debug)]
pub struct Lease<DB: BusDatabase> {
    /// The session holding the lock (`None` on SQLite).
    conn: Option<DB::Connection>,
}

/// The bus's tables in one database (and on PostgreSQL one schema): what the relay and the
/// consumers are given. Cheap to clone.
#[derive(Debug)]
pub struct BusDb<DB: BusDatabase> {
    /// The database shared with the event store and the handlers.
    pool: Pool<DB>,
    /// The schema holding the tables (PostgreSQL only).
    schema: Option<Schema>,
    /// The statements, qualified once.
    sql: Arc<BusSql>,
}

impl<DB: BusDatabase> Clone for BusDb<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            schema: self.schema.clone(),
            sql: Arc::clone(&self.sql),
        }
    }
}

impl BusDb<Postgres> {
    /// The bus tables in `schema` (the service's schema, the same one its `PgEventStore`
    /// uses: a lowercase SQL identifier `[a-z_][a-z0-9_]*`, at most 63 bytes). Does not touch
    /// the database; call [`BusDb::migrate`] at start.
    pub fn postgres(pool: PgPool, schema: &str) -> Result<Self, BusError> {
        let schema = Schema::new(schema).map_err(|e| BusError::Config(e.to_string()))?;
        Ok(Self {
            pool,
            sql: Arc::new(Postgres::statements(Some(&schema))),
            schema: Some(schema),
        })
    }
}

impl BusDb<Sqlite> {
    /// The bus tables in the SQLite database of `pool` (the event store's file).
    pub fn sqlite(pool: SqlitePool) -> Self {
        Self {
            pool,
            schema: None,
            sql: Arc::new(Sqlite::statements(None)),
        }
    }
}

impl<DB: BusDatabase> BusDb<DB> {
    /// The database pool (handlers' transactions come from it).
    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    /// The statements (for the crate's loops).
    pub(crate) fn sql(&self) -> &BusSql {
        &self.sql
    }

    /// Creates or upgrades the bus tables (idempotent, safe from several processes at once;
    /// run at start, after the store's own migrations).
    pub async fn migrate(&self) -> Result<(), BusError> {
        let schema = match &self.schema {
            Some(schema) => schema.clone(),
            // SQLite has no schema; the name is not used.
            None => Schema::new("main").map_err(|e| BusError::Config(e.to_string()))?,
        };
        DB::db(self.pool.clone(), &schema)
            .migrate(&MIGRATIONS)
            .await?;
        Ok(())
    }

    /// The last position `consumer` settled (0 before its first event).
    pub async fn consumer_position(&self, consumer: &str) -> Result<i64, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::load_consumer_position(&self.sql, &mut conn, consumer).await?)
    }

    /// The last global position `relay` published with an ack (0 before its first).
    pub async fn relay_checkpoint(&self, relay: &str) -> Result<i64, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::load_relay_checkpoint(&self.sql, &mut conn, relay).await?)
    }

    /// The event ids `consumer` settled (applied or dead-lettered), in no particular order.
    pub async fn processed_event_ids(&self, consumer: &str) -> Result<Vec<Uuid>, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::processed_event_ids(&self.sql, &mut conn, consumer).await?)
    }

    /// Whether `consumer` settled `event_id`.
    pub async fn is_processed(&self, consumer: &str, event_id: Uuid) -> Result<bool, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::is_processed(&self.sql, &mut conn, consumer, event_id).await?)
    }

    /// Forgets the ids `consumer` settled more than `retention` ago (whole seconds); returns
    /// how many were removed.
    pub async fn prune_processed(
        &self,
        consumer: &str,
        retention: Duration,
    ) -> Result<u64, BusError> {
        let age = i64::try_from(retention.as_secs()).unwrap_or(i64::MAX);
        let mut conn = self.pool.acquire().await?;
        Ok(DB::prune_processed(&self.sql, &mut conn, consumer, age).await?)
    }

    /// The dead letters `consumer` recorded, oldest first.
    pub async fn dead_letters(&self, consumer: &str) -> Result<Vec<DeadLetter>, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::dead_letters(&self.sql, &mut conn, consumer).await?)
    }

    /// Dead letters of `consumer` (every consumer's when `None`), with ids and re-drive
    /// state, oldest first.
    pub async fn stored_dead_letters(
        &self,
        consumer: Option<&str>,
    ) -> Result<Vec<StoredDeadLetter>, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::stored_dead_letters(&self.sql, &mut conn, consumer.unwrap_or_default()).await?)
    }

    /// The dead letter with row id `id`.
    pub async fn stored_dead_letter(&self, id: i64) -> Result<Option<StoredDeadLetter>, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::stored_dead_letter(&self.sql, &mut conn, id).await?)
    }

    /// Asks the consumer of dead letter `id` to apply it again (at its next check, within
    /// seconds); `false` when there is no such letter or it was re-driven already.
    pub async fn request_redrive(&self, id: i64) -> Result<bool, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::request_redrive(&self.sql, &mut conn, id).await?)
    }

    /// Takes the lease of `name` (in this schema) if nobody holds it.
    pub async fn try_lease(&self, name: &str) -> Result<Option<Lease<DB>>, BusError> {
        let key = format!(
            "fairdeal-bus:{}:{name}",
            self.schema.as_ref().map_or("main", Schema::as_str)
        );
        Ok(DB::try_lease(&self.pool, &key).await?)
    }

    /// Checks that `lease` is still held; an error means it is lost.
    pub async fn keep_lease(&self, lease: &mut Lease<DB>) -> Result<(), BusError> {
        Ok(DB::keep_lease(lease).await?)
    }

    /// Waits until this process holds the lease of `name`, trying every `standby` while
    /// another holds it (`None`: shut down while standing by). `standing_by` runs once, at
    /// the first refusal (the caller's log line).
    pub(crate) async fn lead(
        &self,
        name: &str,
        standby: Duration,
        shutdown: &tokio_util::sync::CancellationToken,
        standing_by: impl FnOnce(),
    ) -> Result<Option<Lease<DB>>, BusError> {
        let mut standing_by = Some(standing_by);
        loop {
            if let Some(lease) = self.try_lease(name).await? {
                return Ok(Some(lease));
            }
            if let Some(announce) = standing_by.take() {
                announce();
            }
            tokio::select! {
                () = shutdown.cancelled() => return Ok(None),
                () = tokio::time::sleep(standby) => {}
            }
        }
    }
}

/// Attempts are stored as INTEGER; a count beyond `i32::MAX` cannot happen with a bounded retry
/// policy, but saturate rather than wrap.
fn attempts_to_db(attempts: u32) -> i32 {
    i32::try_from(attempts).unwrap_or(i32::MAX)
}

/// Reading dead-letter rows (both backends, below).
trait LetterRows: sqlx::Database {
    /// The letter of a `bus_dead_letters` row.
    fn letter(row: &Self::Row) -> Result<DeadLetter, sqlx::Error>;
    /// The letter with id and re-drive state (a row of `STORED_COLUMNS`).
    fn stored(row: &Self::Row) -> Result<StoredDeadLetter, sqlx::Error>;
}

fairdeal_db::for_each_backend! { DB =>
    impl LetterRows for DB {
        fn letter(row: &<DB as sqlx::Database>::Row) -> Result<DeadLetter, sqlx::Error> {
            let event_id: Option<<DB as Backend>::StoredUuid> = row.try_get("event_id")?;
            Ok(DeadLetter {
                consumer: row.try_get("consumer")?,
                position: row.try_get("position")?,
                event_id: event_id
                    .map(|id| DB::load_uuid(id, "event_id"))
                    .transpose()?,
                stream_id: row.try_get("stream_id")?,
                event_type: row.try_get("event_type")?,
                attempts: fairdeal_db::stored_u32(
                    i64::from(row.try_get::<i32, _>("attempts")?),
                    "bus_dead_letters.attempts",
                )?,
                reason: row.try_get("reason")?,
                payload: row.try_get("payload")?,
            })
        }

        fn stored(row: &<DB as sqlx::Database>::Row) -> Result<StoredDeadLetter, sqlx::Error> {
            let requested: Option<String> = row.try_get("redrive_requested_at")?;
            let done: Option<String> = row.try_get("redriven_at")?;
            let error: Option<String> = row.try_get("redrive_error")?;
            let redrive = match (done, requested, error) {
                (Some(at), _, _) => Redrive::Done(at),
                (None, Some(at), _) => Redrive::Requested(at),
                (None, None, Some(error)) => Redrive::Failed(error),
                (None, None, None) => Redrive::NotRequested,
            };
            Ok(StoredDeadLetter {
                id: row.try_get("id")?,
                letter: Self::letter(row)?,
                dead_lettered_at: row.try_get("dead_lettered_at")?,
                redrive,
            })
        }
    }

    impl BusDatabase for DB {
        fn statements(schema: Option<&Schema>) -> BusSql {
            let t = Tables::new(schema);
            let (greatest, now) = (DB::GREATEST, DB::NOW);
            BusSql {
                load_position: safe(format!(
                    "SELECT position FROM {} WHERE consumer = $1",
                    t.positions
                )),
                save_position: safe(format!(
                    "INSERT INTO {p} AS c (consumer, position) VALUES ($1, $2) \
                     ON CONFLICT (consumer) DO UPDATE \
                     SET position = {greatest}(c.position, excluded.position), updated_at = {now}",
                    p = t.positions
                )),
                advance_position: safe(format!(
                    "INSERT INTO {p} AS c (consumer, position) VALUES ($1, $3) \
                     ON CONFLICT (consumer) DO UPDATE \
                     SET position = excluded.position, updated_at = {now} \
                     WHERE c.position = $2",
                    p = t.positions
                )),
                load_checkpoint: safe(format!(
                    "SELECT position FROM {} WHERE relay = $1",
                    t.checkpoints
                )),
                save_checkpoint: safe(format!(
                    "INSERT INTO {c} AS r (relay, position) VALUES ($1, $2) \
                     ON CONFLICT (relay) DO UPDATE \
                     SET position = {greatest}(r.position, excluded.position), updated_at = {now}",
                    c = t.checkpoints
                )),
                // One text whatever the batch (prepared once), the ids as one parameter.
                // `WHERE true`: SQLite's parser needs it before ON CONFLICT.
                record_processed: safe(format!(
                    "INSERT INTO {} (consumer, event_id) SELECT $1, ids.id FROM {} \
                     WHERE true ORDER BY ids.n ON CONFLICT DO NOTHING RETURNING event_id",
                    t.processed,
                    DB::uuid_rows("$2")
                )),
                is_processed: safe(format!(
                    "SELECT 1 FROM {} WHERE consumer = $1 AND event_id = $2",
                    t.processed
                )),
                processed_ids: safe(format!(
                    "SELECT event_id FROM {} WHERE consumer = $1",
                    t.processed
                )),
                prune_processed: safe(format!(
                    "DELETE FROM {} WHERE consumer = $1 AND processed_at < {}",
                    t.processed,
                    DB::seconds_ago("$2")
                )),
                insert_dead_letter: safe(format!(
                    "INSERT INTO {} (consumer, position, event_id, stream_id, event_type, \
                         attempts, reason, payload) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (consumer, position) DO NOTHING",
                    t.dead_letters
                )),
                dead_letters: safe(format!(
                    "SELECT consumer, position, event_id, stream_id, event_type, attempts, \
                         reason, payload \
                     FROM {} WHERE consumer = $1 ORDER BY id",
                    t.dead_letters
                )),
                stored_dead_letters: safe(format!(
                    "SELECT {STORED_COLUMNS} FROM {} \
                     WHERE CAST($1 AS TEXT) = '' OR consumer = $1 ORDER BY id",
                    t.dead_letters
                )),
                stored_dead_letter: safe(format!(
                    "SELECT {STORED_COLUMNS} FROM {} WHERE id = $1",
                    t.dead_letters
                )),
                request_redrive: safe(format!(
                    "UPDATE {} SET redrive_requested_at = {now}, redrive_error = NULL \
                     WHERE id = $1 AND redriven_at IS NULL RETURNING id",
                    t.dead_letters
                )),
                pending_redrives: safe(format!(
                    "SELECT {STORED_COLUMNS} FROM {} WHERE consumer = $1 \
                       AND redrive_requested_at IS NOT NULL AND redriven_at IS NULL ORDER BY id",
                    t.dead_letters
                )),
                redrive_done: safe(format!(
                    "UPDATE {} SET redriven_at = {now} WHERE id = $1",
                    t.dead_letters
                )),
                redrive_failed: safe(format!(
                    "UPDATE {} SET redrive_requested_at = NULL, redrive_error = $2 WHERE id = $1",
                    t.dead_letters
                )),
            }
        }

        async fn begin_batch(pool: &Pool<DB>) -> Result<Transaction<'static, DB>, sqlx::Error> {
            DB::begin_write(pool).await
        }

        async fn load_consumer_position(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
        ) -> Result<i64, sqlx::Error> {
            let row: Option<(i64,)> = sqlx::query_as(sql.load_position.clone())
                .bind(consumer)
                .fetch_optional(&mut *conn)
                .await?;
            Ok(row.map_or(0, |(position,)| position))
        }

        async fn save_consumer_position(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
            position: i64,
        ) -> Result<(), sqlx::Error> {
            sqlx::query(sql.save_position.clone())
                .bind(consumer)
                .bind(position)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }

        async fn advance_consumer_position(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
            expected: i64,
            position: i64,
        ) -> Result<bool, sqlx::Error> {
            let done = sqlx::query(sql.advance_position.clone())
                .bind(consumer)
                .bind(expected)
                .bind(position)
                .execute(&mut *conn)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        async fn load_relay_checkpoint(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            relay: &str,
        ) -> Result<i64, sqlx::Error> {
            let row: Option<(i64,)> = sqlx::query_as(sql.load_checkpoint.clone())
                .bind(relay)
                .fetch_optional(&mut *conn)
                .await?;
            Ok(row.map_or(0, |(position,)| position))
        }

        async fn save_relay_checkpoint(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            relay: &str,
            position: i64,
        ) -> Result<(), sqlx::Error> {
            sqlx::query(sql.save_checkpoint.clone())
                .bind(relay)
                .bind(position)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }

        async fn record_processed(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
            event_ids: &[Uuid],
        ) -> Result<HashSet<Uuid>, sqlx::Error> {
            let mut new = HashSet::with_capacity(event_ids.len());
            if event_ids.is_empty() {
                return Ok(new);
            }
            let rows = sqlx::query(sql.record_processed.clone())
                .bind(consumer)
                .bind(DB::uuid_list(event_ids))
                .fetch_all(&mut *conn)
                .await?;
            for row in rows {
                new.insert(DB::load_uuid(row.try_get("event_id")?, "event_id")?);
            }
            Ok(new)
        }

        async fn is_processed(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
            event_id: Uuid,
        ) -> Result<bool, sqlx::Error> {
            let row: Option<(i32,)> = sqlx::query_as(sql.is_processed.clone())
                .bind(consumer)
                .bind(DB::store_uuid(event_id))
                .fetch_optional(&mut *conn)
                .await?;
            Ok(row.is_some())
        }

        async fn processed_event_ids(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
        ) -> Result<Vec<Uuid>, sqlx::Error> {
            let rows = sqlx::query(sql.processed_ids.clone())
                .bind(consumer)
                .fetch_all(&mut *conn)
                .await?;
            rows.iter()
                .map(|row| DB::load_uuid(row.try_get("event_id")?, "event_id"))
                .collect()
        }

        async fn prune_processed(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
            age_secs: i64,
        ) -> Result<u64, sqlx::Error> {
            let done = sqlx::query(sql.prune_processed.clone())
                .bind(consumer)
                .bind(age_secs)
                .execute(&mut *conn)
                .await?;
            Ok(done.rows_affected())
        }

        async fn insert_dead_letter(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            letter: &DeadLetter,
        ) -> Result<bool, sqlx::Error> {
            let done = sqlx::query(sql.insert_dead_letter.clone())
                .bind(&letter.consumer)
                .bind(letter.position)
                .bind(letter.event_id.map(DB::store_uuid))
                .bind(&letter.stream_id)
                .bind(&letter.event_type)
                .bind(attempts_to_db(letter.attempts))
                .bind(&letter.reason)
                .bind(&letter.payload)
                .execute(&mut *conn)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        async fn dead_letters(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
        ) -> Result<Vec<DeadLetter>, sqlx::Error> {
            let rows = sqlx::query(sql.dead_letters.clone())
                .bind(consumer)
                .fetch_all(&mut *conn)
                .await?;
            rows.iter().map(<DB as LetterRows>::letter).collect()
        }

        async fn stored_dead_letters(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
        ) -> Result<Vec<StoredDeadLetter>, sqlx::Error> {
            let rows = sqlx::query(sql.stored_dead_letters.clone())
                .bind(consumer)
                .fetch_all(&mut *conn)
                .await?;
            rows.iter().map(<DB as LetterRows>::stored).collect()
        }

        async fn stored_dead_letter(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            id: i64,
        ) -> Result<Option<StoredDeadLetter>, sqlx::Error> {
            let row = sqlx::query(sql.stored_dead_letter.clone())
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
            row.as_ref().map(<DB as LetterRows>::stored).transpose()
        }

        async fn request_redrive(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            id: i64,
        ) -> Result<bool, sqlx::Error> {
            let row = sqlx::query(sql.request_redrive.clone())
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?;
            Ok(row.is_some())
        }

        async fn pending_redrives(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            consumer: &str,
        ) -> Result<Vec<StoredDeadLetter>, sqlx::Error> {
            let rows = sqlx::query(sql.pending_redrives.clone())
                .bind(consumer)
                .fetch_all(&mut *conn)
                .await?;
            rows.iter().map(<DB as LetterRows>::stored).collect()
        }

        async fn finish_redrive(
            sql: &BusSql,
            conn: &mut <DB as sqlx::Database>::Connection,
            id: i64,
            error: Option<&str>,
        ) -> Result<(), sqlx::Error> {
            match error {
                None => sqlx::query(sql.redrive_done.clone()).bind(id).execute(&mut *conn).await?,
                Some(error) => {
                    sqlx::query(sql.redrive_failed.clone())
                        .bind(id)
                        .bind(error)
                        .execute(&mut *conn)
                        .await?
                }
            };
            Ok(())
        }

        async fn try_lease(pool: &Pool<DB>, key: &str) -> Result<Option<Lease<DB>>, sqlx::Error> {
            use sqlx::{ConnectOptions, Connection};
            if DB::KIND == BackendKind::Sqlite {
                // One process owns an embedded database: nobody to share the work with.
                return Ok(Some(Lease { conn: None }));
            }
            let mut conn = pool.connect_options().connect().await?;
            let held: bool =
                sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
                    .bind(key)
                    .fetch_one(&mut conn)
                    .await?;
            if !held {
                conn.close().await?;
                return Ok(None);
            }
            let timeout = format!(
                "SET idle_session_timeout = '{}s'",
                LEASE_IDLE_TIMEOUT.as_secs()
            );
            if let Err(error) = sqlx::query(AssertSqlSafe(timeout)).execute(&mut conn).await {
                // PostgreSQL before 14: the lease is still released when the connection
                // closes, but a holder lost without closing it keeps it until TCP gives up.
                tracing::warn!(%error, key, "no idle_session_timeout for the lease");
            }
            Ok(Some(Lease { conn: Some(conn) }))
        }

        async fn keep_lease(lease: &mut Lease<DB>) -> Result<(), sqlx::Error> {
            if let Some(conn) = lease.conn.as_mut() {
                sqlx::query("SELECT 1").execute(conn).await?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_statements_are_schema_qualified() {
        let auth = Schema::new("auth").unwrap();
        let sql = Postgres::statements(Some(&auth));
        assert!(
            sql.record_processed
                .as_str()
                .contains("\"auth\".bus_processed_events")
        );
        assert!(
            sql.save_position
                .as_str()
                .contains("\"auth\".bus_consumer_positions")
        );
        let sql = Sqlite::statements(None);
        assert!(
            sql.record_processed
                .as_str()
                .starts_with("INSERT INTO bus_processed_events ")
        );
    }

    /// What keeps a consumer settling by position from applying a batch twice: the
    /// position moves only from where the instance expects it, the first time included.
    #[tokio::test]
    async fn a_consumer_position_moves_on_only_from_where_it_was_expected() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let db = BusDb::sqlite(pool);
        db.migrate().await.unwrap();
        let mut conn = db.pool().acquire().await.unwrap();
        let mut advance = async |expected: i64, position: i64| {
            Sqlite::advance_consumer_position(db.sql(), &mut conn, "lobby", expected, position)
                .await
                .unwrap()
        };
        assert!(advance(0, 5).await, "the first batch: no row yet");
        assert!(
            !advance(0, 7).await,
            "a second instance that read the same batch"
        );
        assert!(advance(5, 9).await);
        assert!(!advance(5, 12).await, "behind");
        assert!(!advance(12, 14).await, "ahead of where it is");
        drop(conn);
        assert_eq!(db.consumer_position("lobby").await.unwrap(), 9);
        assert_eq!(db.consumer_position("other").await.unwrap(), 0);
    }

    #[tokio::test]
    async fn schema_names_are_validated() {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://localhost/none")
            .unwrap();
        assert!(BusDb::postgres(pool.clone(), "auth_1").is_ok());
        for bad in ["", "Auth", "1a", "a-b", "a\"b"] {
            assert!(BusDb::postgres(pool.clone(), bad).is_err(), "{bad:?}");
        }
    }
}
