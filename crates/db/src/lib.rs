//! # fairdeal-db: one database, two backends
//!
//! Every service keeps its event log, the bus's bookkeeping and its own tables in one
//! database: PostgreSQL in production (one schema per service), a SQLite file on the
//! embedded default. This crate is how a service gets there, the same way every time:
//!
//! - [`url`]: [`DatabaseUrl`], the `--database-url` setting parsed once (errors name the
//!   problem and show the value redacted and shortened);
//! - [`pool`]: [`Db`], the opened pool of either backend: PostgreSQL connections start in
//!   the service's [`Schema`] and carry the stale-transaction guard; SQLite gets the
//!   settings the event store relies on;
//! - [`budget`]: [`ConnectionBudget`], the PostgreSQL sessions one process may hold and how
//!   its pools share them (the server is sized from the budgets: docs/deploy.md);
//! - [`health`]: dead connections (after a server restart) dropped before anyone is handed
//!   one;
//! - [`migrate`]: [`Migrations`], a component's schema as one migration folder per backend;
//! - [`backend`]: the one pattern for code that runs on both: SQL written once, impls
//!   compiled per backend with [`for_each_backend!`], picked with [`on_db!`], differences
//!   listed in [`Backend`].
#![forbid(unsafe_code)]

pub mod backend;
pub mod budget;
pub mod health;
pub mod migrate;
pub mod pool;
pub mod url;

pub use backend::Backend;
pub use budget::{BadBudget, BadWriters, ConnectionBudget};
pub use migrate::Migrations;
pub use pool::{
    ACQUIRE_TIMEOUT, BackendKind, BadSchema, Db, OpenError, Schema, in_schema,
    in_stale_transaction, postgres_pool_options, postgres_reader_pool_options,
    sqlite_connect_options, sqlite_pool_options,
};
pub use url::{DatabaseUrl, DatabaseUrlError, PostgresUrl};

/// What the macros name; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use sqlx::{Postgres, Sqlite};
}

/// A stored number that cannot be what its column holds (a negative position, version or
/// count): the row was altered outside the code that writes it. Never read as 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored {column} {value} is out of range")]
pub struct StoredValueError {
    /// The column (`table.column`) it was read from.
    pub column: &'static str,
    /// The value found.
    pub value: i64,
}

impl From<StoredValueError> for sqlx::Error {
    fn from(error: StoredValueError) -> Self {
        sqlx::Error::ColumnDecode {
            index: error.column.to_owned(),
            source: Box::new(error),
        }
    }
}

/// A stored non-negative integer as `u64`.
pub fn stored_u64(value: i64, column: &'static str) -> Result<u64, StoredValueError> {
    u64::try_from(value).map_err(|_| StoredValueError { column, value })
}

/// A stored non-negative integer as `u32`.
pub fn stored_u32(value: i64, column: &'static str) -> Result<u32, StoredValueError> {
    u32::try_from(value).map_err(|_| StoredValueError { column, value })
}

#[cfg(test)]
mod stored_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn stored_values_out_of_range_name_the_column() {
        assert_eq!(stored_u64(7, "t.c").unwrap(), 7);
        let error = stored_u64(-1, "events.version").unwrap_err();
        assert_eq!(
            error.to_string(),
            "stored events.version -1 is out of range"
        );
        assert!(stored_u32(i64::from(u32::MAX) + 1, "t.attempts").is_err());
        let as_sqlx: sqlx::Error = error.into();
        assert!(as_sqlx.to_string().contains("events.version"), "{as_sqlx}");
    }
}
