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
//! **An event NATS refuses for good** (the client's check against the server's
//! `max_payload`, or JetStream's "message size exceeds maximum" for the stream's
//! `max_msg_size`) would otherwise be retried forever and hold every later event of every
//! stream back. The relay withholds it instead: an ERROR log line (event id, stream,
//! version, type, position, size, reason; never the payload) and the
//! `fairdeal.bus.relay.withheld` counter alert the operator, and a small placeholder takes
//! its place in the JetStream stream: same `Nats-Msg-Id`, subject and fairdeal headers, plus
//! [`HEADER_WITHHELD`] with the reason, and a one-line text payload. The stream's sequence
//! still counts the log's events without gaps, later events flow, and every consumer
//! dead-letters the placeholder (its dead letter names the event id, stream and type), so
//! the loss is visible where the event was needed; the event itself stays in the store.
//! Every other failure (network, timeouts, a full stream) is transient and retried.
//!
//! The store refuses events above [`fairdeal_eventstore::MAX_EVENT_BYTES`] at append and
//! `fairdeal_platform::Bus::start` refuses a server below [`MIN_MAX_PAYLOAD`], so a
//! withheld event means a server or stream reconfigured smaller while running: the relay
//! logs that at ERROR when it resumes on such a server, and runs on.
//!
//! Each event with a trace context is published in a `bus.relay.publish` span, child of the
//! trace that appended it (the envelope's `traceparent`); the message's `traceparent`
//! header is that span, so a JetStream consumer's span follows the relay's hop.
//!
//! Metrics (docs/operations.md): `fairdeal.bus.relay.published` and
//! `fairdeal.bus.relay.withheld` (events), `fairdeal.bus.relay.lag` (events committed to
//! the store but not yet acknowledged by JetStream, sampled after each batch and after each
//! failure), all by `relay` name.
//!
//! The checkpoint in `bus_relay_checkpoints` is written after the acks (at most every
//! `checkpoint_interval` while busy, and whenever the relay catches up or stops): it is the
//! operator's view of relay progress (and the resume point if the stream were ever recreated
//! empty), never ahead of what JetStream acknowledged.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::{PublishAckFuture, PublishError, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{self, ErrorCode, stream};
use fairdeal_eventstore::{EventStore, RecordedEvent};
use fairdeal_telemetry::metrics::{Counter, Gauge, KeyValue};
use tokio_util::sync::CancellationToken;
use tracing::Span;

use super::{
    HEADER_EVENT_ID, HEADER_EVENT_TYPE, HEADER_GLOBAL_POSITION, HEADER_STREAM_ID,
    HEADER_STREAM_VERSION, HEADER_WITHHELD, JetStreamConfig, header_text, validate_name,
};
use crate::db::{BusDatabase, BusDb, LEASE_CHECK_INTERVAL, Lease};
use crate::error::{BusError, error_chain};
use crate::restart::Restarts;
use crate::signal::{AppendWaiter, Recheck, Wake};
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

/// The relay's instruments (see the module docs).
#[derive(Debug, Clone)]
struct RelayMetrics {
    /// Events acknowledged by JetStream (placeholders included).
    published: Counter<u64>,
    /// Events replaced by a placeholder.
    withheld: Counter<u64>,
    /// Events committed but not yet acknowledged.
    lag: Gauge<u64>,
    /// `relay = <name>`.
    attributes: [KeyValue; 1],
}

impl RelayMetrics {
    fn new(name: &str) -> Self {
        Self {
            published: fairdeal_telemetry::metrics::counter(
                "fairdeal.bus.relay.published",
                "Events the relay published to JetStream",
                "{event}",
            ),
            withheld: fairdeal_telemetry::metrics::counter(
                "fairdeal.bus.relay.withheld",
                "Events NATS refused for good, published as a placeholder instead",
                "{event}",
            ),
            lag: fairdeal_telemetry::metrics::gauge(
                "fairdeal.bus.relay.lag",
                "Events committed to the store but not yet published",
                "{event}",
            ),
            attributes: [KeyValue::new("relay", name.to_owned())],
        }
    }
}

/// One publish awaiting its ack.
struct InFlight {
    /// Index of the event in the batch.
    index: usize,
    /// The stream sequence it must get.
    expected_sequence: u64,
    /// The ack.
    ack: PublishAckFuture,
    /// The publish span, ended with the ack.
    _span: Option<Span>,
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
    /// Its instruments.
    metrics: RelayMetrics,
    /// Global position of the last event acknowledged by JetStream (for the lag).
    published_to: u64,
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
            metrics: RelayMetrics::new(&config.name),
            store,
            db,
            js,
            streams,
            config,
            waiter: None,
            published_to: 0,
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
        let name = self.config.name.clone();
        let backoff = (self.config.initial_backoff, self.config.max_backoff);
        let mut restarts = Restarts::new("relay", &name, backoff);
        while !shutdown.is_cancelled() {
            let result = match self.lead(&shutdown).await {
                Ok(Some(mut lease)) => self.relay_until_error(&shutdown, &mut lease).await,
                Ok(None) => return Ok(()),
                Err(err) => Err(err),
            };
            if result.as_ref().is_err_and(BusError::is_retryable) {
                // It resumes from the stream's tail. A relay stuck on NATS falls behind: the
                // lag must show it. Before its first resume, what it published is what its
                // checkpoint says.
                if self.published_to == 0 {
                    self.published_to = self.checkpoint().await.unwrap_or(0);
                }
                if let Ok(head) = self.store.head_position().await {
                    self.record_lag(head);
                }
            }
            if let Some(end) = restarts.after(result, &shutdown).await {
                return end;
            }
        }
        Ok(())
    }

    /// Waits until this relay holds the lease (`None`: shut down while standing by).
    async fn lead(&self, shutdown: &CancellationToken) -> Result<Option<Lease<DB>>, BusError> {
        let name = &self.config.name;
        let lease = self
            .db
            .lead(name, self.config.standby_interval, shutdown, || {
                tracing::info!(relay = %name, "another replica relays; standing by");
            })
            .await?;
        if lease.is_some() {
            tracing::info!(relay = %name, "relay holds the lease");
        }
        Ok(lease)
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
        // The connection is up (the stream was just read), so the server's INFO is known. A
        // server reconfigured below the minimum while the service ran: say so loudly, and
        // run on (withholding what does not fit) rather than hold every later event back.
        if let Err(err) = check_max_payload(self.js.client().server_info().max_payload) {
            tracing::error!(
                relay = %self.config.name,
                error = %err,
                "events above the server's max_payload will be withheld"
            );
        }
        let mut tail = self.resume_point(&mut stream).await?;
        self.published_to = tail.position;
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
        let mut recheck = Recheck::new();
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
                recheck.found();
                tail = self.publish_batch(&events, tail).await?;
                self.published_to = tail.position;
                // A short batch reached the head as it was read; a full one may be behind.
                if events.len() < self.config.batch_size {
                    self.metrics.lag.record(0, &self.metrics.attributes);
                } else {
                    let head = self.store.head_position().await?;
                    self.record_lag(head);
                }
            }
            // Checkpoint after the acks, at most every `checkpoint_interval` while events
            // keep coming (a commit per batch would cost the database about as much as the
            // relay's reads), and always before waiting for more or stopping.
            let (idle, stopping) = (events.is_empty(), shutdown.is_cancelled());
            if tail.position > saved
                && (idle || stopping || saved_at.elapsed() >= self.config.checkpoint_interval)
            {
                self.save_checkpoint(tail.position).await?;
                saved = tail.position;
                saved_at = Instant::now();
            }
            if stopping {
                return Ok(());
            }
            if idle
                && recheck
                    .wait(self.waiter.as_mut(), self.config.poll_interval, shutdown)
                    .await
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
        let mut in_flight: VecDeque<InFlight> = VecDeque::new();
        // Each publish must follow the one before it: the first follows the tail.
        for (after, (index, event)) in (tail.sequence..).zip(events.iter().enumerate()) {
            let last_sent = in_flight
                .back()
                .and_then(|f| events.get(f.index))
                .map_or(0, |e| e.position);
            if event.position <= tail.position.max(last_sent) {
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
                match self.await_ack(events, flight).await? {
                    Acked::Stored(stored) => tail = stored,
                    // Publishes behind it were refused by their expected sequence: the
                    // placeholder takes its place, and the next batch starts after it.
                    Acked::Refused { index, reason } => {
                        return self.withhold(events, index, &reason, tail).await;
                    }
                }
            }
            let span = publish_span(event);
            let message = self.message(event, after, span.as_ref(), None);
            let ack = match self
                .js
                .send_publish(self.streams.event_subject(&event.stream_id), message)
                .await
            {
                Ok(ack) => ack,
                Err(err) => {
                    let Some(reason) = refused_for_good(&err) else {
                        return Err(BusError::jetstream("publish event", err));
                    };
                    // Never sent: settle what is in flight (all before it), then withhold.
                    while let Some(flight) = in_flight.pop_front() {
                        match self.await_ack(events, flight).await? {
                            Acked::Stored(stored) => tail = stored,
                            Acked::Refused { index, reason } => {
                                return self.withhold(events, index, &reason, tail).await;
                            }
                        }
                    }
                    return self.withhold(events, index, &reason, tail).await;
                }
            };
            in_flight.push_back(InFlight {
                index,
                expected_sequence: after + 1,
                ack,
                _span: span,
            });
        }
        while let Some(flight) = in_flight.pop_front() {
            match self.await_ack(events, flight).await? {
                Acked::Stored(stored) => tail = stored,
                Acked::Refused { index, reason } => {
                    return self.withhold(events, index, &reason, tail).await;
                }
            }
        }
        Ok(tail)
    }

    /// Waits for one publish ack and checks it landed where expected.
    async fn await_ack(
        &self,
        events: &[RecordedEvent],
        flight: InFlight,
    ) -> Result<Acked, BusError> {
        let InFlight {
            index,
            expected_sequence,
            ack,
            _span,
        } = flight;
        let position = events.get(index).map_or(0, |e| e.position);
        let ack = match ack.await {
            Ok(ack) => ack,
            Err(err) => {
                return match refused_for_good(&err) {
                    Some(reason) => Ok(Acked::Refused { index, reason }),
                    None => Err(BusError::jetstream("publish ack", err)),
                };
            }
        };
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
        self.metrics.published.add(1, &self.metrics.attributes);
        Ok(Acked::Stored(Tail {
            position,
            sequence: ack.sequence,
        }))
    }

    /// Publishes a placeholder in place of `events[index]`, which NATS refused for good
    /// (see the module docs), right after `tail`; returns the tail after it.
    async fn withhold(
        &self,
        events: &[RecordedEvent],
        index: usize,
        reason: &str,
        tail: Tail,
    ) -> Result<Tail, BusError> {
        let Some(event) = events.get(index) else {
            return Err(BusError::StreamInconsistent {
                stream: self.streams.stream_name().to_owned(),
                detail: format!("refused publish {index} is not in the batch"),
            });
        };
        let reason: String = header_text(reason).chars().take(300).collect();
        tracing::error!(
            relay = %self.config.name,
            event_id = %event.event_id,
            stream_id = event.stream_id.as_str(),
            stream_version = event.version,
            event_type = event.event_type.as_str(),
            position = event.position,
            envelope_bytes = event.encode_envelope().len(),
            reason = %reason,
            "NATS refused the event for good; publishing a placeholder in its place (the \
             event stays in the store; consumers dead-letter the placeholder)"
        );
        let span = publish_span(event);
        let message = self.message(event, tail.sequence, span.as_ref(), Some(&reason));
        let ack = self
            .js
            .send_publish(self.streams.event_subject(&event.stream_id), message)
            .await
            .map_err(|err| BusError::jetstream("publish placeholder", err))?;
        let flight = InFlight {
            index,
            expected_sequence: tail.sequence + 1,
            ack,
            _span: span,
        };
        match self.await_ack(events, flight).await? {
            Acked::Stored(stored) => {
                self.metrics.withheld.add(1, &self.metrics.attributes);
                Ok(stored)
            }
            Acked::Refused { reason, .. } => Err(BusError::jetstream(
                "publish placeholder",
                format!("refused: {reason}"),
            )),
        }
    }

    /// Records the lag behind `head` (the store's last global position).
    fn record_lag(&self, head: u64) {
        self.metrics.lag.record(
            head.saturating_sub(self.published_to),
            &self.metrics.attributes,
        );
    }

    /// The JetStream message for `event`, which must follow stream sequence `after`, with
    /// the trace context of `span` (else the envelope's); with `withheld`, the placeholder
    /// carrying that reason instead of the envelope.
    fn message(
        &self,
        event: &RecordedEvent,
        after: u64,
        span: Option<&Span>,
        withheld: Option<&str>,
    ) -> PublishMessage {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER_EVENT_TYPE, event.event_type.as_str());
        headers.insert(
            HEADER_EVENT_ID,
            event.event_id.hyphenated().to_string().as_str(),
        );
        headers.insert(HEADER_STREAM_ID, event.stream_id.as_str());
        headers.insert(HEADER_STREAM_VERSION, event.version.to_string().as_str());
        headers.insert(HEADER_GLOBAL_POSITION, event.position.to_string().as_str());
        let mut trace = fairdeal_telemetry::propagation::TraceCarrier::new();
        if let Some(span) = span {
            fairdeal_telemetry::propagation::inject_span(span, &mut trace);
        }
        let trace = if trace.is_empty() {
            &event.trace_context
        } else {
            &trace
        };
        for key in [TRACEPARENT, TRACESTATE] {
            if let Some(value) = trace.get(key) {
                headers.insert(key, value.as_str());
            }
        }
        let payload = match withheld {
            None => event.encode_envelope(),
            Some(reason) => {
                headers.insert(HEADER_WITHHELD, reason);
                format!(
                    "withheld by the relay: {reason}; event {} ({}) version {} of stream {} is \
                     in the store at position {}",
                    event.event_id,
                    event.event_type,
                    event.version,
                    event.stream_id.as_str(),
                    event.position
                )
                .into_bytes()
            }
        };
        PublishMessage::build()
            .payload(payload.into())
            .headers(headers)
            .message_id(event.event_id.hyphenated().to_string())
            .expected_last_sequence(after)
    }
}

/// What became of one publish.
enum Acked {
    /// Stored where expected.
    Stored(Tail),
    /// Refused for good (see [`refused_for_good`]): `events[index]` must be withheld.
    Refused {
        /// Index of the event in the batch.
        index: usize,
        /// NATS's reason.
        reason: String,
    },
}

/// Whether NATS refused a publish for a reason retrying cannot change: the message is
/// larger than the server's `max_payload` (refused by the client before sending) or than the
/// stream's maximum message size (refused by JetStream).
fn refused_for_good(err: &PublishError) -> Option<String> {
    let too_large = match err.kind() {
        PublishErrorKind::MaxPayloadExceeded => true,
        PublishErrorKind::Other => std::error::Error::source(err)
            .and_then(|source| source.downcast_ref::<jetstream::Error>())
            .is_some_and(|api| {
                matches!(
                    api.error_code(),
                    ErrorCode::STREAM_MESSAGE_EXCEEDS_MAXIMUM
                        | ErrorCode::STREAM_HEADER_EXCEEDS_MAXIMUM
                )
            }),
        _ => false,
    };
    too_large.then(|| error_chain(err))
}

/// The span `event` is published in: child of the trace that appended it. None when the
/// event carries no trace, or no subscriber records the span (no cost then).
fn publish_span(event: &RecordedEvent) -> Option<Span> {
    if !event.trace_context.contains_key(TRACEPARENT) {
        return None;
    }
    let span = tracing::info_span!(
        "bus.relay.publish",
        otel.kind = "producer",
        event_id = %event.event_id,
        event_type = event.event_type.as_str(),
        stream_id = event.stream_id.as_str(),
        stream_version = event.version,
        position = event.position,
    );
    if span.is_disabled() {
        return None;
    }
    fairdeal_telemetry::propagation::set_parent(&span, &event.trace_context);
    Some(span)
}

/// Reads a numeric header.
pub(crate) fn header_u64(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name).and_then(|v| v.as_str().parse().ok())
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
