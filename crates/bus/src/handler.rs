//! The [`Handler`] trait services implement to consume events, and the retry policy around it.

use std::future::Future;
use std::time::Duration;

use fairdeal_eventstore::RecordedEvent;
use sqlx::Transaction;

use crate::error::HandlerError;

/// Applies events to a service's own state (a projection, a read model, a side table).
///
/// The consumer calls [`Handler::handle`] for each event, in log order, inside a database
/// transaction it owns: the handler writes its effects through `tx`, and the consumer records
/// the event id and its new position in the same transaction before committing. A
/// redelivered event whose id is already recorded is acknowledged without calling the
/// handler again, so effects happen exactly once as long as the handler only changes state
/// through `tx` (or, for a handler that [`Handler::settles_by_position`] on the embedded
/// bus, the position alone keeps two instances from applying one batch).
///
/// The transaction covers a batch of events. When a handler fails, the consumer rolls the
/// batch back, re-applies the events before the failing one in a fresh transaction, and then
/// retries or dead-letters the failing one. A handler can therefore be *invoked* more than
/// once for an event whose first application was rolled back; its effects still commit once.
/// Side effects outside `tx` (calls to other services, emails) do not get this guarantee:
/// record an intent through `tx` and act on it elsewhere.
///
/// The handler must not commit or roll back `tx` (it only gets a `&mut`), and must return the
/// error of any failed statement rather than carry on: on PostgreSQL a failed statement
/// aborts the whole transaction.
///
/// Implement with `async fn`:
///
/// ```
/// use fairdeal_bus::{Handler, HandlerError};
/// use fairdeal_eventstore::RecordedEvent;
/// use sqlx::{Sqlite, Transaction};
///
/// /// Counts events per stream in the service's own table.
/// struct EventCounter;
///
/// impl Handler<Sqlite> for EventCounter {
///     async fn handle(
///         &self,
///         event: &RecordedEvent,
///         tx: &mut Transaction<'_, Sqlite>,
///     ) -> Result<(), HandlerError> {
///         sqlx::query(
///             "INSERT INTO counts (stream_id, n) VALUES (?1, 1) \
///              ON CONFLICT (stream_id) DO UPDATE SET n = n + 1",
///         )
///         .bind(event.stream_id.as_str())
///         .execute(&mut **tx)
///         .await?;
///         Ok(())
///     }
/// }
/// ```
pub trait Handler<DB: sqlx::Database>: Send + Sync + 'static {
    /// Applies `event` through `tx`. Return [`HandlerError::Transient`] to have it retried
    /// (with backoff, up to the consumer's attempt limit) and [`HandlerError::Permanent`] to
    /// dead-letter it at once. A panic counts as a transient failure.
    fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, DB>,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;

    /// Applies several events at once, in log order, through `tx`: the consumer calls this
    /// instead of [`Handler::handle`] for the new events of a batch it accepts when
    /// [`Handler::batches`] says so, so a handler can write a batch's effects in a few
    /// statements instead of a few per event. The default applies them one by one.
    ///
    /// An error fails the whole batch: the consumer rolls the transaction back and applies
    /// the batch again one event at a time with [`Handler::handle`], which finds the failing
    /// event and retries or dead-letters it alone. A panic counts as a transient failure.
    fn handle_batch(
        &self,
        events: &[&RecordedEvent],
        tx: &mut Transaction<'_, DB>,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send {
        async move {
            for event in events {
                self.handle(event, tx).await?;
            }
            Ok(())
        }
    }

    /// Whether the consumer hands this handler whole batches ([`Handler::handle_batch`]).
    /// Defaults to `false`: one call of [`Handler::handle`] per event, each in its own
    /// span.
    fn batches(&self) -> bool {
        false
    }

    /// Work on `event` that needs nothing but the event (encoding it, hashing it), offered as
    /// the event arrives and before it is handled: a JetStream consumer calls this on the task
    /// that pulls messages, so it runs while earlier batches settle. A handler may keep the
    /// result (keyed by the event id, bounded) for [`Handler::handle`] or
    /// [`Handler::handle_batch`] to use, and must give the same effects without it: it is not
    /// called for every event (embedded consumers, events read to fill a gap), and an event
    /// offered may never be handled (a redelivery, a dead letter). Defaults to nothing.
    fn prepare(&self, event: &RecordedEvent) {
        let _ = event;
    }

    /// The most events this handler takes in one transaction, when the consumer's default
    /// (256) does not suit it: a handler whose batch costs a few statements whatever its size
    /// keeps up with more events in larger batches, at the price of longer transactions.
    /// `None` (the default) keeps the consumer's setting. Read by `fairdeal-platform` when it
    /// starts the consumer.
    fn batch_size(&self) -> Option<usize> {
        None
    }

    /// Whether this handler recognises a redelivered event by itself, in its own state (its
    /// effects are keyed by the event id and a second application changes nothing). Then the
    /// consumer does not record processed event ids for it (one row per event, written and
    /// later pruned: a large part of a fast consumer's work) and hands it every event it
    /// accepts, redeliveries included, in order. Defaults to `false`.
    fn deduplicates(&self) -> bool {
        false
    }

    /// Whether this handler's effects stand being applied again, in order, from any earlier
    /// position of the log: each row it writes is its subject's last word, so a replay ends
    /// where the first pass did (the tables' lobby projection and turn-clock deadlines).
    /// Then an embedded consumer settles its batches by position alone and records no event
    /// ids: a batch commits only if the position still stands where this instance's last
    /// batch left it, so two instances never interleave, and a position set back by hand
    /// replays rather than skips. A JetStream consumer records the ids regardless (the
    /// server redelivers what it did not see acknowledged). Defaults to `false`: the ids
    /// are recorded, and a replay is acknowledged without being applied.
    fn settles_by_position(&self) -> bool {
        false
    }

    /// Whether this handler wants `event` at all. Events it does not want still advance the
    /// consumer's position but are neither handled nor recorded as processed, which keeps the
    /// processed-ids table to the events that matter. Defaults to every event.
    fn accepts(&self, event: &RecordedEvent) -> bool {
        let _ = event;
        true
    }

    /// Called after a transaction in which this handler applied (or the consumer parked)
    /// at least one event has committed. A handler that appends events through `tx` fires
    /// the storage's append signal here, so the relay and in-process readers see them at once
    /// (the store's own append path fires it, but an append inside the consumer's
    /// transaction cannot until the consumer commits). Defaults to nothing.
    fn committed(&self) {}
}

/// How often a consumer looks for dead letters an operator asked to re-drive.
pub const REDRIVE_CHECK: Duration = Duration::from_secs(5);

/// How often and how patiently a consumer retries an event whose handler failed transiently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Handler attempts before the event is dead-lettered (at least 1). For JetStream
    /// consumers, server redeliveries of the same message count as earlier attempts, which
    /// bounds a handler that crashes the whole process.
    pub max_attempts: u32,
    /// Wait after the first failure; doubled after each further failure.
    pub initial_backoff: Duration,
    /// Upper bound of the wait between two attempts.
    pub max_backoff: Duration,
}

/// The wait after failed attempt number `attempt` (1-based): `initial * 2^(attempt-1)`,
/// capped at `max` (a consumer's [`RetryPolicy`], the relay's restarts).
pub(crate) fn doubling(initial: Duration, max: Duration, attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(31);
    initial
        .checked_mul(1u32 << doublings)
        .map_or(max, |wait| wait.min(max))
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based): `initial * 2^(attempt-1)`,
    /// capped at `max_backoff`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        doubling(self.initial_backoff, self.max_backoff, attempt)
    }

    /// Whether an event that failed on attempt `attempt` (1-based) has used up its attempts.
    pub fn exhausted(&self, attempt: u32) -> bool {
        attempt >= self.max_attempts.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        assert_eq!(policy.backoff(1), Duration::from_millis(100));
        assert_eq!(policy.backoff(2), Duration::from_millis(200));
        assert_eq!(policy.backoff(4), Duration::from_millis(800));
        assert_eq!(policy.backoff(5), Duration::from_secs(1));
        assert_eq!(policy.backoff(u32::MAX), Duration::from_secs(1));
        assert_eq!(policy.backoff(0), Duration::from_millis(100));
    }

    #[test]
    fn attempts_are_bounded_even_at_zero() {
        let policy = RetryPolicy {
            max_attempts: 0,
            ..RetryPolicy::default()
        };
        assert!(policy.exhausted(1));
        let policy = RetryPolicy::default();
        assert!(!policy.exhausted(4));
        assert!(policy.exhausted(5));
    }
}
