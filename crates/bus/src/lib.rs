//! # fairdeal event bus
//!
//! Moves committed events out of the event store to the services that react to them, with
//! exactly-once effects.
//!
//! Two deployments, one consumer contract:
//!
//! - **PostgreSQL + NATS JetStream** (production). The store's `events` table is the
//!   transactional outbox. A [`Relay`] tails it (`read_all`) and publishes every event, in
//!   global-position order, to a JetStream stream ([`ensure_streams`]): `Nats-Msg-Id` = event
//!   id, trace context and event type in headers, the encoded envelope as payload, and a
//!   checkpoint in the database written only after the acks. [`JetStreamConsumer`]s are
//!   durable pull consumers, acknowledged once per applied batch.
//! - **Embedded** (the single-binary default over SQLite). An [`EmbeddedBus`] wraps the store
//!   so appends wake its [`EmbeddedConsumer`]s, which tail the log directly.
//!
//! Either way a consumer runs a [`Handler`] inside a database transaction that also records
//! the event id and the consumer's position, so a redelivered event is acknowledged without
//! being applied twice (an embedded consumer whose handler [`Handler::settles_by_position`]
//! records no ids: its position alone keeps a second instance from applying a batch).
//! Transient failures are retried with backoff ([`RetryPolicy`]);
//! permanent ones, and transient ones past the last attempt, become [`DeadLetter`]s (table,
//! dead-letter subject or channel, and an error log line), never silently dropped. Each event
//! is handled in a span whose OpenTelemetry parent is the trace that appended it (through the
//! relay's publish span on JetStream).
//!
//! An event NATS refuses for good (above the server's `max_payload` or the stream's maximum
//! message size) never blocks the relay: it is withheld, with an ERROR line and a metric, and
//! a small placeholder takes its place, which consumers dead-letter (see [`Relay`]). The relay,
//! the consumers and the store wrapper record OpenTelemetry metrics (lags, published,
//! withheld, dead letters, appends), listed in docs/operations.md.
//!
//! Everything stops on a `CancellationToken`, finishing the batch in hand first.
//!
//! Services do not wire these pieces by hand: `fairdeal_platform::Bus` does it, one call for
//! the relay and one per consumer (see docs/services.md). Underneath, on PostgreSQL +
//! JetStream (run the store's migrations, then the bus's; streams and the durable consumer
//! are created idempotently at start):
//!
//! ```no_run
//! # use fairdeal_bus::{Handler, HandlerError};
//! # struct Ratings;
//! # impl Handler<sqlx::Postgres> for Ratings {
//! #     async fn handle(
//! #         &self,
//! #         _: &fairdeal_eventstore::RecordedEvent,
//! #         _: &mut sqlx::Transaction<'_, sqlx::Postgres>,
//! #     ) -> Result<(), HandlerError> {
//! #         Ok(())
//! #     }
//! # }
//! # async fn wire() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use fairdeal_bus::{
//!     AppendSignal, BusDb, JetStreamConfig, JetStreamConsumer, JetStreamConsumerConfig,
//!     NotifyingEventStore, Relay, RelayConfig, ensure_streams,
//! };
//! use fairdeal_eventstore::{EventStore, PgEventStore};
//! use tokio_util::sync::CancellationToken;
//!
//! let pool = fairdeal_db::postgres_pool_options()
//!     .connect("postgres://postgres@127.0.0.1/fairdeal").await?;
//! let store = PgEventStore::new(pool.clone(), "rating")?;
//! store.migrate().await?;
//! let db = BusDb::postgres(pool, "rating")?;
//! db.migrate().await?;
//! let js = async_nats::jetstream::new(async_nats::connect("127.0.0.1:4222").await?);
//! let streams = JetStreamConfig::new("fairdeal.rating")?;
//! ensure_streams(&js, &streams).await?;
//!
//! // The service appends through `events`, which wakes the relay at once.
//! let signal = AppendSignal::new();
//! let events: Arc<dyn EventStore> =
//!     Arc::new(NotifyingEventStore::new(Arc::new(store.clone()), signal.clone()));
//!
//! let shutdown = CancellationToken::new();
//! let relay = Relay::new(Arc::new(store), db.clone(), js.clone(), streams.clone(),
//!     RelayConfig::new("rating"))?
//!     .with_waiter(signal.subscribe());
//! let relay = tokio::spawn(relay.run(shutdown.clone()));
//! let consumer = JetStreamConsumer::new(js, streams, db, Arc::new(Ratings),
//!     JetStreamConsumerConfig::new("ratings"))?;
//! let consumer = tokio::spawn(consumer.run(shutdown.clone()));
//!
//! // On SIGTERM: both finish what they hold, then return.
//! shutdown.cancel();
//! relay.await??;
//! consumer.await??;
//! # let _ = events;
//! # Ok(())
//! # }
//! ```
//!
//! The embedded default, on one SQLite file:
//!
//! ```no_run
//! # use fairdeal_bus::{Handler, HandlerError};
//! # struct Ratings;
//! # impl Handler<sqlx::Sqlite> for Ratings {
//! #     async fn handle(
//! #         &self,
//! #         _: &fairdeal_eventstore::RecordedEvent,
//! #         _: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
//! #     ) -> Result<(), HandlerError> {
//! #         Ok(())
//! #     }
//! # }
//! # async fn wire() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use fairdeal_bus::{BusDb, EmbeddedBus, EmbeddedConsumerConfig};
//! use fairdeal_eventstore::SqliteEventStore;
//! use tokio_util::sync::CancellationToken;
//!
//! let store = SqliteEventStore::open("fairdeal.db").await?;
//! let db = BusDb::sqlite(store.pool().clone());
//! db.migrate().await?;
//! let bus = EmbeddedBus::new(Arc::new(store), db);
//! let events = bus.store(); // append through this one: it wakes the consumers
//! let shutdown = CancellationToken::new();
//! let consumer = bus.consumer(Arc::new(Ratings), EmbeddedConsumerConfig::new("ratings"))?;
//! tokio::spawn(consumer.run(shutdown.clone()));
//! # let _ = events;
//! # Ok(())
//! # }
//! ```
//!
//! Layout:
//! - [`handler`]: the [`Handler`] trait and [`RetryPolicy`].
//! - [`error`]: [`BusError`] and [`HandlerError`].
//! - [`db`]: the bus tables ([`BusDb`]: migrations, positions, processed ids, dead letters)
//!   and their statements per backend ([`BusDatabase`]: PostgreSQL and SQLite).
//! - `apply` (private): the consumer core both backends share.
//! - [`jetstream`]: subjects and headers, stream setup, the [`Relay`], [`JetStreamConsumer`].
//! - [`embedded`]: [`EmbeddedBus`] and [`EmbeddedConsumer`].
//! - [`prune`]: keeping the processed-ids table bounded.
//! - [`signal`]: append wake-ups ([`AppendSignal`], [`NotifyingEventStore`]).
//! - [`trace`]: W3C trace context from the envelope to the handling span.
#![forbid(unsafe_code)]

mod apply;
pub mod db;
pub mod embedded;
pub mod error;
pub mod handler;
pub mod jetstream;
pub mod prune;
mod restart;
pub mod signal;
pub mod trace;

pub use db::{BusDatabase, BusDb, DeadLetter, Lease, MIGRATIONS_TABLE, Redrive, StoredDeadLetter};
pub use embedded::{EmbeddedBus, EmbeddedConsumer, EmbeddedConsumerConfig};
pub use error::{BoxError, BusError, HandlerError};
pub use handler::{Handler, RetryPolicy};
pub use jetstream::{
    JetStreamConfig, JetStreamConsumer, JetStreamConsumerConfig, MESSAGE_MARGIN_BYTES,
    MIN_MAX_PAYLOAD, Relay, RelayConfig, check_max_payload, ensure_streams,
};
pub use signal::{
    AppendSignal, AppendWaiter, Appending, NotifyingEventStore, Recheck, StoreRead, StreamWaiter,
    Wake,
};
