//! What both backends share: turning rows into verified events, column encodings, and the
//! checks around a read.

use crate::error::StoreError;
use fairdeal_event::event::{micros_since_epoch, timestamp_from_micros};
use fairdeal_event::{ChainVerifier, Envelope, EventError, GENESIS_PREV_HASH, RecordedEvent};
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// One `events` row as the columns hold it.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) position: i64,
    pub(crate) event_id: Uuid,
    pub(crate) stream_id: String,
    pub(crate) version: i64,
    pub(crate) event_type: String,
    pub(crate) occurred_at_us: i64,
    pub(crate) correlation_id: String,
    pub(crate) causation_id: String,
    /// JSON object of strings.
    pub(crate) trace_context: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) prev_hash: Vec<u8>,
    pub(crate) hash: Vec<u8>,
}

/// The column list both backends select, in [`Row`] order.
pub(crate) const COLUMNS: &str = "position, event_id, stream_id, version, event_type, \
     occurred_at_us, correlation_id, causation_id, trace_context, payload, prev_hash, hash";

impl Row {
    /// Rebuilds the envelope from the columns and verifies it (every field and the hash):
    /// stored rows are never trusted.
    pub(crate) fn into_event(self) -> Result<RecordedEvent, StoreError> {
        let position = stored_u64(self.position, "events.position")?;
        let integrity = |source: EventError| StoreError::Integrity { position, source };
        let trace_context: BTreeMap<String, String> = serde_json::from_str(&self.trace_context)
            .map_err(|e| integrity(EventError::Decode(format!("trace_context column: {e}"))))?;
        let envelope = Envelope {
            event_id: self.event_id.hyphenated().to_string(),
            stream_id: self.stream_id,
            // 0 is rejected by the envelope validation below.
            stream_version: stored_u64(self.version, "events.version")?,
            event_type: self.event_type,
            occurred_at: Some(timestamp_from_micros(self.occurred_at_us)),
            correlation_id: self.correlation_id,
            causation_id: self.causation_id,
            trace_context,
            payload: self.payload,
            prev_hash: self.prev_hash,
            hash: self.hash,
        };
        let event = RecordedEvent::from_envelope(position, envelope).map_err(integrity)?;
        if event.version == 1 && event.prev_hash != GENESIS_PREV_HASH {
            return Err(integrity(EventError::BrokenChain {
                stream_id: event.stream_id.into_string(),
                version: 1,
                reason: "the first event's prev_hash is not 32 zero bytes".into(),
            }));
        }
        Ok(event)
    }
}

/// The trace context as the JSON text stored in the `trace_context` column.
pub(crate) fn trace_context_json(trace: &BTreeMap<String, String>) -> String {
    // Serialising a map of strings cannot fail; the fallback keeps this total.
    serde_json::to_string(trace).unwrap_or_else(|_| "{}".to_owned())
}

/// The stored form of a sealed event's time (already validated by `seal`).
pub(crate) fn occurred_at_us(event: &RecordedEvent) -> Result<i64, StoreError> {
    micros_since_epoch(event.occurred_at).map_err(StoreError::InvalidEvent)
}

/// Converts a caller's version or position to the signed column type.
pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::InvalidArgument(format!("{what} {value} too large")))
}

/// A stored non-negative number (version, position, count) as `u64`; a negative one is
/// [`StoreError::StoredValue`] naming the column.
pub(crate) fn stored_u64(value: i64, column: &'static str) -> Result<u64, StoreError> {
    fairdeal_db::stored_u64(value, column).map_err(StoreError::StoredValue)
}

/// Converts a caller's limit to the signed SQL `LIMIT` type.
pub(crate) fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// Rejects a batch that names the same event id twice (the database would reject it too,
/// but only after doing the work, and without saying which id).
pub(crate) fn check_distinct_ids(events: &[fairdeal_event::NewEvent]) -> Result<(), StoreError> {
    let mut seen = HashSet::with_capacity(events.len());
    for event in events {
        if !seen.insert(event.event_id) {
            return Err(StoreError::DuplicateEventId {
                event_id: event.event_id,
            });
        }
    }
    Ok(())
}

/// Verifies the rows of one stream read from version `from_version`: `rows` may start with
/// the event just before `from_version` (fetched only to check the link), which is dropped.
pub(crate) fn verify_stream_rows(
    stream_id: &fairdeal_event::StreamId,
    from_version: u64,
    rows: Vec<Row>,
    limit: usize,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let mut verifier: Option<ChainVerifier> = None;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let event = row.into_event()?;
        let position = event.position;
        if verifier.is_none() && event.version != 1 && event.version + 1 != from_version {
            // Reading from version v fetches v - 1 first; any other first row means the
            // predecessor is missing from the log.
            return Err(StoreError::Integrity {
                position,
                source: EventError::BrokenChain {
                    stream_id: stream_id.as_str().to_owned(),
                    version: event.version,
                    reason: format!("version {} is missing", from_version.saturating_sub(1)),
                },
            });
        }
        let chain = verifier.get_or_insert_with(|| {
            if event.version == 1 {
                ChainVerifier::new(stream_id.clone())
            } else {
                // The first row is the predecessor (version from_version - 1), whose own hash
                // has just been verified; the rows after it must link to it.
                ChainVerifier::resume(stream_id.clone(), event.version - 1, event.prev_hash)
            }
        });
        chain
            .check(&event)
            .map_err(|source| StoreError::Integrity { position, source })?;
        if event.version >= from_version && out.len() < limit {
            out.push(event);
        }
    }
    Ok(out)
}

/// The hash an append links to: the stream head's stored hash, or 32 zero bytes for a new
/// stream. A stored hash of the wrong length (impossible past the column check) is an
/// integrity failure rather than a silent relink to the genesis value.
pub(crate) fn link_hash(
    stream_id: &fairdeal_event::StreamId,
    head: Option<(u64, &[u8])>,
) -> Result<fairdeal_event::Hash, StoreError> {
    match head {
        None => Ok(GENESIS_PREV_HASH),
        Some((version, bytes)) => {
            fairdeal_event::Hash::try_from(bytes).map_err(|_| StoreError::Integrity {
                position: 0,
                source: EventError::BrokenChain {
                    stream_id: stream_id.as_str().to_owned(),
                    version,
                    reason: format!("stored hash is {} bytes, not 32", bytes.len()),
                },
            })
        }
    }
}
