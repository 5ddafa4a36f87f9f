//! # fairdeal event envelope
//!
//! What an event *is*, independent of where it is stored or how it travels: the validated
//! types a service builds events from, the protobuf [`Envelope`] they are written as, and the
//! SHA-256 hash chain that makes every stream tamper-evident. Pure: no IO, no async; the only
//! impure calls are [`NewEvent::new`] reading the clock and drawing a UUIDv7.
//!
//! Layout:
//! - [`id`]: [`StreamId`] (e.g. `table-<uuid>`) and the event-type rules.
//! - [`event`]: [`NewEvent`] (what a service appends) and [`RecordedEvent`] (what a store
//!   returns), with conversions to and from the wire [`Envelope`].
//! - [`hash`]: the hash rule: [`canonical_bytes`] of an envelope and [`compute_hash`].
//! - [`chain`]: [`seal`] (turning a new event into the next link of a stream) and
//!   [`ChainVerifier`] (checking links while reading).
//! - [`error`]: [`EventError`], one typed error for every way an event can be invalid.
//!
//! The hash rule, normative for auditors in any language, is documented on the `Envelope`
//! message in `proto/fairdeal/event/v1/envelope.proto` and restated in [`hash`].
#![forbid(unsafe_code)]

pub mod chain;
pub mod error;
pub mod event;
pub mod hash;
pub mod id;

/// The most bytes an event's payload, correlation and causation ids and trace context may
/// hold together: with the fixed-size rest of the envelope and the relay's headers the
/// message stays far below NATS's default `max_payload` (1 MiB), so every stored event can be
/// relayed. Services bound their own fields well below this; the store refuses an event
/// above it ([`EventError::TooLarge`]).
pub const MAX_EVENT_BYTES: usize = 256 * 1024;

pub use chain::{ChainVerifier, seal};
pub use error::EventError;
pub use event::{NewEvent, RecordedEvent};
pub use fairdeal_proto::fairdeal::event::v1::Envelope;
pub use hash::{GENESIS_PREV_HASH, Hash, body_bytes, canonical_bytes, compute_hash};
pub use id::{StreamId, is_event_type, validate_event_type};
