//! Every way an event or an envelope can be invalid.

/// An event that cannot be stored, or an envelope that does not verify.
///
/// Messages name the offending field; payload bytes never appear in them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The stream id breaks the [`crate::StreamId`] rules.
    #[error("invalid stream id {value:?}: {reason}")]
    InvalidStreamId {
        /// The rejected id (truncated to 64 characters).
        value: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The event type breaks the [`crate::validate_event_type`] rules.
    #[error("invalid event type {value:?}: {reason}")]
    InvalidEventType {
        /// The rejected type (truncated to 64 characters).
        value: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A trace-context entry has an empty key or value (empty entries would make the
    /// canonical bytes ambiguous across protobuf implementations).
    #[error("invalid trace context entry {key:?}: keys and values must be non-empty")]
    InvalidTraceContext {
        /// The key of the offending entry.
        key: String,
    },
    /// The envelope's `event_id` is not a UUID in canonical lowercase hyphenated form.
    #[error("invalid event id {value:?}: expected a lowercase hyphenated UUID")]
    InvalidEventId {
        /// The rejected id (truncated to 64 characters).
        value: String,
    },
    /// The event's payload and other variable fields exceed [`crate::MAX_EVENT_BYTES`]: it
    /// could not be relayed (NATS refuses a message over its `max_payload`, 1 MiB by
    /// default), so it is refused at append rather than left to block the relay.
    #[error("event too large: {size} bytes of payload and metadata, at most {limit}")]
    TooLarge {
        /// The event's variable bytes.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A stream version of 0 (versions start at 1).
    #[error("invalid stream version 0 for stream {stream_id}: versions start at 1")]
    ZeroVersion {
        /// The stream concerned.
        stream_id: String,
    },
    /// `occurred_at` is missing, outside 0001-01-01..=9999-12-31, or not a whole number of
    /// microseconds.
    #[error("invalid occurred_at: {reason}")]
    InvalidOccurredAt {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `prev_hash` or `hash` is not 32 bytes long.
    #[error("invalid {field}: expected 32 bytes, got {len}")]
    InvalidHashLength {
        /// `"prev_hash"` or `"hash"`.
        field: &'static str,
        /// The length found.
        len: usize,
    },
    /// The stored hash is not `SHA-256(prev_hash || canonical bytes)`: the event was altered.
    #[error(
        "hash mismatch for {stream_id} version {version}: stored {stored}, computed {computed}"
    )]
    HashMismatch {
        /// The stream concerned.
        stream_id: String,
        /// The version whose hash does not verify.
        version: u64,
        /// The stored hash, hex.
        stored: String,
        /// The recomputed hash, hex.
        computed: String,
    },
    /// An event's `prev_hash` (or version) does not follow the event before it: an event
    /// was altered, removed or inserted.
    #[error("broken hash chain in {stream_id} at version {version}: {reason}")]
    BrokenChain {
        /// The stream concerned.
        stream_id: String,
        /// The version that does not link to its predecessor.
        version: u64,
        /// What does not match.
        reason: String,
    },
    /// The envelope bytes are not a valid protobuf `Envelope`.
    #[error("undecodable envelope: {0}")]
    Decode(String),
    /// [`crate::RecordedEvent::decode_payload`] was asked for a message type other than the
    /// event's type.
    #[error("payload type mismatch: event is {actual}, asked for {expected}")]
    PayloadTypeMismatch {
        /// The type asked for.
        expected: String,
        /// The event's type.
        actual: String,
    },
}

/// Cuts a user-supplied value to at most 64 characters for an error message.
pub(crate) fn clip(value: &str) -> String {
    value.chars().take(64).collect()
}
