//! # fairdeal event store
//!
//! The append-only, hash-chained event log every service writes its state changes to, behind
//! one dyn-compatible trait, [`EventStore`], with two backends:
//!
//! - [`postgres`] ([`PgEventStore`]): the store of record, one `events` table per service schema,
//!   append-only enforced by the database, gap-safe global positions (xid8 + snapshot xmin).
//! - [`sqlite`] ([`SqliteEventStore`]): the embedded default, one file, WAL, single writer.
//!
//! Layout:
//! - [`store`]: the trait and [`Appended`].
//! - [`version`]: [`ExpectedVersion`] (optimistic concurrency), taken by appends and named
//!   by conflicts.
//! - [`any`]: [`AnyEventStore`], the backend picked from a configured URL.
//! - [`error`]: the [`StoreError`] enum.
//! - [`fence`]: [`Fence`], the lease an append of a partitioned service must hold.
//! - `conformance` (feature `conformance`): the backend-independent test suite, with
//!   PostgreSQL and SQLite test backends, reused by other crates.
//! - The event types themselves ([`NewEvent`], [`RecordedEvent`], [`StreamId`], hashing) live
//!   in the pure `fairdeal-event` crate and are re-exported here.
#![forbid(unsafe_code)]

pub mod any;
pub mod batch;
mod codec;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod error;
pub mod fence;
pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod version;

pub use any::AnyEventStore;
pub use batch::AppendRequest;

/// The event store of each database backend, for code written once for both (with
/// `fairdeal_db::for_each_backend!`): `DB::Store` is [`PgEventStore`] or
/// [`SqliteEventStore`], whose `append_in_tx` take the backend's transaction.
pub trait EventBackend: fairdeal_db::Backend {
    /// The store on this backend.
    type Store: EventStore + Clone;
}

impl EventBackend for sqlx::Postgres {
    type Store = PgEventStore;
}

impl EventBackend for sqlx::Sqlite {
    type Store = SqliteEventStore;
}

/// The event store's schema, both backends (tracked in `_fairdeal_eventstore_migrations`).
pub static MIGRATIONS: fairdeal_db::Migrations = fairdeal_db::Migrations {
    name: "fairdeal_eventstore",
    postgres: sqlx::migrate!("./migrations/postgres"),
    sqlite: sqlx::migrate!("./migrations/sqlite"),
};
pub use error::StoreError;
pub use fairdeal_event::{
    ChainVerifier, Envelope, EventError, GENESIS_PREV_HASH, Hash, MAX_EVENT_BYTES, NewEvent,
    RecordedEvent, StreamId, is_event_type, seal,
};
pub use fence::Fence;
pub use postgres::PgEventStore;
pub use sqlite::SqliteEventStore;
pub use store::{Appended, EventStore};
pub use version::ExpectedVersion;
