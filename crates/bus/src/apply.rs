//! The consumer core shared by JetStream and embedded consumers: apply deliveries in order,
//! exactly once, with retries and dead letters.
//!
//! A batch of deliveries runs in one database transaction. Each event gets a savepoint in
//! which the consumer records its id (a conflict means "already settled": skip) and the
//! handler writes its effects; a failing handler rolls back only its savepoint. The consumer's
//! new position is written in the same transaction, so a crash before the commit leaves
//! nothing behind and a crash after it leaves a redelivery that the processed-ids table turns
//! into a no-op. Batching the transaction is what lets a consumer keep up with a busy log:
//! one commit per event caps a PostgreSQL consumer near a thousand events per second.
//!
//! Ordering: a transient failure stops the batch at the failing event (the events before it
//! commit), waits, and retries from that event, so no later event is applied before an
//! earlier one. After its last attempt, or at once for a permanent failure, the event is
//! dead-lettered: recorded in `bus_dead_letters` and the processed table in the batch
//! transaction, handed to the backend's sink (a JetStream dead-letter subject, or an
//! in-process channel) before the commit, and logged at error level.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use fairdeal_eventstore::RecordedEvent;
use futures::FutureExt;
use sqlx::{Acquire, Transaction};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::db::{BusDatabase, BusDb, DeadLetter};
use crate::error::{BusError, HandlerError, error_chain};
use crate::handler::{Handler, RetryPolicy};
use crate::trace::handling_span;

/// One event handed to a consumer, in source order.
#[derive(Debug)]
pub(crate) struct Delivery {
    /// Position in the source (JetStream stream sequence, or global position): what the
    /// consumer's checkpoint records.
    pub(crate) position: i64,
    /// The decoded, hash-verified event, or why the message could not be decoded.
    pub(crate) event: Result<RecordedEvent, String>,
    /// The bytes as received, kept for the dead letter; `None` when the event came straight
    /// from the store (the envelope is re-encoded if it must be dead-lettered).
    pub(crate) raw: Option<Bytes>,
    /// Attempts already spent on this event before this delivery (server redeliveries).
    pub(crate) prior_attempts: u32,
}

/// Where a consumer's dead letters go besides its table.
pub(crate) trait DeadLetterSink: Send + Sync {
    /// Hands over `letter`; runs before the batch commits, so it may run again for the same
    /// letter after a crash and must tolerate that (JetStream: message id deduplication).
    fn publish(&self, letter: &DeadLetter) -> impl Future<Output = Result<(), BusError>> + Send;
}

/// What happened to one delivery inside a batch.
enum Settled {
    /// Applied, skipped as a duplicate or unwanted, or dead-lettered (with the letter).
    Done(Option<DeadLetter>),
    /// The handler failed transiently with attempts left: stop the batch here.
    Retry,
}

/// The result of one batch transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchOutcome {
    /// How many deliveries from the front were settled and committed.
    settled: usize,
    /// When the batch stopped early: the attempt number that failed for the next delivery.
    failed_attempt: Option<u32>,
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
            db,
            consumer,
            handler,
            retry,
            sink,
        }
    }

    /// The consumer's committed position (0 before its first event).
    pub(crate) async fn load_position(&self) -> Result<i64, BusError> {
        self.db.consumer_position(&self.consumer).await
    }

    /// Settles `deliveries` in order and returns how many were settled from the front: all of
    /// them, unless `shutdown` fired while waiting to retry. Transient handler failures are
    /// retried per the policy; database failures are retried (with the same backoff, without
    /// counting an attempt against the event) until they clear or shutdown fires.
    pub(crate) async fn settle(
        &self,
        deliveries: &[Delivery],
        shutdown: &CancellationToken,
    ) -> usize {
        let mut done = 0;
        // The attempt number for deliveries[done] when it is being retried.
        let mut retry_attempt: Option<u32> = None;
        let mut infrastructure_failures = 0u32;
        while let Some(rest) = deliveries.get(done..).filter(|rest| !rest.is_empty()) {
            let wait = match self.apply_batch(rest, retry_attempt).await {
                Ok(outcome) => {
                    infrastructure_failures = 0;
                    done += outcome.settled;
                    match outcome.failed_attempt {
                        None => {
                            retry_attempt = None;
                            continue;
                        }
                        Some(failed) => {
                            retry_attempt = Some(failed.saturating_add(1));
                            self.retry.backoff(failed)
                        }
                    }
                }
                Err(err) => {
                    infrastructure_failures = infrastructure_failures.saturating_add(1);
                    tracing::warn!(
                        consumer = %self.consumer,
                        error = %error_chain(&err),
                        failures = infrastructure_failures,
                        "consumer batch failed; retrying"
                    );
                    self.retry.backoff(infrastructure_failures)
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        done
    }

    /// One transaction over `deliveries`, stopping at the first transient failure.
    async fn apply_batch(
        &self,
        deliveries: &[Delivery],
        retry_attempt: Option<u32>,
    ) -> Result<BatchOutcome, BusError> {
        let mut tx = DB::begin_batch(self.db.pool()).await?;
        let mut settled = 0;
        let mut last_position = None;
        let mut failed_attempt = None;
        let mut letters = Vec::new();
        for (index, delivery) in deliveries.iter().enumerate() {
            let attempt = match retry_attempt {
                Some(attempt) if index == 0 => attempt,
                _ => delivery.prior_attempts.saturating_add(1),
            };
            match self.settle_one(&mut tx, delivery, attempt).await? {
                Settled::Done(letter) => {
                    settled += 1;
                    last_position = Some(delivery.position);
                    letters.extend(letter);
                }
                Settled::Retry => {
                    failed_attempt = Some(attempt);
                    break;
                }
            }
        }
        if let Some(position) = last_position {
            DB::save_consumer_position(self.db.sql(), &mut tx, &self.consumer, position).await?;
        }
        // Announced before the commit: a crash in between re-runs the batch and the sink
        // deduplicates; announcing after could lose the announcement.
        for letter in &letters {
            self.sink.publish(letter).await?;
        }
        tx.commit().await?;
        for letter in &letters {
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
        Ok(BatchOutcome {
            settled,
            failed_attempt,
        })
    }

    /// Settles one delivery inside the batch transaction.
    async fn settle_one(
        &self,
        tx: &mut Transaction<'static, DB>,
        delivery: &Delivery,
        attempt: u32,
    ) -> Result<Settled, BusError> {
        let event = match &delivery.event {
            Ok(event) => event,
            Err(reason) => {
                // Nothing to hand to the handler: dead-letter the bytes as received.
                let letter = DeadLetter {
                    consumer: self.consumer.clone(),
                    position: delivery.position,
                    event_id: None,
                    stream_id: None,
                    event_type: None,
                    attempts: 0,
                    reason: format!("undecodable message: {reason}"),
                    payload: delivery.raw.as_deref().unwrap_or_default().to_vec(),
                };
                DB::insert_dead_letter(self.db.sql(), tx, &letter).await?;
                return Ok(Settled::Done(Some(letter)));
            }
        };
        if !self.handler.accepts(event) {
            return Ok(Settled::Done(None));
        }

        let mut savepoint = Acquire::begin(&mut *tx).await?;
        if !DB::record_processed(
            self.db.sql(),
            &mut savepoint,
            &self.consumer,
            event.event_id,
        )
        .await?
        {
            // Settled by an earlier delivery whose acknowledgement was lost.
            savepoint.commit().await?;
            tracing::debug!(
                consumer = %self.consumer,
                event_id = %event.event_id,
                "duplicate delivery skipped"
            );
            return Ok(Settled::Done(None));
        }
        let span = handling_span(&self.consumer, event);
        let outcome = AssertUnwindSafe(self.handler.handle(event, &mut savepoint))
            .catch_unwind()
            .instrument(span.clone())
            .await
            .unwrap_or_else(|panic| Err(HandlerError::transient(panic_message(&*panic))));
        let err = match outcome {
            Ok(()) => {
                savepoint.commit().await?;
                return Ok(Settled::Done(None));
            }
            Err(err) => err,
        };
        savepoint.rollback().await?;

        let reason = error_chain(&err);
        if !err.is_permanent() && !self.retry.exhausted(attempt) {
            span.in_scope(|| {
                tracing::warn!(attempt, reason = %reason, "handler failed; will retry");
            });
            return Ok(Settled::Retry);
        }
        let letter = DeadLetter {
            consumer: self.consumer.clone(),
            position: delivery.position,
            event_id: Some(event.event_id),
            stream_id: Some(event.stream_id.as_str().to_owned()),
            event_type: Some(event.event_type.clone()),
            attempts: attempt,
            reason,
            payload: match &delivery.raw {
                Some(raw) => raw.to_vec(),
                None => event.encode_envelope(),
            },
        };
        // Recorded as processed too: "settled" covers given-up events, so a late duplicate
        // of a dead-lettered event is not tried again.
        DB::record_processed(self.db.sql(), tx, &self.consumer, event.event_id).await?;
        DB::insert_dead_letter(self.db.sql(), tx, &letter).await?;
        Ok(Settled::Done(Some(letter)))
    }
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
