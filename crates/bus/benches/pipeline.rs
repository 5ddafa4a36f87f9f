//! Pipeline benchmark: appends/s and append-to-consumer latency on PostgreSQL + JetStream,
//! beside the raw rates of the two servers measured in the same run.
//!
//! Needs NATS with JetStream and PostgreSQL: the servers `FAIRDEAL_TEST_NATS_URL` and
//! `FAIRDEAL_TEST_POSTGRES_URL` name (default: the standard ports on 127.0.0.1); creates and
//! removes its own database and streams. With throwaway servers:
//!
//! ```text
//! cargo xtask services     # in another shell; then paste its `export` lines here
//! cargo bench -p fairdeal-bus --bench pipeline
//! ```
//!
//! Measured:
//! - raw JetStream publish of 300-byte messages to a file-backed stream, awaiting each ack,
//!   and with 256 acks in flight;
//! - raw PostgreSQL single-row INSERT, one commit per row, from 1, 8 and 256 connections;
//! - the bus pipeline: writers appending one 300-byte event per append through
//!   `PgEventStore` (the store gathers concurrent appends into group commits), relayed to
//!   JetStream and applied by a durable JetStream consumer whose handler takes whole batches
//!   and writes one projection row per event in one statement per batch. Each phase runs for
//!   a fixed time; it reports appends/s, end-to-end events/s (the phase's events over the
//!   time until the consumer applied the last of them) and the latency from the event's
//!   creation, just before `append`, to the handler.
//!
//! `BUS_BENCH_PHASES` sets the phases: `writers:seconds[@events_per_second],...`. Without a
//! rate the writers append as fast as the store answers (closed loop); with one they are
//! paced to that total rate. Default `1:3,8:3,256:5,256:5@20000`.
//!
//! `BUS_BENCH_HANDLER=event` makes the consumer's handler write one row per call instead
//! (`Handler::handle`, a statement per event), for comparison.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_nats::jetstream::{self, stream};
use fairdeal_bus::{
    AppendSignal, BusDb, Handler, HandlerError, JetStreamConfig, JetStreamConsumer,
    JetStreamConsumerConfig, NotifyingEventStore, Relay, RelayConfig, ensure_streams,
};
use fairdeal_eventstore::conformance::{Backend, PgBackend};
use fairdeal_eventstore::{EventStore, ExpectedVersion, NewEvent, RecordedEvent, StreamId};
use sqlx::{Postgres, Transaction};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

const PAYLOAD: usize = 300;
const RAW_AWAITED: usize = 3_000;
const RAW_PIPELINED: usize = 30_000;
const IN_FLIGHT: usize = 256;
const RAW_INSERTS: usize = 3_000;

/// The p-th percentile (0..=100) of sorted samples.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = (sorted.len() * p / 100).min(sorted.len() - 1);
    sorted[index]
}

fn micros(d: Duration) -> String {
    format!("{:.0} us", d.as_secs_f64() * 1e6)
}

/// Records append-to-handler latency and writes one projection row per event: one statement
/// per batch, or (with `per_event`) one per event.
#[derive(Debug, Default)]
struct LatencyProbe {
    latencies: Mutex<Vec<Duration>>,
    /// Handler calls (a batch, or one event).
    calls: std::sync::atomic::AtomicUsize,
    per_event: bool,
}

impl LatencyProbe {
    fn record(&self, events: &[&RecordedEvent]) {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = SystemTime::now();
        let mut latencies = self.latencies.lock().unwrap();
        for event in events {
            latencies.push(now.duration_since(event.occurred_at).unwrap_or_default());
        }
    }
}

impl Handler<Postgres> for LatencyProbe {
    async fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), HandlerError> {
        self.record(&[event]);
        sqlx::query("INSERT INTO public.projection (event_id, stream_id) VALUES ($1, $2)")
            .bind(event.event_id)
            .bind(event.stream_id.as_str())
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    async fn handle_batch(
        &self,
        events: &[&RecordedEvent],
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), HandlerError> {
        self.record(events);
        let ids: Vec<Uuid> = events.iter().map(|e| e.event_id).collect();
        let streams: Vec<&str> = events.iter().map(|e| e.stream_id.as_str()).collect();
        sqlx::query(
            "INSERT INTO public.projection (event_id, stream_id) \
             SELECT * FROM UNNEST($1::uuid[], $2::text[])",
        )
        .bind(ids)
        .bind(streams)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    fn batches(&self) -> bool {
        !self.per_event
    }
}

async fn raw_jetstream(js: &jetstream::Context, prefix: &str) {
    // Stream names take no dots; the subject prefix has some.
    let name = format!("{}_RAW", prefix.to_ascii_uppercase().replace('.', "_"));
    let subject = format!("{prefix}.raw");
    js.create_stream(stream::Config {
        name: name.clone(),
        subjects: vec![subject.clone()],
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .unwrap();
    let payload = bytes::Bytes::from(vec![7u8; PAYLOAD]);

    let mut samples = Vec::with_capacity(RAW_AWAITED);
    let started = Instant::now();
    for _ in 0..RAW_AWAITED {
        let one = Instant::now();
        js.publish(subject.clone(), payload.clone())
            .await
            .unwrap()
            .await
            .unwrap();
        samples.push(one.elapsed());
    }
    let rate = RAW_AWAITED as f64 / started.elapsed().as_secs_f64();
    samples.sort();
    println!(
        "raw JetStream publish, await each ack:   {rate:>9.0} msg/s   (ack p50 {}, p99 {})",
        micros(percentile(&samples, 50)),
        micros(percentile(&samples, 99))
    );

    let started = Instant::now();
    let mut in_flight = VecDeque::with_capacity(IN_FLIGHT);
    for _ in 0..RAW_PIPELINED {
        if in_flight.len() == IN_FLIGHT {
            let ack: jetstream::context::PublishAckFuture = in_flight.pop_front().unwrap();
            ack.await.unwrap();
        }
        in_flight.push_back(js.publish(subject.clone(), payload.clone()).await.unwrap());
    }
    for ack in in_flight {
        ack.await.unwrap();
    }
    let rate = RAW_PIPELINED as f64 / started.elapsed().as_secs_f64();
    println!("raw JetStream publish, {IN_FLIGHT} acks in flight: {rate:>9.0} msg/s");
    js.delete_stream(&name).await.unwrap();
}

/// Single-row INSERTs, one commit each, from `writers` concurrent connections; rows/s.
async fn raw_postgres(pg: &PgBackend, writers: usize) -> f64 {
    let pool = pg.pg_store().pool();
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS public.raw_insert \
         (id BIGSERIAL PRIMARY KEY, payload BYTEA NOT NULL)",
    )
    .execute(pool)
    .await
    .unwrap();
    let per_writer = RAW_INSERTS / writers;
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let payload = vec![7u8; PAYLOAD];
                for _ in 0..per_writer {
                    sqlx::query("INSERT INTO public.raw_insert (payload) VALUES ($1)")
                        .bind(&payload)
                        .execute(&pool)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let rate = (per_writer * writers) as f64 / started.elapsed().as_secs_f64();
    println!(
        "raw PostgreSQL INSERT, one row per commit, {writers} connection(s): {rate:>7.0} rows/s"
    );
    rate
}

/// One phase: `writers` concurrent writers, for `seconds`, closed loop or paced to `rate`
/// events/s in all.
#[derive(Debug, Clone, Copy)]
struct Phase {
    writers: usize,
    seconds: f64,
    rate: Option<f64>,
}

impl Phase {
    fn parse(text: &str) -> Option<Self> {
        let (writers, rest) = text.split_once(':')?;
        let (seconds, rate) = match rest.split_once('@') {
            Some((seconds, rate)) => (seconds, Some(rate.parse().ok()?)),
            None => (rest, None),
        };
        Some(Self {
            writers: writers.parse().ok()?,
            seconds: seconds.parse().ok()?,
            rate,
        })
    }
}

/// Runs `phase`'s writers, each appending one event per call to its own stream; returns
/// each append's latency.
async fn append_load(store: &Arc<dyn EventStore>, phase: Phase) -> Vec<Duration> {
    let run = Duration::from_secs_f64(phase.seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..phase.writers)
        .map(|w| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let stream_id = StreamId::of("table", Uuid::now_v7()).unwrap();
                let mut pace = phase.rate.map(|rate| {
                    let period = Duration::from_secs_f64(phase.writers as f64 / rate);
                    // Writers start spread over one period, as independent clients would.
                    let offset = period.mul_f64(w as f64 / phase.writers as f64);
                    let mut pace =
                        tokio::time::interval_at(tokio::time::Instant::now() + offset, period);
                    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    pace
                });
                let mut latencies = Vec::new();
                let mut version = 0u64;
                while started.elapsed() < run {
                    if let Some(pace) = pace.as_mut() {
                        pace.tick().await;
                    }
                    let sent = Instant::now();
                    let event = NewEvent::new("fairdeal.bench.v1.Happened", vec![7u8; PAYLOAD]);
                    store
                        .append(&stream_id, ExpectedVersion::Exact(version), vec![event])
                        .await
                        .unwrap();
                    latencies.push(sent.elapsed());
                    version += 1;
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    latencies.sort();
    latencies
}

async fn pipeline(pg: &PgBackend, js: &jetstream::Context, prefix: &str) {
    let db = BusDb::postgres(pg.pg_store().pool().clone(), "eventstore").unwrap();
    db.migrate().await.unwrap();
    sqlx::query("CREATE TABLE public.projection (event_id UUID PRIMARY KEY, stream_id TEXT)")
        .execute(db.pool())
        .await
        .unwrap();
    let streams = JetStreamConfig::new(prefix).unwrap();
    ensure_streams(js, &streams).await.unwrap();

    let signal = AppendSignal::new();
    let store: Arc<dyn EventStore> = Arc::new(NotifyingEventStore::new(
        Arc::new(pg.pg_store().clone()),
        signal.clone(),
    ));
    let shutdown = CancellationToken::new();
    let relay = Relay::new(
        Arc::new(pg.pg_store().clone()),
        db.clone(),
        js.clone(),
        streams.clone(),
        RelayConfig::new("relay"),
    )
    .unwrap()
    .with_waiter(signal.subscribe());
    let relay = tokio::spawn(relay.run(shutdown.clone()));
    let probe = Arc::new(LatencyProbe {
        per_event: std::env::var("BUS_BENCH_HANDLER").is_ok_and(|h| h == "event"),
        ..LatencyProbe::default()
    });
    let consumer = JetStreamConsumer::new(
        js.clone(),
        streams.clone(),
        db.clone(),
        Arc::clone(&probe),
        {
            let mut config = JetStreamConsumerConfig::new("projection");
            if let Some(batch) = std::env::var("BUS_BENCH_CONSUMER_BATCH")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                config.batch_size = batch;
            }
            config
        },
    )
    .unwrap();
    let consumer = tokio::spawn(consumer.run(shutdown.clone()));

    let phases: Vec<Phase> = std::env::var("BUS_BENCH_PHASES")
        .unwrap_or_else(|_| "1:3,8:3,256:5,256:5@20000".to_owned())
        .split(',')
        .map(|p| Phase::parse(p).unwrap_or_else(|| panic!("BUS_BENCH_PHASES: bad phase {p:?}")))
        .collect();
    let mut applied = 0;
    for phase in phases {
        // The raw baseline right before the phase: the machine's fsync rate drifts.
        let raw_insert = raw_postgres(pg, phase.writers).await;
        probe.latencies.lock().unwrap().clear();
        probe.calls.store(0, std::sync::atomic::Ordering::Relaxed);
        let started = Instant::now();
        // With BUS_BENCH_PROGRESS, a line a second: events in the store, in the JetStream
        // stream, and applied (where a backlog builds up shows which stage bounds the rate).
        // Also with BUS_BENCH_PROGRESS: a plain NATS subscriber on the events subjects, for
        // the latency from creation to the relay's publish.
        let relayed_latencies = std::env::var_os("BUS_BENCH_PROGRESS").map(|_| {
            let latencies = Arc::new(Mutex::new(Vec::new()));
            let (client, subject, into) = (
                js.client(),
                format!("{prefix}.events.>"),
                Arc::clone(&latencies),
            );
            let task = tokio::spawn(async move {
                let mut sub = client.subscribe(subject).await.unwrap();
                use futures::StreamExt;
                while let Some(message) = sub.next().await {
                    if let Ok(event) = RecordedEvent::decode_envelope(0, &message.payload) {
                        let latency = SystemTime::now()
                            .duration_since(event.occurred_at)
                            .unwrap_or_default();
                        into.lock().unwrap().push(latency);
                    }
                }
            });
            (latencies, task)
        });
        let progress = std::env::var_os("BUS_BENCH_PROGRESS").map(|_| {
            let (js, db, name) = (js.clone(), db.clone(), streams.stream_name().to_owned());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM eventstore.events")
                        .fetch_one(db.pool())
                        .await
                        .unwrap();
                    let relayed = js
                        .get_stream(&name)
                        .await
                        .unwrap()
                        .cached_info()
                        .state
                        .messages;
                    let done: i64 = sqlx::query_scalar("SELECT count(*) FROM public.projection")
                        .fetch_one(db.pool())
                        .await
                        .unwrap();
                    println!(
                        "  {:>5.1} s: stored {stored}, relayed {relayed}, applied {done}",
                        started.elapsed().as_secs_f64()
                    );
                }
            })
        });
        let append_latencies = append_load(&store, phase).await;
        let appended = append_latencies.len();
        let appending = started.elapsed().as_secs_f64();
        applied += appended;
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let done: i64 = sqlx::query_scalar("SELECT count(*) FROM public.projection")
                .fetch_one(db.pool())
                .await
                .unwrap();
            if usize::try_from(done).unwrap() >= applied {
                break;
            }
            assert!(Instant::now() < deadline, "consumer fell behind for 300 s");
            // The consumer's progress is a row count: poll it.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let end_to_end = appended as f64 / started.elapsed().as_secs_f64();
        if let Some(progress) = progress {
            progress.abort();
        }
        if let Some((latencies, task)) = relayed_latencies {
            task.abort();
            let mut latencies = latencies.lock().unwrap().clone();
            latencies.sort();
            println!(
                "  append->published to JetStream: p50 {}, p99 {}",
                micros(percentile(&latencies, 50)),
                micros(percentile(&latencies, 99))
            );
        }
        let rate = appended as f64 / appending;
        let mut latencies = probe.latencies.lock().unwrap().clone();
        latencies.sort();
        let load = match phase.rate {
            Some(rate) => format!("paced to {rate:.0}/s"),
            None => "closed loop".to_owned(),
        };
        println!(
            "bus pipeline, {} writer(s), {load}, {:.0} s: {rate:>7.0} appends/s ({:.2}x raw INSERT at the same concurrency), end to end {end_to_end:>7.0} events/s   append->consumer p50 {}, p99 {}, max {}   ({} events)",
            phase.writers,
            phase.seconds,
            rate / raw_insert,
            micros(percentile(&latencies, 50)),
            micros(percentile(&latencies, 99)),
            micros(latencies.last().copied().unwrap_or_default()),
            latencies.len()
        );
        println!(
            "  append: p50 {}, p99 {}",
            micros(percentile(&append_latencies, 50)),
            micros(percentile(&append_latencies, 99))
        );
        let calls = probe.calls.load(std::sync::atomic::Ordering::Relaxed);
        println!(
            "  consumer: {calls} handler calls, {:.1} events each",
            latencies.len() as f64 / calls.max(1) as f64
        );
    }

    shutdown.cancel();
    relay.await.unwrap().unwrap();
    consumer.await.unwrap().unwrap();
    let _ = js.delete_stream(streams.stream_name()).await;
    let _ = js.delete_stream(streams.dead_letter_stream_name()).await;
}

#[tokio::main]
async fn main() {
    let client = async_nats::connect(fairdeal_testkit::nats_url())
        .await
        .expect("NATS with JetStream (FAIRDEAL_TEST_NATS_URL)");
    let js = jetstream::new(client);
    let prefix = fairdeal_testkit::subject_prefix("bench");
    let pg = PgBackend::create().await;

    println!("fairdeal-bus pipeline benchmark ({PAYLOAD}-byte payloads)");
    raw_jetstream(&js, &prefix).await;
    pipeline(&pg, &js, &prefix).await;
    pg.cleanup().await;
}
