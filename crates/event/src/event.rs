//! [`NewEvent`] (what a service appends) and [`RecordedEvent`] (what a store returns).

use crate::error::{EventError, clip};
use crate::hash::{Hash, compute_hash};
use crate::id::{StreamId, validate_event_type};
use fairdeal_proto::fairdeal::event::v1::Envelope;
use prost::Message;
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uuid::Uuid;

/// Earliest `occurred_at` accepted: 0001-01-01T00:00:00Z (the protobuf Timestamp range).
const MIN_SECONDS: i64 = -62_135_596_800;
/// Latest `occurred_at` accepted: 9999-12-31T23:59:59Z.
const MAX_SECONDS: i64 = 253_402_300_799;

/// An event a service wants to append; the store gives it its stream version, position and
/// hashes.
///
/// [`NewEvent::new`] fills the id (a fresh UUIDv7) and the time (now); the `with_*` methods
/// set the rest. Validation happens at append time ([`NewEvent::validate`]).
#[derive(Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// Unique id; consumers deduplicate on it. A UUIDv7 so ids sort by creation time.
    pub event_id: Uuid,
    /// What happened, conventionally the full protobuf name of the payload message.
    pub event_type: String,
    /// When it happened; stored with microsecond precision (finer parts are truncated).
    pub occurred_at: SystemTime,
    /// The game, table or request it belongs to; empty when none.
    pub correlation_id: String,
    /// The command or event that caused it; empty when none.
    pub causation_id: String,
    /// W3C trace context (`traceparent`, `tracestate`) of the request that produced it.
    pub trace_context: BTreeMap<String, String>,
    /// The encoded payload message.
    pub payload: Vec<u8>,
}

impl NewEvent {
    /// An event of `event_type` carrying `payload`, with a fresh UUIDv7 id, stamped now.
    pub fn new(event_type: impl Into<String>, payload: Vec<u8>) -> Self {
        Self {
            event_id: Uuid::now_v7(),
            event_type: event_type.into(),
            occurred_at: SystemTime::now(),
            correlation_id: String::new(),
            causation_id: String::new(),
            trace_context: BTreeMap::new(),
            payload,
        }
    }

    /// An event whose payload is `message`, typed by the message's full protobuf name.
    pub fn from_message<M: prost::Name>(message: &M) -> Self {
        Self::new(M::full_name(), message.encode_to_vec())
    }

    /// Replaces the generated id (e.g. to make a retried command idempotent).
    #[must_use]
    pub fn with_event_id(mut self, event_id: Uuid) -> Self {
        self.event_id = event_id;
        self
    }

    /// Replaces the time stamp.
    #[must_use]
    pub fn with_occurred_at(mut self, occurred_at: SystemTime) -> Self {
        self.occurred_at = occurred_at;
        self
    }

    /// Sets the correlation id.
    #[must_use]
    pub fn with_correlation_id(mut self, correlation_id: impl Into<String>) -> Self {
        self.correlation_id = correlation_id.into();
        self
    }

    /// Sets the causation id.
    #[must_use]
    pub fn with_causation_id(mut self, causation_id: impl Into<String>) -> Self {
        self.causation_id = causation_id.into();
        self
    }

    /// Sets the trace context. Entries with an empty value are dropped: W3C treats an empty
    /// `tracestate` as absent, and empty values are not allowed in the hashed envelope.
    #[must_use]
    pub fn with_trace_context(mut self, trace_context: BTreeMap<String, String>) -> Self {
        self.trace_context = trace_context
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .collect();
        self
    }

    /// Checks what an append must: the size ([`crate::MAX_EVENT_BYTES`]), the type and the
    /// trace context (the id and time need no check).
    pub fn validate(&self) -> Result<(), EventError> {
        let size = self.payload.len()
            + self.correlation_id.len()
            + self.causation_id.len()
            + self
                .trace_context
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>();
        if size > crate::MAX_EVENT_BYTES {
            return Err(EventError::TooLarge {
                size,
                limit: crate::MAX_EVENT_BYTES,
            });
        }
        validate_event_type(&self.event_type)?;
        validate_trace_context(&self.trace_context)?;
        micros_since_epoch(self.occurred_at)?;
        Ok(())
    }
}

impl fmt::Debug for NewEvent {
    // The payload is shown by length only: it can be large, and the Debug output of an event
    // should never be the place where a payload's contents leak into logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewEvent")
            .field("event_id", &self.event_id)
            .field("event_type", &self.event_type)
            .field("occurred_at", &self.occurred_at)
            .field("correlation_id", &self.correlation_id)
            .field("causation_id", &self.causation_id)
            .field("trace_context", &self.trace_context)
            .field("payload_len", &self.payload.len())
            .finish()
    }
}

/// An event as stored: a [`NewEvent`] plus its place in its stream, its place in the store's
/// global order and its hash-chain link.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordedEvent {
    /// Global position in the store that returned it: strictly increasing in `read_all`
    /// order, possibly with gaps; 0 for an event not read from a store.
    pub position: u64,
    /// Unique event id (UUIDv7).
    pub event_id: Uuid,
    /// The stream it belongs to.
    pub stream_id: StreamId,
    /// Its version in the stream: 1, 2, ... without gaps.
    pub version: u64,
    /// What happened.
    pub event_type: String,
    /// When it happened (whole microseconds).
    pub occurred_at: SystemTime,
    /// The game, table or request it belongs to; empty when none.
    pub correlation_id: String,
    /// The command or event that caused it; empty when none.
    pub causation_id: String,
    /// W3C trace context of the request that produced it.
    pub trace_context: BTreeMap<String, String>,
    /// The encoded payload message.
    pub payload: Vec<u8>,
    /// Hash of the previous event of the stream ([`crate::GENESIS_PREV_HASH`] for version 1).
    pub prev_hash: Hash,
    /// `SHA-256(prev_hash || canonical bytes)`.
    pub hash: Hash,
}

impl RecordedEvent {
    /// The wire envelope, `hash` included.
    pub fn to_envelope(&self) -> Envelope {
        let mut envelope = self.to_unhashed_envelope();
        envelope.hash = self.hash.to_vec();
        envelope
    }

    /// The envelope with `hash` empty: exactly what the canonical bytes encode.
    pub(crate) fn to_unhashed_envelope(&self) -> Envelope {
        Envelope {
            event_id: self.event_id.hyphenated().to_string(),
            stream_id: self.stream_id.as_str().to_owned(),
            stream_version: self.version,
            event_type: self.event_type.clone(),
            occurred_at: Some(timestamp_from_micros(system_time_micros_unchecked(
                self.occurred_at,
            ))),
            correlation_id: self.correlation_id.clone(),
            causation_id: self.causation_id.clone(),
            trace_context: self.trace_context.clone(),
            payload: self.payload.clone(),
            prev_hash: self.prev_hash.to_vec(),
            hash: Vec::new(),
        }
    }

    /// The protobuf encoding of [`RecordedEvent::to_envelope`], as published on the bus.
    pub fn encode_envelope(&self) -> Vec<u8> {
        self.to_envelope().encode_to_vec()
    }

    /// Parses and verifies an envelope: every field is validated and `hash` must equal
    /// `SHA-256(prev_hash || canonical bytes)`. `position` is the global position the
    /// envelope was read at (0 when unknown).
    pub fn from_envelope(position: u64, envelope: Envelope) -> Result<Self, EventError> {
        let event_id = parse_canonical_uuid(&envelope.event_id)?;
        let stream_id = StreamId::parse(envelope.stream_id.clone())?;
        if envelope.stream_version == 0 {
            return Err(EventError::ZeroVersion {
                stream_id: stream_id.into_string(),
            });
        }
        validate_event_type(&envelope.event_type)?;
        validate_trace_context(&envelope.trace_context)?;
        let occurred_at = match &envelope.occurred_at {
            Some(ts) => system_time_from_timestamp(ts)?,
            None => {
                return Err(EventError::InvalidOccurredAt { reason: "missing" });
            }
        };
        let prev_hash = hash_from_slice("prev_hash", &envelope.prev_hash)?;
        let hash = hash_from_slice("hash", &envelope.hash)?;
        let computed = compute_hash(&envelope);
        if computed != hash {
            return Err(EventError::HashMismatch {
                stream_id: stream_id.into_string(),
                version: envelope.stream_version,
                stored: hex::encode(hash),
                computed: hex::encode(computed),
            });
        }
        Ok(Self {
            position,
            event_id,
            stream_id,
            version: envelope.stream_version,
            event_type: envelope.event_type,
            occurred_at,
            correlation_id: envelope.correlation_id,
            causation_id: envelope.causation_id,
            trace_context: envelope.trace_context,
            payload: envelope.payload,
            prev_hash,
            hash,
        })
    }

    /// Decodes and verifies envelope bytes (see [`RecordedEvent::from_envelope`]).
    pub fn decode_envelope(position: u64, bytes: &[u8]) -> Result<Self, EventError> {
        let envelope = Envelope::decode(bytes).map_err(|e| EventError::Decode(e.to_string()))?;
        Self::from_envelope(position, envelope)
    }

    /// Recomputes the hash from the fields and compares it with [`RecordedEvent::hash`].
    pub fn verify_hash(&self) -> Result<(), EventError> {
        let computed = compute_hash(&self.to_unhashed_envelope());
        if computed == self.hash {
            Ok(())
        } else {
            Err(EventError::HashMismatch {
                stream_id: self.stream_id.as_str().to_owned(),
                version: self.version,
                stored: hex::encode(self.hash),
                computed: hex::encode(computed),
            })
        }
    }

    /// Whether the event is of type `M` (its type is `M`'s full protobuf name).
    pub fn is<M: prost::Name>(&self) -> bool {
        crate::is_event_type::<M>(&self.event_type)
    }

    /// Decodes the payload as `M`, checking first that the event is of type `M`.
    pub fn decode_payload<M: prost::Name + Default>(&self) -> Result<M, EventError> {
        if !self.is::<M>() {
            return Err(EventError::PayloadTypeMismatch {
                expected: M::full_name(),
                actual: self.event_type.clone(),
            });
        }
        M::decode(self.payload.as_slice()).map_err(|e| EventError::Decode(e.to_string()))
    }
}

impl fmt::Debug for RecordedEvent {
    // Payload by length only (see `NewEvent`'s Debug); hashes in hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordedEvent")
            .field("position", &self.position)
            .field("event_id", &self.event_id)
            .field("stream_id", &self.stream_id)
            .field("version", &self.version)
            .field("event_type", &self.event_type)
            .field("occurred_at", &self.occurred_at)
            .field("correlation_id", &self.correlation_id)
            .field("causation_id", &self.causation_id)
            .field("trace_context", &self.trace_context)
            .field("payload_len", &self.payload.len())
            .field("prev_hash", &hex::encode(self.prev_hash))
            .field("hash", &hex::encode(self.hash))
            .finish()
    }
}

/// Rejects empty trace-context keys and values.
pub(crate) fn validate_trace_context(trace: &BTreeMap<String, String>) -> Result<(), EventError> {
    match trace.iter().find(|(k, v)| k.is_empty() || v.is_empty()) {
        Some((key, _)) => Err(EventError::InvalidTraceContext { key: clip(key) }),
        None => Ok(()),
    }
}

/// Microseconds since the Unix epoch (negative before it), truncating finer precision;
/// an error outside 0001-01-01..=9999-12-31.
pub fn micros_since_epoch(time: SystemTime) -> Result<i64, EventError> {
    const OUT_OF_RANGE: EventError = EventError::InvalidOccurredAt {
        reason: "outside 0001-01-01..=9999-12-31",
    };
    let micros = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).map_err(|_| OUT_OF_RANGE)?,
        Err(before) => {
            // Truncation toward the past keeps `from_micros(to_micros(t)) <= t` on both sides
            // of the epoch, so sorting by time never flips.
            let d = before.duration();
            let whole = i64::try_from(d.as_micros()).map_err(|_| OUT_OF_RANGE)?;
            let partial = d.subsec_nanos() % 1000 != 0;
            -whole - i64::from(partial)
        }
    };
    let seconds = micros.div_euclid(1_000_000);
    if (MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        Ok(micros)
    } else {
        Err(OUT_OF_RANGE)
    }
}

/// The time `micros` microseconds after (or before, if negative) the Unix epoch.
pub fn system_time_from_micros(micros: i64) -> SystemTime {
    let magnitude = Duration::from_micros(micros.unsigned_abs());
    if micros >= 0 {
        UNIX_EPOCH + magnitude
    } else {
        UNIX_EPOCH - magnitude
    }
}

/// [`micros_since_epoch`] for a time already validated (sealed or read back): out-of-range
/// values cannot occur there, and saturating keeps this total anyway.
fn system_time_micros_unchecked(time: SystemTime) -> i64 {
    micros_since_epoch(time).unwrap_or(match time.duration_since(UNIX_EPOCH) {
        Ok(_) => MAX_SECONDS * 1_000_000,
        Err(_) => MIN_SECONDS * 1_000_000,
    })
}

/// The protobuf Timestamp of `micros` since the epoch (`nanos` always in 0..1e9).
pub fn timestamp_from_micros(micros: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: micros.div_euclid(1_000_000),
        // rem_euclid is in 0..1_000_000, so the product fits an i32.
        nanos: i32::try_from(micros.rem_euclid(1_000_000) * 1000).unwrap_or(0),
    }
}

fn system_time_from_timestamp(ts: &prost_types::Timestamp) -> Result<SystemTime, EventError> {
    if !(0..1_000_000_000).contains(&ts.nanos) || ts.nanos % 1000 != 0 {
        return Err(EventError::InvalidOccurredAt {
            reason: "nanos must be a whole number of microseconds in 0..1e9",
        });
    }
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&ts.seconds) {
        return Err(EventError::InvalidOccurredAt {
            reason: "outside 0001-01-01..=9999-12-31",
        });
    }
    // In range, so neither product overflows.
    Ok(system_time_from_micros(
        ts.seconds * 1_000_000 + i64::from(ts.nanos / 1000),
    ))
}

fn parse_canonical_uuid(value: &str) -> Result<Uuid, EventError> {
    match Uuid::try_parse(value) {
        Ok(id) if id.hyphenated().to_string() == value => Ok(id),
        _ => Err(EventError::InvalidEventId { value: clip(value) }),
    }
}

fn hash_from_slice(field: &'static str, bytes: &[u8]) -> Result<Hash, EventError> {
    Hash::try_from(bytes).map_err(|_| EventError::InvalidHashLength {
        field,
        len: bytes.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn debug_hides_the_payload() {
        let event = NewEvent::new("t.v1.X", b"secret-bytes".to_vec());
        let shown = format!("{event:?}");
        assert!(shown.contains("payload_len: 12"));
        assert!(!shown.contains("secret"));
    }

    #[test]
    fn empty_trace_values_are_dropped() {
        let trace = BTreeMap::from([
            ("traceparent".to_owned(), "00-ab-cd-01".to_owned()),
            ("tracestate".to_owned(), String::new()),
        ]);
        let event = NewEvent::new("t.v1.X", vec![]).with_trace_context(trace);
        assert_eq!(event.trace_context.len(), 1);
        assert!(event.validate().is_ok());
    }

    #[test]
    fn events_larger_than_the_bus_carries_are_refused() {
        let fits = NewEvent::new("t.v1.X", vec![0; crate::MAX_EVENT_BYTES]);
        assert!(fits.validate().is_ok());
        let over = NewEvent::new("t.v1.X", vec![0; crate::MAX_EVENT_BYTES - 3])
            .with_correlation_id("abcd");
        assert!(matches!(
            over.validate(),
            Err(EventError::TooLarge { size, limit }) if size == limit + 1
        ));
    }

    #[test]
    fn non_canonical_uuids_are_rejected() {
        let id = Uuid::now_v7();
        assert!(parse_canonical_uuid(&id.hyphenated().to_string()).is_ok());
        assert!(parse_canonical_uuid(&id.simple().to_string()).is_err());
        let upper = id.hyphenated().to_string().to_uppercase();
        assert!(parse_canonical_uuid(&upper).is_err());
    }

    #[test]
    fn time_range_limits() {
        assert!(micros_since_epoch(system_time_from_micros(MAX_SECONDS * 1_000_000)).is_ok());
        assert!(micros_since_epoch(UNIX_EPOCH + Duration::from_secs(300_000_000_000)).is_err());
        assert!(micros_since_epoch(UNIX_EPOCH - Duration::from_secs(70_000_000_000)).is_err());
    }

    proptest! {
        #[test]
        fn micros_round_trip(micros in (MIN_SECONDS * 1_000_000)..=(MAX_SECONDS * 1_000_000 + 999_999)) {
            let time = system_time_from_micros(micros);
            prop_assert_eq!(micros_since_epoch(time).unwrap(), micros);
            let ts = timestamp_from_micros(micros);
            prop_assert_eq!(system_time_from_timestamp(&ts).unwrap(), time);
        }

        #[test]
        fn truncation_never_moves_forward(micros in -10_000_000_000i64..10_000_000_000, extra in 0u32..1000) {
            let time = system_time_from_micros(micros) + Duration::from_nanos(u64::from(extra));
            let truncated = micros_since_epoch(time).unwrap();
            prop_assert!(system_time_from_micros(truncated) <= time);
            prop_assert!(time < system_time_from_micros(truncated + 1));
        }
    }
}
