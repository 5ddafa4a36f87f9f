//! [`Db`]: a service's database on either backend, opened once from its [`DatabaseUrl`].
//!
//! - PostgreSQL: one pool whose connections start with `search_path` set to the service's
//!   [`Schema`], so the service's SQL names its tables unqualified, exactly as on SQLite.
//!   The pool carries the stale-transaction guard (see [`postgres_pool_options`]) and drops
//!   dead connections before handing them out ([`crate::health`]); its size is the shared
//!   part of the process's [`ConnectionBudget`]. Every PostgreSQL pool of the platform is
//!   built from here: [`postgres_pool_options`] and [`postgres_reader_pool_options`].
//! - SQLite: one pool on the file, with the settings the event store relies on (WAL,
//!   `synchronous = FULL`, a busy timeout, foreign keys): see [`sqlite_connect_options`].

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection as _, PgConnection, Row as _};

use crate::budget::ConnectionBudget;
use crate::health;
use crate::url::DatabaseUrl;

/// A PostgreSQL schema name: a lowercase SQL identifier (`[a-z_][a-z0-9_]*`, at most 63
/// bytes), so it can be spliced into SQL and `search_path` without quoting surprises.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Schema(Arc<str>);

/// A name that is not a lowercase SQL identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("schema {0:?} is not a lowercase SQL identifier ([a-z_][a-z0-9_]*, at most 63 bytes)")]
pub struct BadSchema(pub String);

impl Schema {
    /// Validates `name`.
    pub fn new(name: &str) -> Result<Self, BadSchema> {
        let mut bytes = name.bytes();
        let valid = name.len() <= 63
            && bytes
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if valid {
            Ok(Schema(name.into()))
        } else {
            let shown: String = name.chars().take(64).collect();
            Err(BadSchema(shown))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a quoted SQL identifier (`"name"`).
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

impl FromStr for Schema {
    type Err = BadSchema;
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Schema::new(name)
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// Why a database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Connecting failed (server down, authentication, file not writable). The URL is
    /// shown redacted.
    #[error("cannot open the database {url}: {source}")]
    Connect {
        /// The database, credentials redacted.
        url: String,
        /// The driver's error.
        source: sqlx::Error,
    },
}

/// A service's database: the pool of its backend (and, on PostgreSQL, its schema).
///
/// Cheap to clone. The event store, the bus tables and the service's own tables all live
/// here, so a consumer's effects and its bookkeeping commit in one transaction.
#[derive(Debug, Clone)]
pub enum Db {
    /// PostgreSQL: every connection's `search_path` is `schema`.
    Postgres {
        /// The pool.
        pool: PgPool,
        /// The service's schema.
        schema: Schema,
    },
    /// SQLite (the embedded default).
    Sqlite {
        /// The pool.
        pool: SqlitePool,
    },
}

/// The two backends, as a value (see [`crate::Backend::KIND`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// PostgreSQL.
    Postgres,
    /// SQLite.
    Sqlite,
}

impl Db {
    /// Opens `url` with the default [`ConnectionBudget`]: see [`Db::open_with_budget`].
    pub async fn open(url: &DatabaseUrl, schema: &Schema) -> Result<Db, OpenError> {
        Self::open_with_budget(url, schema, ConnectionBudget::default()).await
    }

    /// Opens `url`; on PostgreSQL, connections start in `schema` (created by the first
    /// migration run, see [`Db::migrate`](crate::Migrations)) and the pool holds at most
    /// `budget.shared()` of them (the event store takes the readers' and writers' shares:
    /// `fairdeal_eventstore::AnyEventStore::open_with_budget`). SQLite ignores the budget:
    /// a file has no server to run out of sessions, and keeps [`sqlite_pool_options`].
    /// Nothing is migrated here.
    pub async fn open_with_budget(
        url: &DatabaseUrl,
        schema: &Schema,
        budget: ConnectionBudget,
    ) -> Result<Db, OpenError> {
        let failed = |source| OpenError::Connect {
            url: url.to_string(),
            source,
        };
        match url {
            DatabaseUrl::Postgres(pg) => {
                let options: PgConnectOptions = pg.expose_secret().parse().map_err(failed)?;
                let pool = postgres_pool_options()
                    .max_connections(budget.shared())
                    .connect_with(in_schema(options, schema))
                    .await
                    .map_err(failed)?;
                Ok(Db::Postgres {
                    pool,
                    schema: schema.clone(),
                })
            }
            DatabaseUrl::Sqlite(path) => {
                let pool = sqlite_pool_options()
                    .connect_with(sqlite_connect_options(path))
                    .await
                    .map_err(failed)?;
                Ok(Db::Sqlite { pool })
            }
        }
    }

    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        match self {
            Db::Postgres { .. } => BackendKind::Postgres,
            Db::Sqlite { .. } => BackendKind::Sqlite,
        }
    }

    /// The PostgreSQL schema (`None` on SQLite).
    pub fn schema(&self) -> Option<&Schema> {
        match self {
            Db::Postgres { schema, .. } => Some(schema),
            Db::Sqlite { .. } => None,
        }
    }

    /// Makes content a committed transaction erased unrecoverable from the database's files,
    /// as far as the backend allows; call it after committing an erasure (a removed chat
    /// line, a deleted account).
    ///
    /// SQLite: deleted and overwritten content is zeroed by `secure_delete` (set on every
    /// connection), but the WAL file still holds the pages as they were before until a
    /// checkpoint resets it: this runs `PRAGMA wal_checkpoint(TRUNCATE)`, which copies the
    /// new pages into the database file and truncates the WAL. A reader holding an old
    /// snapshot can keep the checkpoint from completing; the next call (or SQLite's own
    /// checkpoints) finishes it.
    ///
    /// PostgreSQL: nothing. The dead row versions stay in the table's pages until
    /// (auto)vacuum reclaims them and in the WAL until it is recycled; no SQL reads them
    /// back, and `pg_dump` and every query see only the erased row.
    pub async fn scrub(&self) -> Result<(), sqlx::Error> {
        match self {
            Db::Postgres { .. } => Ok(()),
            Db::Sqlite { pool } => sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await
                .map(|_| ()),
        }
    }

    /// Closes the pool (waits for checked-out connections to come back).
    pub async fn close(&self) {
        match self {
            Db::Postgres { pool, .. } => pool.close().await,
            Db::Sqlite { pool } => pool.close().await,
        }
    }
}

/// `options` whose sessions start with `search_path` = `schema`.
pub fn in_schema(options: PgConnectOptions, schema: &Schema) -> PgConnectOptions {
    options.options([("search_path", schema.quoted())])
}

/// How long a caller waits for a pooled PostgreSQL connection when every one is checked out
/// (back-pressure) before its request fails.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Pool settings for PostgreSQL: the default budget's shared share of connections (callers
/// set their own with `max_connections`), bounded waits, no ping before every checkout (it
/// doubles the cost of a one-row commit) but dead connections dropped before checkout
/// ([`crate::health`]), and the stale-transaction guard.
///
/// The guard: sqlx 0.9 can hand back a connection still inside a transaction, when a
/// future was cancelled in `begin()` after `BEGIN` was sent but before sqlx counted it.
/// An autocommit write on such a connection reports success and never commits. Every
/// connection returned to the pool is therefore checked (one round trip, after the caller
/// has moved on): in an autocommit statement `transaction_timestamp()` equals
/// `statement_timestamp()`; inside an older transaction it does not, and in an aborted one
/// the statement fails with SQLSTATE 25P02. Such a connection is closed, which makes the
/// server roll the stale transaction back, and a warning is logged. Every service query on
/// the pool is safe this way, not only the event store's. A check that finds the
/// connection lost notes it ([`health::note_lost_connection`]), so its idle siblings are
/// pinged before their next use instead of failing it.
pub fn postgres_pool_options() -> PgPoolOptions {
    with_dead_connection_check(PgPoolOptions::new())
        .max_connections(ConnectionBudget::default().shared())
        .after_release(|conn, _meta| {
            Box::pin(async move {
                match in_stale_transaction(conn).await {
                    Ok(false) => Ok(true),
                    Ok(true) => {
                        tracing::warn!(
                            "a pooled PostgreSQL connection came back inside a transaction; closing it"
                        );
                        Ok(false)
                    }
                    Err(error) => {
                        health::note_if_lost(&error);
                        Err(error)
                    }
                }
            })
        })
}

/// Pool settings for the event store's readers' pool: the default budget's readers' share
/// (callers set their own), the same waits and dead-connection check as
/// [`postgres_pool_options`], and no release check, because nothing but one autocommit
/// `SELECT` at a time ever runs there (so no connection can come back inside a transaction).
/// Its users note a lost connection themselves ([`health::note_if_lost`]).
pub fn postgres_reader_pool_options() -> PgPoolOptions {
    with_dead_connection_check(PgPoolOptions::new())
        .max_connections(ConnectionBudget::default().readers())
}

/// `options` with bounded waits and no ping before every checkout, except of a connection
/// [`health::is_suspect`] names: that one is pinged first and, if the ping fails, closed (the
/// pool then tries the next idle one, or opens a new one).
fn with_dead_connection_check(options: PgPoolOptions) -> PgPoolOptions {
    options
        .test_before_acquire(false)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if !health::is_suspect(meta.idle_for) {
                    return Ok(true);
                }
                match conn.ping().await {
                    Ok(()) => Ok(true),
                    Err(error) => {
                        health::note_lost_connection();
                        tracing::info!(
                            %error,
                            idle_ms = u64::try_from(meta.idle_for.as_millis()).unwrap_or(u64::MAX),
                            "closing a dead pooled PostgreSQL connection before use"
                        );
                        Ok(false)
                    }
                }
            })
        })
}

/// Whether `conn` is inside a transaction sqlx does not know about (see
/// [`postgres_pool_options`]). An error means the connection is unusable.
pub async fn in_stale_transaction(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    // The simple query protocol, on purpose: with the extended protocol (a prepared
    // statement) the implicit transaction starts at Bind and the statement clock at
    // Execute, so the two timestamps differ even in autocommit and every connection would
    // look stale (and be closed on release).
    let check =
        sqlx::raw_sql("SELECT transaction_timestamp() = statement_timestamp() AS autocommit")
            .fetch_one(&mut *conn)
            .await;
    match check {
        Ok(row) => Ok(!row.try_get::<bool, _>("autocommit")?),
        Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("25P02") => Ok(true),
        Err(error) => Err(error),
    }
}

/// Pool settings for SQLite: a few connections for readers (WAL lets them run beside the
/// one writer) and no ping before checkout.
pub fn sqlite_pool_options() -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(8)
        .test_before_acquire(false)
}

/// Connection settings for the SQLite file at `path`: created if missing, WAL (readers
/// never block the writer), `synchronous = FULL` (a committed write survives a power cut),
/// a 30 s busy timeout, foreign keys on, and `secure_delete` (deleted or overwritten
/// content is zeroed in the file rather than left in free space: erased personal content,
/// see [`Db::scrub`], must not be recoverable from the file).
pub fn sqlite_connect_options(path: impl AsRef<Path>) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true)
        .pragma("secure_delete", "ON")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn schema_names() {
        for ok in ["public", "auth", "_x", "tables_v2"] {
            assert!(Schema::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Auth", "1x", "a-b", "a\"b", &"a".repeat(64)] {
            assert!(Schema::new(bad).is_err(), "{bad}");
        }
        assert_eq!(Schema::new("auth").unwrap().quoted(), "\"auth\"");
    }

    #[tokio::test]
    async fn opens_a_sqlite_file() {
        let dir = tempfile::tempdir().unwrap();
        let url = DatabaseUrl::sqlite(dir.path().join("x.db"));
        let db = Db::open(&url, &Schema::new("ignored").unwrap())
            .await
            .unwrap();
        assert_eq!(db.kind(), BackendKind::Sqlite);
        assert!(db.schema().is_none());
        db.close().await;
    }
}
