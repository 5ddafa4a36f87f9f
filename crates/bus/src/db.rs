//! The bus's own tables: [`BusDb`], a handle on them, and [`BusDatabase`], the per-backend
//! statements behind it (PostgreSQL and SQLite).
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

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::SqlitePool;
use sqlx::{
    AssertSqlSafe, PgConnection, Pool, Postgres, Row, SqlSafeStr, SqlStr, Sqlite, SqliteConnection,
    Transaction,
};
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

/// The bus's statements for one backend, with table names qualified once.
#[derive(Debug)]
pub struct BusSql {
    load_position: SqlStr,
    save_position: SqlStr,
    load_checkpoint: SqlStr,
    save_checkpoint: SqlStr,
    record_processed: SqlStr,
    is_processed: SqlStr,
    processed_ids: SqlStr,
    insert_dead_letter: SqlStr,
    dead_letters: SqlStr,
}

/// The table names, optionally qualified with a schema.
struct Tables {
    checkpoints: String,
    positions: String,
    processed: String,
    dead_letters: String,
}

impl Tables {
    fn new(schema: Option<&str>) -> Self {
        let q = |table: &str| match schema {
            Some(schema) => format!("\"{schema}\".{table}"),
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

mod sealed {
    pub trait Sealed {}
    impl Sealed for sqlx::Postgres {}
    impl Sealed for sqlx::Sqlite {}
}

/// A database backend the bus keeps its tables in: PostgreSQL or SQLite.
///
/// Sealed: one implementation per backend of the event store. The methods take a plain
/// connection so they run equally inside a transaction (`&mut *tx`) or on a pooled connection.
/// Services use [`BusDb`] rather than these methods.
pub trait BusDatabase: sqlx::Database + sealed::Sealed {
    /// The statements over the tables in `schema` (PostgreSQL) or the main database (SQLite).
    fn statements(schema: Option<&str>) -> BusSql;

    /// Begins a consumer batch transaction. SQLite takes the write lock up front
    /// (`BEGIN IMMEDIATE`): a deferred transaction that reads before it writes fails with
    /// `SQLITE_BUSY` when another writer got in between, instead of waiting its turn.
    fn begin_batch(
        pool: &Pool<Self>,
    ) -> impl Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;

    /// Runs the bus's migrations (idempotent).
    fn migrate(
        pool: &Pool<Self>,
        schema: Option<&str>,
    ) -> impl Future<Output = Result<(), BusError>> + Send;

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
    /// yet; the others are redeliveries whose effects are already committed. One statement
    /// on PostgreSQL whatever the batch size.
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
pub const LEASE_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How often a lease holder checks its lease.
pub const LEASE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// An exclusive, process-wide claim on a name, such as "the relay of this events table":
/// of all the replicas of a service, the one holding the lease does the work and the others
/// stand by, taking over when it is released.
///
/// On PostgreSQL it is a session advisory lock (`pg_try_advisory_lock`) held by a dedicated
/// connection outside the pool: released when the lease is dropped, when the process dies
/// (its connection closes), or when the session stays silent for [`LEASE_IDLE_TIMEOUT`].
/// On SQLite (one process) every request is granted.
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
    schema: Option<Arc<str>>,
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
        let mut bytes = schema.bytes();
        let valid = schema.len() <= 63
            && bytes
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(BusError::Config(format!(
                "schema {schema:?} is not a lowercase SQL identifier ([a-z_][a-z0-9_]*, <= 63 bytes)"
            )));
        }
        Ok(Self {
            pool,
            sql: Arc::new(Postgres::statements(Some(schema))),
            schema: Some(schema.into()),
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
        DB::migrate(&self.pool, self.schema.as_deref()).await
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

    /// The dead letters `consumer` recorded, oldest first.
    pub async fn dead_letters(&self, consumer: &str) -> Result<Vec<DeadLetter>, BusError> {
        let mut conn = self.pool.acquire().await?;
        Ok(DB::dead_letters(&self.sql, &mut conn, consumer).await?)
    }

    /// Takes the lease of `name` (in this schema) if nobody holds it.
    pub async fn try_lease(&self, name: &str) -> Result<Option<Lease<DB>>, BusError> {
        let key = format!(
            "fairdeal-bus:{}:{name}",
            self.schema.as_deref().unwrap_or("main")
        );
        Ok(DB::try_lease(&self.pool, &key).await?)
    }

    /// Checks that `lease` is still held; an error means it is lost.
    pub async fn keep_lease(&self, lease: &mut Lease<DB>) -> Result<(), BusError> {
        Ok(DB::keep_lease(lease).await?)
    }
}

/// Attempts are stored as INTEGER; a count beyond `i32::MAX` cannot happen with a bounded retry
/// policy, but saturate rather than wrap.
fn attempts_to_db(attempts: u32) -> i32 {
    i32::try_from(attempts).unwrap_or(i32::MAX)
}

fn attempts_from_db(attempts: i32) -> u32 {
    u32::try_from(attempts).unwrap_or(0)
}

impl BusDatabase for Postgres {
    fn statements(schema: Option<&str>) -> BusSql {
        let t = Tables::new(schema);
        BusSql {
            load_position: safe(format!(
                "SELECT position FROM {} WHERE consumer = $1",
                t.positions
            )),
            save_position: safe(format!(
                "INSERT INTO {p} AS c (consumer, position) VALUES ($1, $2) \
                 ON CONFLICT (consumer) DO UPDATE \
                 SET position = GREATEST(c.position, EXCLUDED.position), updated_at = now()",
                p = t.positions
            )),
            load_checkpoint: safe(format!(
                "SELECT position FROM {} WHERE relay = $1",
                t.checkpoints
            )),
            save_checkpoint: safe(format!(
                "INSERT INTO {c} AS r (relay, position) VALUES ($1, $2) \
                 ON CONFLICT (relay) DO UPDATE \
                 SET position = GREATEST(r.position, EXCLUDED.position), updated_at = now()",
                c = t.checkpoints
            )),
            record_processed: safe(format!(
                "INSERT INTO {} (consumer, event_id) SELECT $1, unnest($2::uuid[]) \
                 ON CONFLICT DO NOTHING RETURNING event_id",
                t.processed
            )),
            is_processed: safe(format!(
                "SELECT 1 FROM {} WHERE consumer = $1 AND event_id = $2",
                t.processed
            )),
            processed_ids: safe(format!(
                "SELECT event_id FROM {} WHERE consumer = $1",
                t.processed
            )),
            insert_dead_letter: safe(format!(
                "INSERT INTO {} (consumer, position, event_id, stream_id, event_type, attempts, \
                     reason, payload) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (consumer, position) DO NOTHING",
                t.dead_letters
            )),
            dead_letters: safe(format!(
                "SELECT consumer, position, event_id, stream_id, event_type, attempts, reason, \
                     payload \
                 FROM {} WHERE consumer = $1 ORDER BY id",
                t.dead_letters
            )),
        }
    }

    async fn begin_batch(pool: &PgPool) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        pool.begin().await
    }

    async fn migrate(pool: &PgPool, schema: Option<&str>) -> Result<(), BusError> {
        let mut migrator = sqlx::migrate!("./migrations/postgres");
        let Some(schema) = schema else {
            migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
            migrator.run(pool).await?;
            return Ok(());
        };
        migrator.create_schema(format!("\"{schema}\""));
        migrator.dangerous_set_table_name(format!("\"{schema}\".{MIGRATIONS_TABLE}"));
        // The migration SQL uses unqualified names resolved through search_path: run it on a
        // one-connection pool whose connections start in the schema, keeping that setting
        // away from the service's pool.
        let options = (*pool.connect_options())
            .clone()
            .options([("search_path", format!("\"{schema}\""))]);
        let migration_pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await?;
        let result = migrator.run(&migration_pool).await;
        migration_pool.close().await;
        Ok(result?)
    }

    async fn load_consumer_position(
        sql: &BusSql,
        conn: &mut PgConnection,
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
        conn: &mut PgConnection,
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

    async fn load_relay_checkpoint(
        sql: &BusSql,
        conn: &mut PgConnection,
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
        conn: &mut PgConnection,
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
        conn: &mut PgConnection,
        consumer: &str,
        event_ids: &[Uuid],
    ) -> Result<HashSet<Uuid>, sqlx::Error> {
        if event_ids.is_empty() {
            return Ok(HashSet::new());
        }
        let new: Vec<Uuid> = sqlx::query_scalar(sql.record_processed.clone())
            .bind(consumer)
            .bind(event_ids)
            .fetch_all(&mut *conn)
            .await?;
        Ok(new.into_iter().collect())
    }

    async fn is_processed(
        sql: &BusSql,
        conn: &mut PgConnection,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        let row: Option<(i32,)> = sqlx::query_as(sql.is_processed.clone())
            .bind(consumer)
            .bind(event_id)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(row.is_some())
    }

    async fn processed_event_ids(
        sql: &BusSql,
        conn: &mut PgConnection,
        consumer: &str,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        let rows: Vec<(Uuid,)> = sqlx::query_as(sql.processed_ids.clone())
            .bind(consumer)
            .fetch_all(&mut *conn)
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    async fn insert_dead_letter(
        sql: &BusSql,
        conn: &mut PgConnection,
        letter: &DeadLetter,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(sql.insert_dead_letter.clone())
            .bind(&letter.consumer)
            .bind(letter.position)
            .bind(letter.event_id)
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
        conn: &mut PgConnection,
        consumer: &str,
    ) -> Result<Vec<DeadLetter>, sqlx::Error> {
        let rows = sqlx::query(sql.dead_letters.clone())
            .bind(consumer)
            .fetch_all(&mut *conn)
            .await?;
        rows.into_iter()
            .map(|row| {
                Ok(DeadLetter {
                    consumer: row.try_get("consumer")?,
                    position: row.try_get("position")?,
                    event_id: row.try_get("event_id")?,
                    stream_id: row.try_get("stream_id")?,
                    event_type: row.try_get("event_type")?,
                    attempts: attempts_from_db(row.try_get("attempts")?),
                    reason: row.try_get("reason")?,
                    payload: row.try_get("payload")?,
                })
            })
            .collect()
    }

    fn try_lease(
        pool: &Pool<Self>,
        key: &str,
    ) -> impl Future<Output = Result<Option<Lease<Self>>, sqlx::Error>> + Send {
        let options = pool.connect_options();
        let key = key.to_owned();
        async move {
            use sqlx::{ConnectOptions, Connection};
            let mut conn = options.connect().await?;
            let held: bool =
                sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
                    .bind(&key)
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
    }

    async fn keep_lease(lease: &mut Lease<Self>) -> Result<(), sqlx::Error> {
        if let Some(conn) = lease.conn.as_mut() {
            sqlx::query("SELECT 1").execute(conn).await?;
        }
        Ok(())
    }
}

/// SQLite stores event ids as hyphenated text: readable with the sqlite3 shell, and the same
/// form the envelope uses.
fn uuid_from_text(text: &str) -> Result<Uuid, sqlx::Error> {
    Uuid::parse_str(text).map_err(|err| sqlx::Error::Decode(Box::new(err)))
}

impl BusDatabase for Sqlite {
    fn statements(schema: Option<&str>) -> BusSql {
        let t = Tables::new(schema);
        let now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
        BusSql {
            load_position: safe(format!(
                "SELECT position FROM {} WHERE consumer = ?1",
                t.positions
            )),
            save_position: safe(format!(
                "INSERT INTO {} (consumer, position) VALUES (?1, ?2) \
                 ON CONFLICT (consumer) DO UPDATE \
                 SET position = MAX(position, excluded.position), updated_at = {now}",
                t.positions
            )),
            load_checkpoint: safe(format!(
                "SELECT position FROM {} WHERE relay = ?1",
                t.checkpoints
            )),
            save_checkpoint: safe(format!(
                "INSERT INTO {} (relay, position) VALUES (?1, ?2) \
                 ON CONFLICT (relay) DO UPDATE \
                 SET position = MAX(position, excluded.position), updated_at = {now}",
                t.checkpoints
            )),
            record_processed: safe(format!(
                "INSERT INTO {} (consumer, event_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                t.processed
            )),
            is_processed: safe(format!(
                "SELECT 1 FROM {} WHERE consumer = ?1 AND event_id = ?2",
                t.processed
            )),
            processed_ids: safe(format!(
                "SELECT event_id FROM {} WHERE consumer = ?1",
                t.processed
            )),
            insert_dead_letter: safe(format!(
                "INSERT INTO {} (consumer, position, event_id, stream_id, event_type, attempts, \
                     reason, payload) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                 ON CONFLICT (consumer, position) DO NOTHING",
                t.dead_letters
            )),
            dead_letters: safe(format!(
                "SELECT consumer, position, event_id, stream_id, event_type, attempts, reason, \
                     payload \
                 FROM {} WHERE consumer = ?1 ORDER BY id",
                t.dead_letters
            )),
        }
    }

    async fn begin_batch(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        pool.begin_with("BEGIN IMMEDIATE").await
    }

    async fn migrate(pool: &SqlitePool, _schema: Option<&str>) -> Result<(), BusError> {
        let mut migrator = sqlx::migrate!("./migrations/sqlite");
        migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
        migrator.run(pool).await?;
        Ok(())
    }

    async fn load_consumer_position(
        sql: &BusSql,
        conn: &mut SqliteConnection,
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
        conn: &mut SqliteConnection,
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

    async fn load_relay_checkpoint(
        sql: &BusSql,
        conn: &mut SqliteConnection,
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
        conn: &mut SqliteConnection,
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
        conn: &mut SqliteConnection,
        consumer: &str,
        event_ids: &[Uuid],
    ) -> Result<HashSet<Uuid>, sqlx::Error> {
        // One statement per id: SQLite runs in-process, so there is no round trip to save.
        let mut new = HashSet::with_capacity(event_ids.len());
        for event_id in event_ids {
            let done = sqlx::query(sql.record_processed.clone())
                .bind(consumer)
                .bind(event_id.hyphenated().to_string())
                .execute(&mut *conn)
                .await?;
            if done.rows_affected() == 1 {
                new.insert(*event_id);
            }
        }
        Ok(new)
    }

    async fn is_processed(
        sql: &BusSql,
        conn: &mut SqliteConnection,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        let row: Option<(i32,)> = sqlx::query_as(sql.is_processed.clone())
            .bind(consumer)
            .bind(event_id.hyphenated().to_string())
            .fetch_optional(&mut *conn)
            .await?;
        Ok(row.is_some())
    }

    async fn processed_event_ids(
        sql: &BusSql,
        conn: &mut SqliteConnection,
        consumer: &str,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        let rows: Vec<(String,)> = sqlx::query_as(sql.processed_ids.clone())
            .bind(consumer)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter().map(|(id,)| uuid_from_text(id)).collect()
    }

    async fn insert_dead_letter(
        sql: &BusSql,
        conn: &mut SqliteConnection,
        letter: &DeadLetter,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(sql.insert_dead_letter.clone())
            .bind(&letter.consumer)
            .bind(letter.position)
            .bind(letter.event_id.map(|id| id.hyphenated().to_string()))
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
        conn: &mut SqliteConnection,
        consumer: &str,
    ) -> Result<Vec<DeadLetter>, sqlx::Error> {
        let rows = sqlx::query(sql.dead_letters.clone())
            .bind(consumer)
            .fetch_all(&mut *conn)
            .await?;
        rows.into_iter()
            .map(|row| {
                let event_id: Option<String> = row.try_get("event_id")?;
                Ok(DeadLetter {
                    consumer: row.try_get("consumer")?,
                    position: row.try_get("position")?,
                    event_id: event_id.as_deref().map(uuid_from_text).transpose()?,
                    stream_id: row.try_get("stream_id")?,
                    event_type: row.try_get("event_type")?,
                    attempts: attempts_from_db(row.try_get("attempts")?),
                    reason: row.try_get("reason")?,
                    payload: row.try_get("payload")?,
                })
            })
            .collect()
    }

    async fn try_lease(_pool: &Pool<Self>, _key: &str) -> Result<Option<Lease<Self>>, sqlx::Error> {
        // One process owns an embedded database: nobody to share the work with.
        Ok(Some(Lease { conn: None }))
    }

    async fn keep_lease(_lease: &mut Lease<Self>) -> Result<(), sqlx::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_statements_are_schema_qualified() {
        let sql = Postgres::statements(Some("auth"));
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

    #[tokio::test]
    async fn schema_names_are_validated() {
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://localhost/none")
            .unwrap();
        assert!(BusDb::postgres(pool.clone(), "auth_1").is_ok());
        for bad in ["", "Auth", "1a", "a-b", "a\"b"] {
            assert!(BusDb::postgres(pool.clone(), bad).is_err(), "{bad:?}");
        }
    }
}
