//! The consumer core shared by JetStream and embedded consumers: apply deliveries in order,
//! exactly once, with retries and dead letters.
//!
//! A batch of deliveries runs in one database transaction: one statement records the batch's
//! event ids as processed (the ids already there are redeliveries: skipped), the handler
//! applies each new event through the same transaction, and the consumer's new position is
//! written before the commit. A crash before the commit leaves nothing behind; a crash after
//! it leaves at most a redelivery, which the processed ids turn into a no-op. Batching is what
//! lets a consumer keep up with a busy log: a transaction (and savepoints) per event costs
//! several round trips each and caps a PostgreSQL consumer near a thousand events per second.
//!
//! When a handler fails, the whole batch transaction is rolled back (no savepoints on the
//! fast path), the events before the failing one are applied again in a fresh transaction and
//! committed, and only then is the failing event dealt with. So a handler may be *invoked*
//! again for an event whose first application was rolled back, but its effects commit once.
//!
//! Ordering: a transient failure stops progress at the failing event: it is retried with
//! backoff, and no later event is applied before it. After its last attempt, or at once for a
//! permanent failure, the event is dead-lettered: recorded in `bus_dead_letters` and as
//! processed, announced to the backend's sink (the JetStream dead-letter subject, or an
//! in-process channel) before the commit, and logged at error level.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use fairdeal_eventstore::RecordedEvent;
use fairdeal_telemetry::metrics::{Counter, Gauge, KeyValue};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use crate::db::{BusDatabase, BusDb, DeadLetter};
use crate::error::{BusError, HandlerError, error_chain};
use crate::handler::{Handler, RetryPolicy};
use crate::trace::{TraceCarrier, handling_span};

/// One event handed to a consumer, in source order.
#[derive(Debug)]
pub(crate) struct Delivery {
    /// Position in the source (JetStream stream sequence, or global position): what the
    /// consumer's checkpoint records.
    pub(crate) position: i64,
    /// The decoded, hash-verified event, or what is known of a message that holds none.
    pub(crate) event: Result<RecordedEvent, Unreadable>,
    /// The bytes as received, kept for the dead letter; `None` when the event came straight
    /// from the store (the envelope is re-encoded if it must be dead-lettered).
    pub(crate) raw: Option<Bytes>,
    /// Attempts already spent on this event before this delivery (server redeliveries).
    pub(crate) prior_attempts: u32,
    /// The trace context to continue (the relay's publish span), when the transport carries
    /// one; else the envelope's.
    pub(crate) trace: Option<TraceCarrier>,
}

/// A message with no event to hand to the handler: it is dead-lettered as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// Why (one line), for the dead letter.
    pub(crate) reason: String,
    /// The event's id, stream and type when the message names them (a relay placeholder).
    pub(crate) event_id: Option<Uuid>,
    /// See `event_id`.
    pub(crate) stream_id: Option<String>,
    /// See `event_id`.
    pub(crate) event_type: Option<String>,
}

/// Where a consumer's dead letters go besides its table.
pub(crate) trait DeadLetterSink: Send + Sync {
    /// Hands over `letter`; runs before the batch commits, so it may run again for the same
    /// letter after a crash and must tolerate that (JetStream: message id deduplication).
    fn publish(&self, letter: &DeadLetter) -> impl Future<Output = Result<(), BusError>> + Send;
}

/// How to treat the first delivery of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
enum First {
    /// As any other: its attempt number is `prior_attempts + 1`.
    Fresh,
    /// It failed before: this is attempt number `.0`.
    Retry(u32),
    /// Its attempts are used up: dead-letter it without calling the handler.
    GiveUp {
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        reason: String,
    },
}

/// How one transaction over a batch ended.
#[derive(Debug)]
enum Applied {
    /// Committed.
    Committed,
    /// The handler failed on one event; rolled back.
    Failed(Failure),
    /// The batch handler failed, on no event in particular; rolled back.
    BatchFailed(HandlerError),
    /// Settling by position: the position had moved on (another instance settled the batch);
    /// rolled back.
    Superseded,
}

/// How far [`Settler::settle`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settled {
    /// How many deliveries were settled, from the front.
    pub(crate) count: usize,
    /// Settling by position: it stopped because another instance had moved the position on
    /// (the caller reads the position again).
    pub(crate) superseded: bool,
}

/// A handler failure inside a batch (the batch was rolled back).
#[derive(Debug)]
struct Failure {
    /// Index of the failing delivery in the batch.
    index: usize,
    /// Which attempt failed.
    attempt: u32,
    /// Why.
    error: HandlerError,
}

/// Applies deliveries for one named consumer.
#[derive(Debug)]
pub(crate) struct Settler<DB: BusDatabase, H, S> {
    /// The database holding the bus tables and the handler's state.
    db: BusDb<DB>,
    /// Durable consumer name: key of its position, processed ids and dead letters.
    consumer: String,
    /// The service's handler.
    handler: Arc<H>,
    /// Retry bounds for transient failures.
    retry: RetryPolicy,
    /// Where dead letters are announced.
    sink: S,
    /// Settles by position ([`Settler::by_position_if`]), not by processed ids.
    by_position: bool,
    /// Its instruments.
    pub(crate) metrics: ConsumerMetrics,
}

/// A consumer's instruments (docs/operations.md).
#[derive(Debug, Clone)]
pub(crate) struct ConsumerMetrics {
    /// Events dead-lettered.
    dead_letters: Counter<u64>,
    /// Events in the source not yet settled.
    lag: Gauge<u64>,
    /// `consumer = <name>`.
    attributes: [KeyValue; 1],
}

impl ConsumerMetrics {
    fn new(consumer: &str) -> Self {
        Self {
            dead_letters: fairdeal_telemetry::metrics::counter(
                "fairdeal.bus.consumer.dead_letters",
                "Events a consumer dead-lettered",
                "{event}",
            ),
            lag: fairdeal_telemetry::metrics::gauge(
                "fairdeal.bus.consumer.lag",
                "Events in the consumer's source not yet applied",
                "{event}",
            ),
            attributes: [KeyValue::new("consumer", consumer.to_owned())],
        }
    }

    /// Records the consumer's lag.
    pub(crate) fn record_lag(&self, lag: u64) {
        self.lag.record(lag, &self.attributes);
    }
}

impl<DB, H, S> Settler<DB, H, S>
where
    DB: BusDatabase,
    H: Handler<DB>,
    S: DeadLetterSink,
{
    pub(crate) fn new(
        db: BusDb<DB>,
        consumer: String,
        handler: Arc<H>,
        retry: RetryPolicy,
        sink: S,
    ) -> Self {
        Self {
            metrics: ConsumerMetrics::new(&consumer),
            db,
            consumer,
            handler,
            retry,
            sink,
            by_position: false,
        }
    }

    /// With `by_position`, settles each event once by the consumer's position rather than
    /// by recorded event ids: each batch moves the position on from where this instance
    /// last left it, or is rolled back ([`BusDatabase::advance_consumer_position`]). For a
    /// consumer that reads its source in order from its own committed position (an embedded
    /// consumer tailing the store), where nothing is delivered twice but by a second
    /// instance (a lease holder that has not yet noticed it lost the lease), and a handler
    /// whose effects stand a replay ([`Handler::settles_by_position`]). No id is written per
    /// event: on the tables service's lobby projection the ids were a quarter of a move's
    /// WAL. The caller names the committed position each [`Settler::settle`] reads on from.
    pub(crate) fn by_position_if(mut self, by_position: bool) -> Self {
        self.by_position = by_position;
        self
    }

    /// The service's handler.
    pub(crate) fn handler(&self) -> Arc<H> {
        self.handler.clone()
    }

    /// The consumer's committed position (0 before its first event).
    pub(crate) async fn load_position(&self) -> Result<i64, BusError> {
        self.db.consumer_position(&self.consumer).await
    }

    /// Settles `deliveries`, which follow the committed position `from`, in order and says
    /// how many were settled from the front: all of them, unless `shutdown` fired while
    /// waiting to retry or, settling by position, another instance had moved the position on.
    /// Transient handler failures are retried per the policy; database failures are retried
    /// (with the same backoff, without counting an attempt against any event) until they
    /// clear or shutdown fires.
    pub(crate) async fn settle(
        &self,
        deliveries: &[Delivery],
        from: i64,
        shutdown: &CancellationToken,
    ) -> Settled {
        let mut superseded = false;
        // Where the committed position stands before each transaction.
        let mut at = from;
        let mut done = 0;
        let mut first = First::Fresh;
        // After a failure past the first delivery: commit the events before it first
        // (`prefix` of them), then deal with the failure.
        let mut prefix: Option<(usize, Failure)> = None;
        let mut infrastructure_failures = 0u32;
        while done < deliveries.len() {
            let end = prefix
                .as_ref()
                .map_or(deliveries.len(), |(len, _)| done + len);
            let batch = deliveries.get(done..end).unwrap_or_default();
            let outcome = self.apply_batch(batch, at, &first).await;
            let failure = match outcome {
                Ok(Applied::Superseded) => {
                    tracing::info!(
                        consumer = %self.consumer,
                        "another instance settled this batch; reading the position again"
                    );
                    superseded = true;
                    break;
                }
                Err(err) => {
                    infrastructure_failures = infrastructure_failures.saturating_add(1);
                    tracing::warn!(
                        consumer = %self.consumer,
                        error = %error_chain(&err),
                        failures = infrastructure_failures,
                        "consumer batch failed; retrying"
                    );
                    let wait = self.retry.backoff(infrastructure_failures);
                    if !sleep_unless_shutdown(wait, shutdown).await {
                        break;
                    }
                    continue;
                }
                Ok(Applied::Committed | Applied::BatchFailed(_)) => {
                    infrastructure_failures = 0;
                    done = end;
                    at = batch.last().map_or(at, |last| last.position);
                    match prefix.take() {
                        None => {
                            first = First::Fresh;
                            continue;
                        }
                        Some((_, failure)) => failure,
                    }
                }
                Ok(Applied::Failed(failure)) => {
                    infrastructure_failures = 0;
                    if failure.index > 0 {
                        prefix = Some((failure.index, failure));
                        continue;
                    }
                    failure
                }
            };
            // `failure` concerns deliveries[done], which is now first in line.
            match self.after_failure(failure, shutdown).await {
                Some(next) => first = next,
                None => break,
            }
        }
        Settled {
            count: done,
            superseded,
        }
    }

    /// Decides what to do with an event whose handler failed: give up (permanent, or out of
    /// attempts) or wait and retry. `None` when shutdown interrupted the wait.
    async fn after_failure(&self, failure: Failure, shutdown: &CancellationToken) -> Option<First> {
        let reason = error_chain(&failure.error);
        if failure.error.is_permanent() || self.retry.exhausted(failure.attempt) {
            return Some(First::GiveUp {
                attempts: failure.attempt,
                reason,
            });
        }
        tracing::warn!(
            consumer = %self.consumer,
            attempt = failure.attempt,
            reason = %reason,
            "handler failed; will retry"
        );
        sleep_unless_shutdown(self.retry.backoff(failure.attempt), shutdown)
            .await
            .then(|| First::Retry(failure.attempt.saturating_add(1)))
    }

    /// One transaction over `batch`: committed, or rolled back as a handler failed
    /// ([`Applied::Failed`]) or the position had moved on ([`Applied::Superseded`]); never
    /// [`Applied::BatchFailed`].
    ///
    /// A handler that takes batches ([`Handler::batches`]) gets the batch's new events in one
    /// call; should that fail, the batch is rolled back and applied again one event at a
    /// time, which names the failing event. A retry of a failed first event always goes one
    /// at a time.
    async fn apply_batch(
        &self,
        batch: &[Delivery],
        from: i64,
        first: &First,
    ) -> Result<Applied, BusError> {
        if self.handler.batches() && *first == First::Fresh {
            match self.apply_in_one_tx(batch, from, first, true).await? {
                Applied::BatchFailed(error) => tracing::debug!(
                    consumer = %self.consumer,
                    error = %error_chain(&error),
                    "batch handler failed; applying the batch one event at a time"
                ),
                settled => return Ok(settled),
            }
        }
        self.apply_in_one_tx(batch, from, first, false).await
    }

    /// `apply_batch`'s transaction over `batch`, which follows the committed position
    /// `from`, handing the new events over one by one or, with `as_batch`, in one call.
    async fn apply_in_one_tx(
        &self,
        batch: &[Delivery],
        from: i64,
        first: &First,
        as_batch: bool,
    ) -> Result<Applied, BusError> {
        let Some(last) = batch.last() else {
            return Ok(Applied::Committed);
        };
        let mut tx = DB::begin_batch(self.db.pool()).await?;
        let ids: Vec<Uuid> = batch
            .iter()
            .filter_map(|d| d.event.as_ref().ok())
            .filter(|event| self.handler.accepts(event))
            .map(|event| event.event_id)
            .collect();
        // Removing an id when its event is settled also catches the same event twice in one
        // batch (published twice under different sequences). A handler that deduplicates by
        // itself gets every id as new, and so does one settling by position, where nothing is
        // delivered twice to one instance (see `Settler::by_position_if`).
        let mut new_ids = if self.handler.deduplicates() || self.by_position {
            ids.iter().copied().collect()
        } else {
            DB::record_processed(self.db.sql(), &mut tx, &self.consumer, &ids).await?
        };
        let mut letters = Vec::new();
        // With `as_batch`: the events for the one `handle_batch` call.
        let mut handled: Vec<&RecordedEvent> = Vec::new();
        for (index, delivery) in batch.iter().enumerate() {
            let event = match &delivery.event {
                Ok(event) => event,
                Err(unreadable) => {
                    // Nothing to hand to the handler: dead-letter the bytes as received.
                    letters.push(DeadLetter {
                        consumer: self.consumer.clone(),
                        position: delivery.position,
                        event_id: unreadable.event_id,
                        stream_id: unreadable.stream_id.clone(),
                        event_type: unreadable.event_type.clone(),
                        attempts: 0,
                        reason: unreadable.reason.clone(),
                        payload: delivery.raw.as_deref().unwrap_or_default().to_vec(),
                    });
                    continue;
                }
            };
            if !self.handler.accepts(event) || !new_ids.remove(&event.event_id) {
                // Unwanted, or settled by an earlier delivery whose ack was lost.
                continue;
            }
            let attempt = match first {
                First::GiveUp { attempts, reason } if index == 0 => {
                    letters.push(self.letter(delivery, event, *attempts, reason.clone()));
                    continue;
                }
                First::Retry(attempt) if index == 0 => *attempt,
                _ => delivery.prior_attempts.saturating_add(1),
            };
            if as_batch {
                handled.push(event);
                continue;
            }
            let span = handling_span(&self.consumer, event, delivery.trace.as_ref());
            if let Err(error) = guarded(self.handler.handle(event, &mut tx), span).await {
                // Dropping would roll back too; rolling back now frees the connection at once.
                let _ = tx.rollback().await;
                return Ok(Applied::Failed(Failure {
                    index,
                    attempt,
                    error,
                }));
            }
        }
        if !handled.is_empty() {
            let span = tracing::info_span!(
                "bus.handle_batch",
                consumer = %self.consumer,
                events = handled.len()
            );
            if let Err(error) = guarded(self.handler.handle_batch(&handled, &mut tx), span).await {
                let _ = tx.rollback().await;
                return Ok(Applied::BatchFailed(error));
            }
        }
        for letter in &letters {
            DB::insert_dead_letter(self.db.sql(), &mut tx, letter).await?;
        }
        if self.by_position {
            let advanced = DB::advance_consumer_position(
                self.db.sql(),
                &mut tx,
                &self.consumer,
                from,
                last.position,
            )
            .await?;
            if !advanced {
                let _ = tx.rollback().await;
                return Ok(Applied::Superseded);
            }
        } else {
            DB::save_consumer_position(self.db.sql(), &mut tx, &self.consumer, last.position)
                .await?;
        }
        // Announced before the commit: a crash in between re-runs the batch and the sink
        // deduplicates; announcing after could lose the announcement.
        for letter in &letters {
            self.sink.publish(letter).await?;
        }
        tx.commit().await?;
        if !ids.is_empty() || !letters.is_empty() {
            self.handler.committed();
        }
        for letter in &letters {
            self.metrics.dead_letters.add(1, &self.metrics.attributes);
            tracing::error!(
                consumer = %letter.consumer,
                position = letter.position,
                event_id = ?letter.event_id,
                event_type = ?letter.event_type,
                stream_id = ?letter.stream_id,
                attempts = letter.attempts,
                reason = %letter.reason,
                "event dead-lettered"
            );
        }
        Ok(Applied::Committed)
    }

    /// Applies the dead letters an operator asked to re-drive (see `BusDb::request_redrive`),
    /// each in a transaction of its own that also stamps it done; a letter that fails again
    /// keeps its record with the new error and may be requested again. Returns how many
    /// were applied.
    pub(crate) async fn redrive_pending(&self) -> Result<usize, BusError> {
        let pending = {
            let mut conn = self.db.pool().acquire().await?;
            DB::pending_redrives(self.db.sql(), &mut conn, &self.consumer).await?
        };
        let mut applied = 0;
        for stored in pending {
            let letter = &stored.letter;
            let decoded = fairdeal_db::stored_u64(letter.position, "bus_dead_letters.position")
                .map_err(|err| err.to_string())
                .and_then(|position| {
                    RecordedEvent::decode_envelope(position, &letter.payload)
                        .map_err(|err| format!("does not decode: {}", error_chain(&err)))
                });
            let outcome = match decoded {
                Err(reason) => Err(reason),
                Ok(event) => {
                    let mut tx = DB::begin_batch(self.db.pool()).await?;
                    let span = handling_span(&self.consumer, &event, None);
                    let handled = guarded(self.handler.handle(&event, &mut tx), span).await;
                    match handled {
                        Ok(()) => {
                            DB::finish_redrive(self.db.sql(), &mut tx, stored.id, None).await?;
                            tx.commit().await?;
                            self.handler.committed();
                            Ok(())
                        }
                        Err(error) => {
                            let _ = tx.rollback().await;
                            Err(error_chain(&error))
                        }
                    }
                }
            };
            match outcome {
                Ok(()) => {
                    applied += 1;
                    tracing::info!(
                        consumer = %self.consumer,
                        dead_letter = stored.id,
                        event_id = ?letter.event_id,
                        "dead letter re-driven"
                    );
                }
                Err(reason) => {
                    let mut conn = self.db.pool().acquire().await?;
                    DB::finish_redrive(self.db.sql(), &mut conn, stored.id, Some(&reason)).await?;
                    tracing::warn!(
                        consumer = %self.consumer,
                        dead_letter = stored.id,
                        event_id = ?letter.event_id,
                        reason = %reason,
                        "dead letter re-drive failed"
                    );
                }
            }
        }
        Ok(applied)
    }

    /// The dead letter for an event the handler gave up on.
    fn letter(
        &self,
        delivery: &Delivery,
        event: &RecordedEvent,
        attempts: u32,
        reason: String,
    ) -> DeadLetter {
        DeadLetter {
            consumer: self.consumer.clone(),
            position: delivery.position,
            event_id: Some(event.event_id),
            stream_id: Some(event.stream_id.as_str().to_owned()),
            event_type: Some(event.event_type.clone()),
            attempts,
            reason,
            payload: match &delivery.raw {
                Some(raw) => raw.to_vec(),
                None => event.encode_envelope(),
            },
        }
    }
}

/// Sleeps `wait`; `false` if `shutdown` fired first.
async fn sleep_unless_shutdown(wait: std::time::Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => false,
        () = tokio::time::sleep(wait) => true,
    }
}

/// A handler call in `span`, a panic counted as a transient failure.
async fn guarded(
    call: impl Future<Output = Result<(), HandlerError>>,
    span: tracing::Span,
) -> Result<(), HandlerError> {
    AssertUnwindSafe(call)
        .catch_unwind()
        .instrument(span)
        .await
        .unwrap_or_else(|panic| Err(HandlerError::transient(panic_message(&*panic))))
}

/// The text of a caught panic.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    format!("handler panicked: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_readable() {
        let caught = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(panic_message(&*caught), "handler panicked: boom 7");
        let caught = std::panic::catch_unwind(|| std::panic::panic_any(5u8)).unwrap_err();
        assert_eq!(
            panic_message(&*caught),
            "handler panicked: non-string panic payload"
        );
    }
}
