//! The outbox relay: committed events from the store to the JetStream events stream, in
//! global-position order, each exactly once.
//!
//! The store's `events` table is the outbox. The relay tails it with `read_all` and publishes
//! every event, pipelining up to `max_in_flight` publishes (one awaited ack at a time gives
//! about 3k msg/s on this machine, 256 in flight about 55k/s). Exactly-once in the stream rests
//! on three things:
//!
//! 1. **Resuming from the stream's tail.** At start and after any error the relay reads the
//!    last message of the stream and resumes after its global position (or after its own
//!    checkpoint, if that is further). Whatever a crash left half-done, nothing is skipped and
//!    nothing already stored is published again, however long the relay was down.
//! 2. **`Nats-Expected-Last-Sequence`.** Each publish states the stream sequence it must
//!    follow. Under pipelining, if one publish fails the ones behind it are refused instead
//!    of being stored out of order, and a second relay running by mistake on the same stream
//!    gets refusals instead of interleaving. The stream's sequence numbers therefore count
//!    the log's events without gaps, which consumers use to detect missed messages.
//! 3. **`Nats-Msg-Id` = event id.** JetStream's deduplication window turns any remaining
//!    double publish (e.g. two relays racing on the same event) into a no-op.
//!
//! Of several replicas of a service, one relays: the relay holds the [`Lease`] named after
//! its checkpoint (a PostgreSQL advisory lock) while it works; the others stand by, trying
//! to take it every `standby_interval`, and take over within about that long once the holder
//! stops, or within [`crate::db::LEASE_IDLE_TIMEOUT`] when it vanished without closing its
//! connection. The points above keep the stream exact even while two relays overlap (a
//! holder that lost its lease only notices at its next check).
//!
//! The checkpoint in `bus_relay_checkpoints` is written after the acks (at most every
//! `checkpoint_interval` while busy, and whenever the relay catches up or stops): it is the
//! operator's view of relay progress (and the resume point if the stream were ever recreated
//! empty), never ahead of what JetStream acknowledged.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{self, stream};
use fairdeal_eventstore::{EventStore, RecordedEvent};
use tokio_util::sync::CancellationToken;

use super::{
    HEADER_EVENT_TYPE, HEADER_GLOBAL_POSITION, HEADER_STREAM_ID, HEADER_STREAM_VERSION,
    JetStreamConfig, validate_name,
};
use crate::db::{BusDatabase, BusDb, LEASE_CHECK_INTERVAL, Lease};
use crate::error::{BusError, error_chain};
use crate::signal::{AppendWaiter, Wake, wait_for_events};
use crate::trace::{TRACEPARENT, TRACESTATE};

/// Room the relay's message needs beyond an event's variable fields (bounded together by
/// [`fairdeal_eventstore::MAX_EVENT_BYTES`]): the envelope's fixed fields, event id, stream id,
/// event type and hashes, and the headers (type, stream, version, position, trace context,
/// message id, expected sequence). 64 KiB is several times what they take.
pub const MESSAGE_MARGIN_BYTES: usize = 64 * 1024;

/// The smallest NATS `max_payload` the relay runs with: every event the store accepts must
/// fit one message, or one oversized event would stop the relay for good.
pub const MIN_MAX_PAYLOAD: usize = fairdeal_eventstore::MAX_EVENT_BYTES + MESSAGE_MARGIN_BYTES;

/// Refuses a server whose `max_payload` is below [`MIN_MAX_PAYLOAD`].
pub fn check_max_payload(max_payload: usize) -> Result<(), BusError> {
    if max_payload < MIN_MAX_PAYLOAD {
        return Err(BusError::Config(format!(
            "the NATS server's max_payload is {max_payload} bytes, below the {MIN_MAX_PAYLOAD} \
             the relay needs (events up to {} bytes plus {MESSAGE_MARGIN_BYTES} of envelope \
             and headers): raise max_payload in the server's configuration (default 1 MiB)",
            fairdeal_eventstore::MAX_EVENT_BYTES
        )));
    }
    Ok(())
}

/// Relay tuning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayConfig {
    /// Checkpoint key in `bus_relay_checkpoints` (one relay per events stream).
    pub name: String,
    /// Events read from the store per `read_all` call.
    pub batch_size: usize,
    /// Publishes awaiting their ack at once.
    pub max_in_flight: usize,
    /// How often to look for new events when no append signal arrives (appends from other
    /// processes are only seen this way).
    pub poll_interval: Duration,
    /// First wait after an error; doubles up to `max_backoff`.
    pub initial_backoff: Duration,
    /// Longest wait between two attempts after errors.
    pub max_backoff: Duration,
    /// Longest time the checkpoint may lag behind the acknowledged publishes while the relay
    /// is busy (it is also written whenever the relay catches up or stops). Resuming never
    /// depends on it: the stream's tail is authoritative.
    pub checkpoint_interval: Duration,
    /// How often a relay standing by (another replica holds the lease) tries to take the
    /// lease. Each try opens a database connection, so this is much longer than the poll.
    pub standby_interval: Duration,
}

impl RelayConfig {
    /// Defaults for a relay named `name`: batches of 512, 256 publishes in flight, a 100 ms
    /// poll, backoff from 100 ms to 10 s, the checkpoint written at least every 250 ms, a
    /// try for the lease every 2 s while standing by.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            batch_size: 512,
            max_in_flight: 256,
            poll_interval: Duration::from_millis(100),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            checkpoint_interval: Duration::from_millis(250),
            standby_interval: Duration::from_secs(2),
        }
    }

    fn validate(&self) -> Result<(), BusError> {
        validate_name("relay name", &self.name)?;
        if self.batch_size == 0 || self.max_in_flight == 0 {
            return Err(BusError::Config(
                "relay batch_size and max_in_flight must be at least 1".into(),
            ));
        }
        // An idle relay checks its lease once per poll; a longer silence would let the
        // server end the lease's session.
        if self.poll_interval > LEASE_CHECK_INTERVAL {
            return Err(BusError::Config(format!(
                "relay poll_interval must be at most {} s",
                LEASE_CHECK_INTERVAL.as_secs()
            )));
        }
        Ok(())
    }
}

/// Where the relay stands: the last event known to be in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tail {
    /// Global position of the last relayed event (0: none).
    position: u64,
    /// Stream sequence of the last message (0: empty stream).
    sequence: u64,
}

/// Publishes committed events from an [`EventStore`] to the JetStream events stream.
#[derive(Debug)]
pub struct Relay<DB: BusDatabase> {
    /// The outbox.
    store: Arc<dyn EventStore>,
    /// Where the checkpoint lives (the store's database).
    db: BusDb<DB>,
    /// JetStream context to publish through.
    js: jetstream::Context,
    /// Subjects and stream names.
    streams: JetStreamConfig,
    /// Tuning.
    config: RelayConfig,
    /// Wakes the relay on in-process appends.
    waiter: Option<AppendWaiter>,
}

impl<DB: BusDatabase> Relay<DB> {
    /// A relay from `store` to the events stream of `streams`, checkpointing in `db` (the
    /// store's database, migrated with [`BusDb::migrate`]).
    pub fn new(
        store: Arc<dyn EventStore>,
        db: BusDb<DB>,
        js: jetstream::Context,
        streams: JetStreamConfig,
        config: RelayConfig,
    ) -> Result<Self, BusError> {
        config.validate()?;
        Ok(Self {
            store,
            db,
            js,
            streams,
            config,
            waiter: None,
        })
    }

    /// Wakes the relay as soon as `waiter`'s signal fires, instead of at the next poll.
    pub fn with_waiter(mut self, waiter: AppendWaiter) -> Self {
        self.waiter = Some(waiter);
        self
    }

    /// The relay's checkpoint: the last global position whose publish was acknowledged.
    pub async fn checkpoint(&self) -> Result<u64, BusError> {
        let position = self.db.relay_checkpoint(&self.config.name).await?;
        Ok(
            fairdeal_db::stored_u64(position, "bus_relay_checkpoints.position")
                .map_err(sqlx::Error::from)?,
        )
    }

    /// Relays until `shutdown` is cancelled, then returns after the publishes in flight are
    /// acknowledged and checkpointed. Network and database errors are logged and retried with
    /// backoff; the relay returns an error only for what needs an operator: an event that
    /// fails verification, a stream holding foreign or misordered messages, a bad setting.
    ///
    /// The streams must exist ([`super::ensure_streams`]).
    pub async fn run(mut self, shutdown: CancellationToken) -> Result<(), BusError> {
        let mut failures = 0u32;
        while !shutdown.is_cancelled() {
            let result = match self.lead(&shutdown).await {
                Ok(Some(mut lease)) => self.relay_until_error(&shutdown, &mut lease).await,
                Ok(None) => return Ok(()),
                Err(err) => Err(err),
            };
            match result {
                Ok(()) => return Ok(()),
                Err(err) if err.is_retryable() => {
                    failures = failures.saturating_add(1);
                    tracing::warn!(
                        relay = %self.config.name,
                        error = %error_chain(&err),
                        failures,
                        "relay failed; resuming from the stream's tail"
                    );
                    let wait = backoff(&self.config, failures);
                    tokio::select! {
                        () = shutdown.cancelled() => {}
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                Err(err) => {
                    tracing::error!(
                        relay = %self.config.name,
                        error = %error_chain(&err),
                        "relay stopped"
                    );
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// Waits until this relay holds the lease (`None`: shut down while standing by).
    async fn lead(&self, shutdown: &CancellationToken) -> Result<Option<Lease<DB>>, BusError> {
        let mut announced = false;
        loop {
            if let Some(lease) = self.db.try_lease(&self.config.name).await? {
                tracing::info!(relay = %self.config.name, "relay holds the lease");
                return Ok(Some(lease));
            }
            if !announced {
                tracing::info!(
                    relay = %self.config.name,
                    "another replica relays; standing by"
                );
                announced = true;
            }
            tokio::select! {
                () = shutdown.cancelled() => return Ok(None),
                () = tokio::time::sleep(self.config.standby_interval) => {}
            }
        }
    }

    /// Resumes from the tail and relays until shutdown (Ok) or the first error (a lost
    /// lease included).
    async fn relay_until_error(
        &mut self,
        shutdown: &CancellationToken,
        lease: &mut Lease<DB>,
    ) -> Result<(), BusError> {
        let mut stream = self
            .js
            .get_stream(self.streams.stream_name())
            .await
            .map_err(|err| BusError::jetstream("get events stream", err))?;
        // The connection is up (the stream was just read), so the server's INFO is known.
        check_max_payload(self.js.client().server_info().max_payload)?;
        let mut tail = self.resume_point(&mut stream).await?;
        tracing::info!(
            relay = %self.config.name,
            position = tail.position,
            sequence = tail.sequence,
            "relay resuming"
        );
        // What the checkpoint row says, and when it was last written.
        let mut saved = tail.position;
        let mut saved_at = Instant::now();
        let mut lease_checked_at = Instant::now();
        loop {
            if lease_checked_at.elapsed() >= LEASE_CHECK_INTERVAL {
                self.db.keep_lease(lease).await?;
                lease_checked_at = Instant::now();
            }
            let from = tail.position.saturating_add(1);
            let events = if shutdown.is_cancelled() {
                Vec::new()
            } else {
                self.store.read_all(from, self.config.batch_size).await?
            };
            if !events.is_empty() {
                tail = self.publish_batch(&events, tail).await?;
            }
            // Checkpoint after the acks, at most every `checkpoint_interval` while busy (a
            // write per batch would double the database load of a quiet relay), and always
            // before going idle or stopping.
            let idle = events.len() < self.config.batch_size;
            if tail.position > saved
                && (idle || saved_at.elapsed() >= self.config.checkpoint_interval)
            {
                self.save_checkpoint(tail.position).await?;
                saved = tail.position;
                saved_at = Instant::now();
            }
            if shutdown.is_cancelled() {
                return Ok(());
            }
            if events.is_empty()
                && wait_for_events(self.waiter.as_mut(), self.config.poll_interval, shutdown).await
                    == Wake::Shutdown
            {
                return Ok(());
            }
        }
    }

    /// Writes the checkpoint (never moving it backwards).
    async fn save_checkpoint(&self, position: u64) -> Result<(), BusError> {
        let position = i64::try_from(position)
            .map_err(|_| BusError::Config(format!("global position {position} exceeds i64")))?;
        let mut conn = self.db.pool().acquire().await?;
        DB::save_relay_checkpoint(self.db.sql(), &mut conn, &self.config.name, position).await?;
        Ok(())
    }

    /// Where to resume: after the last event in the stream, or after the checkpoint if the
    /// stream is behind it (e.g. recreated empty). Also moves the checkpoint up to the tail.
    async fn resume_point(&self, stream: &mut stream::Stream) -> Result<Tail, BusError> {
        let last_sequence = stream
            .info()
            .await
            .map_err(|err| BusError::jetstream("events stream info", err))?
            .state
            .last_sequence;
        let stream_position = if last_sequence == 0 {
            0
        } else {
            let last = stream
                .get_raw_message(last_sequence)
                .await
                .map_err(|err| BusError::jetstream("read the stream's last message", err))?;
            header_u64(&last.headers, HEADER_GLOBAL_POSITION).ok_or_else(|| {
                BusError::StreamInconsistent {
                    stream: self.streams.stream_name().to_owned(),
                    detail: format!(
                        "message {last_sequence} has no valid {HEADER_GLOBAL_POSITION} header"
                    ),
                }
            })?
        };
        let mut conn = self.db.pool().acquire().await?;
        let checkpoint =
            DB::load_relay_checkpoint(self.db.sql(), &mut conn, &self.config.name).await?;
        let checkpoint = fairdeal_db::stored_u64(checkpoint, "bus_relay_checkpoints.position")
            .map_err(sqlx::Error::from)?;
        if stream_position > checkpoint {
            // The previous run published beyond its last checkpoint before it stopped.
            let position = i64::try_from(stream_position).map_err(|_| {
                BusError::Config(format!("global position {stream_position} exceeds i64"))
            })?;
            DB::save_relay_checkpoint(self.db.sql(), &mut conn, &self.config.name, position)
                .await?;
        }
        Ok(Tail {
            position: stream_position.max(checkpoint),
            sequence: last_sequence,
        })
    }

    /// Publishes `events` (in position order, all after `tail`) with up to `max_in_flight`
    /// acks outstanding, and returns the new tail once every ack is in.
    #[tracing::instrument(
        level = "debug",
        name = "bus.relay.batch",
        skip_all,
        fields(
            relay = %self.config.name,
            from = events.first().map_or(0, |e| e.position),
            count = events.len(),
        )
    )]
    async fn publish_batch(
        &self,
        events: &[RecordedEvent],
        mut tail: Tail,
    ) -> Result<Tail, BusError> {
        let mut in_flight: VecDeque<(u64, u64, PublishAckFuture)> = VecDeque::new();
        let mut next_sequence = tail.sequence;
        for event in events {
            if event.position <= tail.position.max(in_flight.back().map_or(0, |f| f.0)) {
                // read_all is strictly increasing; this guards the invariant the stream's
                // numbering depends on.
                return Err(BusError::StreamInconsistent {
                    stream: self.streams.stream_name().to_owned(),
                    detail: format!("store returned position {} out of order", event.position),
                });
            }
            if in_flight.len() >= self.config.max_in_flight
                && let Some(flight) = in_flight.pop_front()
            {
                tail = self.await_ack(flight).await?;
            }
            let message = self.message(event, next_sequence);
            let ack = self
                .js
                .send_publish(self.streams.event_subject(&event.stream_id), message)
                .await
                .map_err(|err| BusError::jetstream("publish event", err))?;
            next_sequence += 1;
            in_flight.push_back((event.position, next_sequence, ack));
        }
        while let Some(flight) = in_flight.pop_front() {
            tail = self.await_ack(flight).await?;
        }
        Ok(tail)
    }

    /// Waits for one publish ack and checks it landed where expected.
    async fn await_ack(
        &self,
        (position, expected_sequence, ack): (u64, u64, PublishAckFuture),
    ) -> Result<Tail, BusError> {
        let ack = ack
            .await
            .map_err(|err| BusError::jetstream("publish ack", err))?;
        if ack.duplicate || ack.sequence != expected_sequence {
            // Someone else published into the stream (another relay?): resync from the tail.
            return Err(BusError::jetstream(
                "publish ack",
                format!(
                    "event at position {position} stored as sequence {} (duplicate: {}), expected {expected_sequence}",
                    ack.sequence, ack.duplicate
                ),
            ));
        }
        Ok(Tail {
            position,
            sequence: ack.sequence,
        })
    }

    /// The JetStream message for `event`, which must follow stream sequence `after`.
    fn message(&self, event: &RecordedEvent, after: u64) -> PublishMessage {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER_EVENT_TYPE, event.event_type.as_str());
        headers.insert(HEADER_STREAM_ID, event.stream_id.as_str());
        headers.insert(HEADER_STREAM_VERSION, event.version.to_string().as_str());
        headers.insert(HEADER_GLOBAL_POSITION, event.position.to_string().as_str());
        for key in [TRACEPARENT, TRACESTATE] {
            if let Some(value) = event.trace_context.get(key) {
                headers.insert(key, value.as_str());
            }
        }
        PublishMessage::build()
            .payload(event.encode_envelope().into())
            .headers(headers)
            .message_id(event.event_id.hyphenated().to_string())
            .expected_last_sequence(after)
    }
}

/// Reads a numeric header.
pub(crate) fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name).and_then(|v| v.as_str().parse().ok())
}

/// The wait after `failures` consecutive errors.
fn backoff(config: &RelayConfig, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(31);
    config
        .initial_backoff
        .checked_mul(1u32 << doublings)
        .map_or(config.max_backoff, |wait| wait.min(config.max_backoff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_payload_must_hold_the_largest_event() {
        // NATS's default (1 MiB) and anything from the minimum up are fine.
        assert!(check_max_payload(1024 * 1024).is_ok());
        assert!(check_max_payload(MIN_MAX_PAYLOAD).is_ok());
        for small in [
            0,
            64 * 1024,
            fairdeal_eventstore::MAX_EVENT_BYTES,
            MIN_MAX_PAYLOAD - 1,
        ] {
            let err = check_max_payload(small).unwrap_err();
            assert!(!err.is_retryable());
            assert!(err.to_string().contains("max_payload"), "{err}");
        }
    }
}
