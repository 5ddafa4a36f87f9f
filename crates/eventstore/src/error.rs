//! [`StoreError`]: every way an event-store call fails.

use crate::version::ExpectedVersion;
use fairdeal_event::{EventError, StreamId};
use uuid::Uuid;

/// An event-store failure.
///
/// Callers match on [`StoreError::Conflict`] (map it to gRPC `Aborted` and retry with a fresh
/// read) and treat [`StoreError::Integrity`] as an alarm: stored data no longer verifies.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Optimistic concurrency: the stream's version was not the expected one. Nothing was
    /// written.
    #[error("version conflict on {stream_id}: expected {expected}, stream is at version {actual}")]
    Conflict {
        /// The stream appended to.
        stream_id: StreamId,
        /// What the appender expected.
        expected: ExpectedVersion,
        /// The stream's last version when the conflict was seen (0: no stream).
        actual: u64,
    },
    /// The append's [`crate::Fence`] did not hold when it was to be written: this process
    /// does not hold the lease of the stream's partition (it lost it, or never had it), or
    /// it holds none at all. Nothing was written; the partition's owner may write.
    #[error(
        "{stream_id} is in partition {partition}, whose lease this replica does not hold \
         (another replica owns it, or it is changing hands): nothing was written; retry"
    )]
    Fenced {
        /// The stream appended to.
        stream_id: StreamId,
        /// Its partition.
        partition: u32,
    },
    /// An event with this id is already stored (in any stream). Nothing was written.
    #[error("duplicate event id {event_id}")]
    DuplicateEventId {
        /// The id already present.
        event_id: Uuid,
    },
    /// An event to append breaks the envelope rules (bad type, trace context, time...).
    #[error("invalid event: {0}")]
    InvalidEvent(#[source] EventError),
    /// A stored event does not verify (hash mismatch, broken chain, undecodable column):
    /// the log was altered outside the store, or is corrupt.
    #[error("integrity failure at global position {position}: {source}")]
    Integrity {
        /// Global position of the offending row.
        position: u64,
        /// What does not verify.
        #[source]
        source: EventError,
    },
    /// A stored number that cannot be what its column holds (a negative version or
    /// position): the table was altered outside the store.
    #[error(transparent)]
    StoredValue(fairdeal_db::StoredValueError),
    /// A call argument is out of range (e.g. more events in one transaction than a position
    /// can number).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The database failed (connection, I/O, constraint not covered above). Converting a
    /// lost connection's error notes it (`fairdeal_db::health`), so the pools ping their idle
    /// connections before the next use instead of failing another request with a dead one.
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// Running the store's migrations failed.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        fairdeal_db::health::note_if_lost(&error);
        Self::Database(error)
    }
}

impl StoreError {
    /// Whether this is a version conflict (the caller may re-read and retry).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }
}
