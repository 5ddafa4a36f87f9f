//! Keeping the processed-ids table bounded.
//!
//! A consumer records the id of every event it settles, in the same transaction as the
//! effects, so that the same event arriving again is acknowledged without being applied
//! twice. A redelivery of the same message is already recognised by its position; an id is
//! only needed against the same event arriving under a *new* position, which happens when a
//! relay re-publishes after NATS lost acknowledged messages, i.e. within the length of an
//! outage. Ids older than [`PROCESSED_RETENTION`] (a week, far beyond any outage worth
//! riding out) are therefore forgotten, every [`PRUNE_EVERY`].

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::db::{BusDatabase, BusDb};
use crate::error::error_chain;

/// How long a consumer remembers the ids it settled.
pub const PROCESSED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// How often the ids past the retention are removed.
pub const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// Removes `consumer`'s processed ids older than `retention` every `every` (and once at
/// start), until `shutdown`. A failed pass is logged and retried at the next one.
pub async fn prune_processed_every<DB: BusDatabase>(
    db: BusDb<DB>,
    consumer: String,
    retention: Duration,
    every: Duration,
    shutdown: CancellationToken,
) {
    loop {
        match db.prune_processed(&consumer, retention).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(%consumer, pruned, "processed ids past retention pruned"),
            Err(error) => {
                tracing::warn!(%consumer, error = %error_chain(&error), "pruning processed ids failed");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}
