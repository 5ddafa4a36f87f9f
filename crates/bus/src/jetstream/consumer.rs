//! JetStream durable pull consumers with cumulative acks and exactly-once effects.
//!
//! The consumer pulls batches of messages, applies them in one database transaction through
//! the shared core (`crate::apply`), and acknowledges them only after the commit, with one
//! ack for the batch (`AckPolicy::All`: acking a message acks every one before it, true of
//! a consumer that settles in stream order). Its own
//! position (the last stream sequence settled) is committed with the handler's effects, which
//! makes the database, not JetStream's ack state, the source of truth:
//!
//! - A message at or below the position is a redelivery (its ack was lost): acknowledged
//!   without touching the handler.
//! - A message beyond `position + 1` means earlier ones are still pending on the server, as
//!   after a restart, when JetStream serves new messages first and redelivers the unacked ones
//!   only after `ack_wait`. The consumer fetches the missing sequences directly from the
//!   stream and applies them first, so events are always applied in stream order (which is
//!   global-position order: the relay guarantees it) without waiting for `ack_wait`. The
//!   stream denies deletes, so every sequence exists.
//! - At start, messages JetStream already delivered beyond the position (to an instance that
//!   crashed before settling them) are read from the stream the same way, rather than waited
//!   for until `ack_wait` expires.
//! - The processed-ids table catches the remaining case, the same event under two sequences.

use std::sync::Arc;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer, stream};
use bytes::Bytes;
use fairdeal_eventstore::RecordedEvent;
use futures::{StreamExt, TryStreamExt};
use tokio_util::sync::CancellationToken;

use super::relay::header_u64;
use super::{
    HEADER_DEAD_LETTER_ATTEMPTS, HEADER_DEAD_LETTER_CONSUMER, HEADER_DEAD_LETTER_REASON,
    HEADER_DEAD_LETTER_SEQUENCE, HEADER_EVENT_ID, HEADER_EVENT_TYPE, HEADER_GLOBAL_POSITION,
    HEADER_STREAM_ID, HEADER_WITHHELD, JetStreamConfig, header_text, validate_name,
};
use crate::apply::{DeadLetterSink, Delivery, Settler, Unreadable};
use crate::db::{BusDatabase, BusDb, DeadLetter};
use crate::error::{BusError, error_chain};
use crate::handler::{Handler, RetryPolicy};
use crate::restart::Restarts;
use crate::trace::{TRACEPARENT, TRACESTATE, TraceCarrier};

/// Settings of one durable JetStream consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JetStreamConsumerConfig {
    /// Durable name (ASCII letters, digits, `-`, `_`): the JetStream consumer's name and the
    /// key of its position, processed ids and dead letters in the database.
    pub name: String,
    /// Messages per pull request and at most per database transaction.
    pub batch_size: usize,
    /// Retries of transient handler failures before dead-lettering.
    pub retry: RetryPolicy,
    /// How long JetStream waits for an ack before redelivering.
    pub ack_wait: Duration,
    /// Unacknowledged messages JetStream lets this consumer have outstanding (at least
    /// `batch_size`). Keep it well above `batch_size`: a crashed instance leaves its
    /// unacknowledged messages pending until `ack_wait` expires, and while the pending count
    /// is at this limit JetStream delivers nothing to the restarted instance. Above it, the
    /// restarted instance receives newer messages at once and reads the pending ones straight
    /// from the stream (see the module docs), so a restart costs no waiting.
    pub max_ack_pending: i64,
}

impl JetStreamConsumerConfig {
    /// Defaults for consumer `name`: batches of 256, the default [`RetryPolicy`], 30 s ack wait,
    /// 20,000 unacknowledged messages (room for dozens of crashes within one ack wait).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            batch_size: 256,
            retry: RetryPolicy::default(),
            ack_wait: Duration::from_secs(30),
            max_ack_pending: 20_000,
        }
    }

    fn validate(&self) -> Result<(), BusError> {
        validate_name("consumer name", &self.name)?;
        let batch = i64::try_from(self.batch_size).unwrap_or(i64::MAX);
        if self.batch_size == 0 || self.max_ack_pending < batch {
            return Err(BusError::Config(format!(
                "consumer {}: batch_size must be at least 1 and max_ack_pending at least batch_size",
                self.name
            )));
        }
        if self.ack_wait < Duration::from_secs(1) {
            return Err(BusError::Config(format!(
                "consumer {}: ack_wait must be at least 1s",
                self.name
            )));
        }
        Ok(())
    }
}

/// Publishes dead letters to `<prefix>.deadletter.<consumer>` and waits for the ack.
#[derive(Debug, Clone)]
struct JetStreamDeadLetters {
    /// JetStream context to publish through.
    js: jetstream::Context,
    /// This consumer's dead-letter subject.
    subject: String,
}

impl DeadLetterSink for JetStreamDeadLetters {
    async fn publish(&self, letter: &DeadLetter) -> Result<(), BusError> {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER_DEAD_LETTER_CONSUMER, letter.consumer.as_str());
        headers.insert(
            HEADER_DEAD_LETTER_REASON,
            header_text(&letter.reason).as_str(),
        );
        headers.insert(
            HEADER_DEAD_LETTER_ATTEMPTS,
            letter.attempts.to_string().as_str(),
        );
        headers.insert(
            HEADER_DEAD_LETTER_SEQUENCE,
            letter.position.to_string().as_str(),
        );
        if let Some(event_type) = &letter.event_type {
            headers.insert(HEADER_EVENT_TYPE, event_type.as_str());
        }
        if let Some(stream_id) = &letter.stream_id {
            headers.insert(HEADER_STREAM_ID, stream_id.as_str());
        }
        let message = jetstream::message::PublishMessage::build()
            .payload(Bytes::copy_from_slice(&letter.payload))
            .headers(headers)
            // Re-publishing after a crash before the batch committed is deduplicated.
            .message_id(format!("{}-{}", letter.consumer, letter.position));
        self.js
            .send_publish(self.subject.clone(), message)
            .await
            .map_err(|err| BusError::jetstream("publish dead letter", err))?
            .await
            .map_err(|err| BusError::jetstream("dead letter ack", err))?;
        Ok(())
    }
}

/// A durable JetStream pull consumer applying events with a [`Handler`].
#[derive(Debug)]
pub struct JetStreamConsumer<DB: BusDatabase, H: Handler<DB>> {
    /// JetStream context.
    js: jetstream::Context,
    /// Subjects and stream names.
    streams: JetStreamConfig,
    /// Consumer settings.
    config: JetStreamConsumerConfig,
    /// The shared apply core (database, handler, retries, dead letters).
    settler: Settler<DB, H, JetStreamDeadLetters>,
}

impl<DB, H> JetStreamConsumer<DB, H>
where
    DB: BusDatabase,
    H: Handler<DB>,
{
    /// A consumer of the events stream of `streams`, applying events with `handler` in
    /// `db` (migrated with [`BusDb::migrate`]).
    pub fn new(
        js: jetstream::Context,
        streams: JetStreamConfig,
        db: BusDb<DB>,
        handler: Arc<H>,
        config: JetStreamConsumerConfig,
    ) -> Result<Self, BusError> {
        config.validate()?;
        let sink = JetStreamDeadLetters {
            js: js.clone(),
            subject: streams.dead_letter_subject(&config.name),
        };
        let settler = Settler::new(db, config.name.clone(), handler, config.retry, sink);
        Ok(Self {
            js,
            streams,
            config,
            settler,
        })
    }

    /// The last stream sequence this consumer settled (0 before the first).
    pub async fn position(&self) -> Result<i64, BusError> {
        self.settler.load_position().await
    }

    /// Creates the durable consumer, or updates it to this configuration (idempotent).
    pub async fn ensure(&self) -> Result<(), BusError> {
        let position = self.settler.load_position().await?;
        self.durable(position).await.map(|_| ())
    }

    /// The durable consumer, created or updated. It acknowledges cumulatively
    /// (`AckPolicy::All`: one ack per batch settles the batch and every message before it,
    /// which the consumer's in-order settling makes true). A durable consumer made by an
    /// earlier version with one ack per message cannot be switched in place (JetStream does
    /// not update an ack policy): it is deleted and made again, delivering from the message
    /// after `position`, the last one this consumer settled.
    async fn durable(
        &self,
        position: i64,
    ) -> Result<(stream::Stream, consumer::PullConsumer), BusError> {
        let stream = self
            .js
            .get_stream(self.streams.stream_name())
            .await
            .map_err(|err| BusError::jetstream("get events stream", err))?;
        // A consumer keeps the delivery start it was made with (JetStream refuses to change
        // it): a new one starts at the beginning, or after `position` when it replaces one.
        let mut deliver_policy = consumer::DeliverPolicy::All;
        if let Ok(existing) = stream.consumer_info(&self.config.name).await {
            deliver_policy = existing.config.deliver_policy;
            if existing.config.ack_policy != consumer::AckPolicy::All {
                tracing::info!(
                    consumer = %self.config.name,
                    position,
                    "recreating the durable consumer to acknowledge per batch, from the \
                     message after its position"
                );
                stream
                    .delete_consumer(&self.config.name)
                    .await
                    .map_err(|err| BusError::jetstream("delete durable consumer", err))?;
                deliver_policy = match u64::try_from(position) {
                    Ok(settled) if settled > 0 => consumer::DeliverPolicy::ByStartSequence {
                        start_sequence: settled + 1,
                    },
                    _ => consumer::DeliverPolicy::All,
                };
            }
        }
        let consumer = stream
            .create_consumer(consumer::pull::Config {
                durable_name: Some(self.config.name.clone()),
                description: Some("fairdeal-bus consumer".to_owned()),
                deliver_policy,
                ack_policy: consumer::AckPolicy::All,
                ack_wait: self.config.ack_wait,
                // Attempts are bounded by the consumer's retry policy, which dead-letters;
                // a server-side limit would drop messages silently instead.
                max_deliver: -1,
                max_ack_pending: self.config.max_ack_pending,
                ..Default::default()
            })
            .await
            .map_err(|err| BusError::jetstream("create durable consumer", err))?;
        Ok((stream, consumer))
    }

    /// Consumes until `shutdown` is cancelled, then returns once the batch in hand is
    /// committed and acknowledged. Network and database errors are logged and retried with
    /// backoff; only configuration errors and an inconsistent stream are returned.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), BusError> {
        let backoff = (
            self.config.retry.initial_backoff,
            self.config.retry.max_backoff,
        );
        let mut restarts = Restarts::new("consumer", &self.config.name, backoff);
        while !shutdown.is_cancelled() {
            let result = self.consume_until_error(&shutdown).await;
            if let Some(end) = restarts.after(result, &shutdown).await {
                return end;
            }
        }
        Ok(())
    }

    async fn consume_until_error(&self, shutdown: &CancellationToken) -> Result<(), BusError> {
        let mut position = self.settler.load_position().await?;
        let (stream, consumer) = self.durable(position).await?;
        tracing::info!(consumer = %self.config.name, position, "consumer starting");
        // Messages JetStream delivered beyond our position were lost with a previous instance
        // (or its acks were): they come back only after `ack_wait`, and nothing newer may
        // arrive to reveal the gap. Catch up on them from the stream now.
        let delivered = sequence_to_position(consumer.cached_info().delivered.stream_sequence)?;
        if delivered > position {
            let (settled_to, complete) = self
                .fill_gap(&stream, position, delivered, shutdown)
                .await?;
            position = settled_to;
            if !complete {
                return Ok(());
            }
        }
        let messages = consumer
            .stream()
            .max_messages_per_batch(self.config.batch_size)
            .messages()
            .await
            .map_err(|err| BusError::jetstream("open pull subscription", err))?;
        // The pull subscription asks JetStream for more messages only while it is polled:
        // polled from here, it would sit idle while each batch settles, and every batch would
        // find only the few messages already on the wire. A task of its own keeps pulling
        // into a bounded queue (two batches) while a batch settles, and decodes and verifies
        // each message on the way and offers it to the handler's `prepare` (on another worker
        // thread than the settling); it ends when the queue's receiver is dropped or the
        // subscription ends.
        let (queue, queued) = tokio::sync::mpsc::channel(self.config.batch_size.saturating_mul(2));
        let handler = self.settler.handler();
        let puller = tokio::spawn(async move {
            let mut messages = messages;
            while let Some(item) = messages.next().await {
                let pulled = item.map(|message| {
                    let pulled = Pulled::new(message);
                    if let Some(Ok(event)) = pulled.delivery.as_ref().map(|d| &d.event) {
                        handler.prepare(event);
                    }
                    pulled
                });
                if queue.send(pulled).await.is_err() {
                    return;
                }
            }
        });
        let _puller = AbortOnDrop(puller);
        let mut queued = queued;
        let mut chunk = Vec::with_capacity(self.config.batch_size);
        let mut redrive_check = tokio::time::interval(crate::handler::REDRIVE_CHECK);
        loop {
            // Everything queued, up to a batch, in one call (a stream of items would yield
            // to the scheduler every 128 of them: tokio's cooperative budget).
            let pulled = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                _ = redrive_check.tick() => {
                    self.settler.redrive_pending().await?;
                    continue;
                }
                pulled = queued.recv_many(&mut chunk, self.config.batch_size) => pulled,
            };
            if pulled == 0 {
                return Err(BusError::jetstream(
                    "pull subscription",
                    "message stream ended",
                ));
            }
            let mut pull_error = None;
            let mut received = Vec::with_capacity(chunk.len());
            for item in chunk.drain(..) {
                match item {
                    Ok(message) => received.push(message),
                    Err(err) => pull_error = Some(err),
                }
            }
            let (settled_to, complete) = self
                .settle_messages(&stream, position, &mut received, shutdown)
                .await?;
            position = settled_to;
            // JetStream tells each message how many more are pending for this consumer.
            if complete
                && let Some(info) = received
                    .last()
                    .and_then(|pulled| pulled.message.info().ok())
            {
                self.settler.metrics.record_lag(info.pending);
            }
            // Acknowledging a message acknowledges every earlier one (AckPolicy::All): the
            // last settled message of the chunk stands for the chunk.
            let last_settled = received.iter().rev().find(|pulled| {
                pulled
                    .meta
                    .as_ref()
                    .is_ok_and(|(sequence, _)| *sequence <= position)
            });
            if let Some(Pulled { message, .. }) = last_settled
                && let Err(err) = message.ack().await
            {
                // The redelivery will be recognised as settled and acked again.
                tracing::debug!(consumer = %self.config.name, error = %err, "ack failed");
            }
            if !complete {
                return Ok(());
            }
            if let Some(err) = pull_error {
                return Err(BusError::jetstream("pull messages", err));
            }
        }
    }

    /// Applies the new events among `messages` (filling any gap from the stream first) and
    /// returns the position settled to and whether everything was settled (false only when
    /// shutdown interrupted a retry).
    async fn settle_messages(
        &self,
        stream: &stream::Stream,
        mut position: i64,
        messages: &mut [Pulled],
        shutdown: &CancellationToken,
    ) -> Result<(i64, bool), BusError> {
        let mut deliveries: Vec<Delivery> = Vec::with_capacity(messages.len());
        for pulled in messages {
            let sequence = match &pulled.meta {
                Ok((sequence, _)) => *sequence,
                Err(err) => {
                    return Err(BusError::jetstream("parse message metadata", err.clone()));
                }
            };
            let queued = deliveries.last().map_or(position, |d| d.position);
            if sequence <= queued {
                continue; // Already settled, or a redelivery of one queued in this batch.
            }
            if sequence > queued + 1 {
                // Settle what is queued, then the missing sequences, then carry on.
                let (settled_to, complete) = self.flush(&mut deliveries, position, shutdown).await;
                position = settled_to;
                if !complete {
                    return Ok((position, false));
                }
                let (settled_to, complete) = self
                    .fill_gap(stream, position, sequence - 1, shutdown)
                    .await?;
                position = settled_to;
                if !complete {
                    return Ok((position, false));
                }
            }
            if let Some(delivery) = pulled.delivery.take() {
                deliveries.push(delivery);
            }
        }
        Ok(self.flush(&mut deliveries, position, shutdown).await)
    }

    /// Settles and clears `deliveries`; returns the new position and whether all settled.
    async fn flush(
        &self,
        deliveries: &mut Vec<Delivery>,
        position: i64,
        shutdown: &CancellationToken,
    ) -> (i64, bool) {
        let settled = self
            .settler
            .settle(deliveries, position, shutdown)
            .await
            .count;
        let complete = settled == deliveries.len();
        let position = settled
            .checked_sub(1)
            .and_then(|last| deliveries.get(last))
            .map_or(position, |d| d.position);
        deliveries.clear();
        (position, complete)
    }

    /// Applies stream sequences `position + 1 ..= up_to`, read directly from the stream, in
    /// batches.
    async fn fill_gap(
        &self,
        stream: &stream::Stream,
        mut position: i64,
        up_to: i64,
        shutdown: &CancellationToken,
    ) -> Result<(i64, bool), BusError> {
        tracing::info!(
            consumer = %self.config.name,
            from = position + 1,
            to = up_to,
            "reading pending messages directly from the stream to keep order"
        );
        while position < up_to {
            // One batch of sequences, fetched with many requests in flight: a crash can leave
            // thousands of messages to read this way, and one round trip each would make a
            // restart slower than the ack wait it avoids.
            let last = up_to.min(position.saturating_add(batch_len(self.config.batch_size)));
            let mut deliveries: Vec<Delivery> = futures::stream::iter(position + 1..=last)
                .map(|sequence| async move {
                    let raw_sequence = u64::try_from(sequence).unwrap_or(0);
                    stream
                        .get_raw_message(raw_sequence)
                        .await
                        .map(|message| {
                            delivery(sequence, Some(&message.headers), message.payload, 0)
                        })
                        .map_err(|err| BusError::jetstream("read message from stream", err))
                })
                .buffered(GAP_FILL_CONCURRENCY)
                .try_collect()
                .await?;
            let (settled_to, complete) = self.flush(&mut deliveries, position, shutdown).await;
            position = settled_to;
            if !complete {
                return Ok((position, false));
            }
        }
        Ok((position, true))
    }
}

/// A message as the pulling task hands it over: its metadata read and its event decoded and
/// verified there, off the settling path.
struct Pulled {
    /// The message (acknowledged once settled).
    message: jetstream::Message,
    /// Its stream sequence and the attempts already spent on it, or why they are unreadable.
    meta: Result<(i64, u32), String>,
    /// The decoded delivery (taken when queued for settling); `None` with unreadable metadata.
    delivery: Option<Delivery>,
}

impl Pulled {
    fn new(message: jetstream::Message) -> Self {
        let meta = message
            .info()
            .map_err(|err| err.to_string())
            .and_then(|info| {
                let sequence =
                    sequence_to_position(info.stream_sequence).map_err(|e| e.to_string())?;
                let prior = u32::try_from(info.delivered.max(1) - 1).unwrap_or(u32::MAX);
                Ok((sequence, prior))
            });
        let delivery = meta.as_ref().ok().map(|(sequence, prior)| {
            delivery(
                *sequence,
                message.headers.as_ref(),
                message.payload.clone(),
                *prior,
            )
        });
        Self {
            message,
            meta,
            delivery,
        }
    }
}

/// Aborts a task when dropped (the pulling task of a consumer that stopped or restarts).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Direct reads in flight while filling a gap.
const GAP_FILL_CONCURRENCY: usize = 64;

/// A batch size as a position delta.
fn batch_len(batch_size: usize) -> i64 {
    i64::try_from(batch_size).unwrap_or(i64::MAX)
}

/// Stream sequences are stored as BIGINT positions.
fn sequence_to_position(sequence: u64) -> Result<i64, BusError> {
    i64::try_from(sequence)
        .map_err(|_| BusError::Config(format!("stream sequence {sequence} exceeds i64")))
}

/// Decodes one message into a delivery; a message that does not decode or verify, or a
/// relay's placeholder for a withheld event, becomes a delivery carrying the reason, which
/// the core dead-letters.
fn delivery(
    sequence: i64,
    headers: Option<&HeaderMap>,
    payload: Bytes,
    prior_attempts: u32,
) -> Delivery {
    let header = |name: &str| {
        headers
            .and_then(|h| h.get(name))
            .map(|value| value.as_str().to_owned())
    };
    let global_position = headers
        .and_then(|h| header_u64(h, HEADER_GLOBAL_POSITION))
        .unwrap_or(0);
    let event = match header(HEADER_WITHHELD) {
        Some(reason) => Err(Unreadable {
            reason: format!(
                "withheld by the relay ({reason}): read the event from its service's store"
            ),
            event_id: header(HEADER_EVENT_ID).and_then(|id| id.parse().ok()),
            stream_id: header(HEADER_STREAM_ID),
            event_type: header(HEADER_EVENT_TYPE),
        }),
        None => {
            RecordedEvent::decode_envelope(global_position, &payload).map_err(|err| Unreadable {
                reason: format!("undecodable message: {}", error_chain(&err)),
                event_id: None,
                stream_id: None,
                event_type: None,
            })
        }
    };
    let trace: TraceCarrier = [TRACEPARENT, TRACESTATE]
        .into_iter()
        .filter_map(|key| header(key).map(|value| (key.to_owned(), value)))
        .collect();
    Delivery {
        position: sequence,
        event,
        raw: Some(payload),
        prior_attempts,
        trace: (!trace.is_empty()).then_some(trace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_text_is_one_line() {
        assert_eq!(header_text("a\r\nb\tc"), "a  b c");
        assert_eq!(header_text(&"x".repeat(5000)).len(), 1024);
    }

    #[test]
    fn config_validation() {
        assert!(JetStreamConsumerConfig::new("rating").validate().is_ok());
        let mut config = JetStreamConsumerConfig::new("rating");
        config.max_ack_pending = 10;
        assert!(config.validate().is_err());
        assert!(JetStreamConsumerConfig::new("a.b").validate().is_err());
    }

    #[test]
    fn garbage_becomes_an_undecodable_delivery() {
        let d = delivery(7, None, Bytes::from_static(b"\xff\xff"), 2);
        assert_eq!(d.position, 7);
        assert_eq!(d.prior_attempts, 2);
        assert!(d.event.is_err());
    }
}
