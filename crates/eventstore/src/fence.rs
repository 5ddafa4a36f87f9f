//! Fences: appends that must hold a lease (docs/decisions.md, "Who owns a table").
//!
//! A service whose replicas share its aggregates by partition (`fairdeal_platform::ownership`)
//! keeps its leases in the `partition_leases` table of its own schema, beside `events`. An
//! append carrying a [`Fence`] is written only if, when its transaction writes, that lease is
//! still the appender's: the row of the fence's partition at its owner and epoch, unexpired by
//! the database's clock. The check and the insert are one statement (on PostgreSQL: the
//! lease row is locked `FOR SHARE` until the commit), so
//! - a stale owner's append fails ([`crate::StoreError::Fenced`]) and writes nothing, and
//! - a takeover, which updates the row, waits for every append already past the check.
//!
//! Group commit keeps this: a batch's distinct fences are checked by its one INSERT, and a
//! batch whose check fails is written again append by append, each under its own fence, so
//! only the appends of a lost lease fail.

/// A lease an append must hold when it commits: the row of `partition` in the store
/// schema's `partition_leases` table, at `owner` and `epoch`, unexpired.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fence {
    /// The partition of the stream appended to.
    pub partition: u32,
    /// The appender's owner name.
    pub owner: String,
    /// The epoch of the appender's lease (its fencing token).
    pub epoch: i64,
}

/// The refusal of a fenced append by a store that keeps no leases (the embedded one: it is
/// one process's).
pub(crate) fn no_leases() -> crate::StoreError {
    crate::StoreError::InvalidArgument(
        "fenced appends need PostgreSQL (this store holds no leases)".into(),
    )
}

impl Fence {
    /// The distinct fences of `fences`, as the bound arrays of a fenced insert: partitions,
    /// owners, epochs.
    pub(crate) fn columns<'a>(
        fences: impl IntoIterator<Item = &'a Fence>,
    ) -> (Vec<i32>, Vec<String>, Vec<i64>) {
        let mut seen = std::collections::HashSet::new();
        let mut partitions = Vec::new();
        let mut owners = Vec::new();
        let mut epochs = Vec::new();
        for fence in fences {
            if seen.insert(fence) {
                // A partition is a u32 below the service's partition count (a few dozen).
                partitions.push(i32::try_from(fence.partition).unwrap_or(i32::MAX));
                owners.push(fence.owner.clone());
                epochs.push(fence.epoch);
            }
        }
        (partitions, owners, epochs)
    }
}
