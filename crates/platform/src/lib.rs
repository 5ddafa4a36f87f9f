//! # fairdeal-platform: the recipe every service follows
//!
//! The kit (`fairdeal-kit`) starts, configures, traces and serves a process; this crate is
//! the rest of what a service of the platform needs, one way per job (see
//! `docs/services.md` for the whole recipe, and services/dealing for the smallest real
//! example):
//!
//! - [`Storage::open`]: the database of `--database-url` (PostgreSQL in the service's schema,
//!   or the embedded SQLite file), its event store, the bus tables and the service's own
//!   migrations, and the append signal;
//! - [`Bus::start`]: the service's events to NATS JetStream through the outbox relay (or kept
//!   in the store for the in-process bus), woken by the append signal;
//!   [`Bus::spawn_consumer`]: another service's (or its own) events applied exactly once;
//! - [`Streams`]: the aggregate runner: load, decide, append with the expected version,
//!   bounded retries, one in-memory owner per stream so commands to one stream queue
//!   instead of conflicting;
//! - [`ownership`]: which replica owns each partition of a service's aggregates, through
//!   leases with fencing tokens in the service's PostgreSQL schema (the first part of
//!   issue 33; not yet used by a service);
//! - [`quota`]: per-key request quotas over a sliding window, in memory (embedded default)
//!   or in Redis (shared by replicas), for rate limits such as mails or chat messages;
//! - [`Deployment`]: the settings it reads (database, connection budget, bus), which the
//!   kit's `CommonConfig` implements, so this crate never links the kit;
//! - [`Shutdown`]: the handle background tasks hang on;
//! - [`SetupError`]: every way the storage or the bus fails to start, typed.
#![forbid(unsafe_code)]

pub mod aggregate;
pub mod bus;
pub mod error;
pub mod ownership;
pub mod quota;
pub mod settings;
pub mod shutdown;
pub mod storage;
pub mod wake;

pub use aggregate::{
    Aggregate, CorruptStream, Decision, Executed, Fencing, RunError, RunnerSettings, Snapshot,
    Streams, stream_of,
};
pub use bus::Bus;
pub use error::SetupError;
pub use settings::{BusSettings, Deployment, NatsServer};
pub use shutdown::Shutdown;
pub use storage::Storage;
