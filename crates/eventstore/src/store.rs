//! The [`EventStore`] trait and the result of an append ([`Appended`]).

use crate::error::StoreError;
use crate::fence::Fence;
use crate::version::ExpectedVersion;
use async_trait::async_trait;
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use std::fmt;

/// The result of a successful append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The stream's last version after the append (unchanged for an empty append); pass it
    /// as `ExpectedVersion::Exact` to append again.
    pub version: u64,
    /// The events as stored, with versions, hashes and global positions, in version order.
    /// Positions are final once the transaction that wrote them commits.
    pub events: Vec<RecordedEvent>,
}

/// An append-only, hash-chained event log (one per service schema / database).
///
/// Services hold an `Arc<dyn EventStore>`; the backends are [`crate::PgEventStore`] (the
/// store of record) and [`crate::SqliteEventStore`] (the embedded default). Both pass the
/// same conformance suite (module `conformance`, feature `conformance`).
///
/// Every method that returns events verifies them: each event's fields are validated and its
/// hash recomputed, a version-1 event must link to 32 zero bytes, and `read_stream` also
/// checks that each `prev_hash` is the previous event's hash (including the event just before
/// `from_version`, which it fetches for that purpose). A failure is
/// [`StoreError::Integrity`], never silently returned data. (`read_all` interleaves streams,
/// so it checks each event on its own; whole-chain checks are `read_stream`'s, the
/// ledger's and the auditor's.)
#[async_trait]
pub trait EventStore: Send + Sync + fmt::Debug {
    /// Appends `events` to `stream_id` as versions `current + 1, current + 2, ...`, atomically
    /// (all or none), if the stream's current version satisfies `expected`.
    ///
    /// Errors: [`StoreError::Conflict`] when `expected` does not hold (nothing is written);
    /// [`StoreError::DuplicateEventId`] when an event id is already stored;
    /// [`StoreError::InvalidEvent`] when an event breaks the envelope rules.
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError>;

    /// [`EventStore::append`] behind `fence`: written only if the lease `fence` names is
    /// still the appender's when the append's transaction writes (see [`crate::fence`]).
    ///
    /// Errors: those of `append`, and [`StoreError::Fenced`] when the lease is not held
    /// (nothing is written). Stores that keep no leases (the embedded one) refuse every
    /// fenced append with [`StoreError::InvalidArgument`].
    async fn append_fenced(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        fence: &Fence,
    ) -> Result<Appended, StoreError> {
        let _ = (stream_id, expected, events, fence);
        Err(crate::fence::no_leases())
    }

    /// Up to `limit` events of `stream_id` with version >= `from_version` (1 = from the
    /// start), in version order. An unknown stream gives an empty list.
    async fn read_stream(
        &self,
        stream_id: &StreamId,
        from_version: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError>;

    /// Up to `limit` events of all streams with global position >= `from_position`, in
    /// position order (strictly increasing, possibly with gaps).
    ///
    /// Never skips: an event not yet returned because its transaction is still open will,
    /// once committed, have a position greater than every position already returned. To
    /// tail the log, call again with `last.position + 1`.
    async fn read_all(
        &self,
        from_position: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError>;

    /// The position of the last event `read_all` can currently return (0 when none).
    async fn head_position(&self) -> Result<u64, StoreError>;

    /// The position of the last event committed (0 when none), whether or not `read_all`
    /// returns it yet: on PostgreSQL a commit stays hidden from `read_all` while a
    /// transaction that started before it is still open (that is what keeps `read_all` from
    /// skipping); SQLite commits in position order, so this is [`EventStore::head_position`].
    /// A reader that must see everything committed before it started (a rebuild) reads
    /// `read_all` up to this position, waiting while a page comes back short of it.
    async fn committed_position(&self) -> Result<u64, StoreError>;

    /// The last version of `stream_id` (0 when the stream has no events).
    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_trait_is_dyn_compatible() {
        fn takes(_: Option<Arc<dyn EventStore>>) {}
        takes(None);
    }
}
