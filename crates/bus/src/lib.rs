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
//!   durable pull consumers with explicit acks.
//! - **Embedded** (the single-binary default over SQLite). An [`EmbeddedBus`] wraps the store
//!   so appends wake its [`EmbeddedConsumer`]s, which tail the log directly.
//!
//! Either way a consumer runs a [`Handler`] inside a database transaction that also records
//! the event id and the consumer's position, so a redelivered event is acknowledged without
//! being applied twice. Transient failures are retried with backoff ([`RetryPolicy`]);
//! permanent ones, and transient ones past the last attempt, become [`DeadLetter`]s (table,
//! dead-letter subject or channel, and an error log line), never silently dropped. Each event
//! is handled in a span whose OpenTelemetry parent is the trace that appended it.
//!
//! Everything stops on a `CancellationToken`, finishing the batch in hand first.
//!
//! Layout:
//! - [`handler`]: the [`Handler`] trait and [`RetryPolicy`].
//! - [`error`]: [`BusError`] and [`HandlerError`].
//! - [`db`]: the bus tables ([`BusDb`]: migrations, positions, processed ids, dead letters)
//!   and their statements per backend ([`BusDatabase`]: PostgreSQL and SQLite).
//! - `apply` (private): the consumer core both backends share.
//! - [`jetstream`]: subjects and headers, stream setup, the [`Relay`], [`JetStreamConsumer`].
//! - [`embedded`]: [`EmbeddedBus`] and [`EmbeddedConsumer`].
//! - [`signal`]: append wake-ups ([`AppendSignal`], [`NotifyingEventStore`]).
//! - [`trace`]: W3C trace context from the envelope to the handling span.
#![forbid(unsafe_code)]

mod apply;
pub mod db;
pub mod embedded;
pub mod error;
pub mod handler;
pub mod jetstream;
pub mod signal;
pub mod trace;

pub use db::{BusDatabase, BusDb, DeadLetter, MIGRATIONS_TABLE};
pub use embedded::{EmbeddedBus, EmbeddedConsumer, EmbeddedConsumerConfig};
pub use error::{BoxError, BusError, HandlerError};
pub use handler::{Handler, RetryPolicy};
pub use jetstream::{
    JetStreamConfig, JetStreamConsumer, JetStreamConsumerConfig, Relay, RelayConfig, ensure_streams,
};
pub use signal::{AppendSignal, AppendWaiter, NotifyingEventStore};
