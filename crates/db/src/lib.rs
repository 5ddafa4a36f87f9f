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
//! - [`migrate`]: [`Migrations`], a component's schema as one migration folder per backend;
//! - [`backend`]: the one pattern for code that runs on both: SQL written once, impls
//!   compiled per backend with [`for_each_backend!`], picked with [`on_db!`], differences
//!   listed in [`Backend`].
#![forbid(unsafe_code)]

pub mod backend;
pub mod migrate;
pub mod pool;
pub mod url;

pub use backend::Backend;
pub use migrate::Migrations;
pub use pool::{
    BackendKind, BadSchema, Db, OpenError, Schema, in_schema, in_stale_transaction,
    postgres_pool_options, sqlite_connect_options, sqlite_pool_options,
};
pub use url::{DatabaseUrl, DatabaseUrlError, PostgresUrl};

/// What the macros name; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use sqlx::{Postgres, Sqlite};
}
