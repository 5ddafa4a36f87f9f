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
//! - raw PostgreSQL single-row INSERT, one commit per row, from 1 and 8 connections (each
//!   right before the pipeline phase with as many writers);
//! - the bus pipeline with 1 and 8 concurrent writers, each appending one 300-byte event per
//!   append (one transaction each) through `PgEventStore`, relayed to JetStream and applied by
//!   a durable JetStream consumer whose handler inserts one projection row per event.
//!   Latency runs from the event's creation just before `append` to the handler's call.
//!
//! - the same with 256 writers (the store gathers concurrent appends into group commits):
//!   appends/s, and end to end: events/s from the phase's start until the consumer has
//!   applied the last one.
//!
//! `BUS_BENCH_PHASES` overrides the phases: `writers:appends_per_writer,...` (default
//! `1:3000,8:1000,256:40`).
//!
//! `BUS_BENCH_CONSUMER_BATCH` overrides the consumer's batch size (default 256): smaller
//! batches commit more often, which caps the consumer's rate below what 8 writers append.
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
const EVENTS_ONE_WRITER: usize = 3_000;
const EVENTS_PER_WRITER_OF_EIGHT: usize = 1_000;
const EVENTS_PER_WRITER_OF_256: usize = 40;

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

/// Records append-to-handler latency and writes one projection row per event.
#[derive(Debug, Default)]
struct LatencyProbe {
    latencies: Mutex<Vec<Duration>>,
}

impl Handler<Postgres> for LatencyProbe {
    async fn handle(
        &self,
        event: &RecordedEvent,
        tx: &mut Transaction<'_, Postgres>,
    ) -> Result<(), HandlerError> {
        let latency = SystemTime::now()
            .duration_since(event.occurred_at)
            .unwrap_or_default();
        sqlx::query("INSERT INTO public.projection (event_id, stream_id) VALUES ($1, $2)")
            .bind(event.event_id)
            .bind(event.stream_id.as_str())
            .execute(&mut **tx)
            .await?;
        self.latencies.lock().unwrap().push(latency);
        Ok(())
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

/// Appends `per_writer` single-event appends from each of `writers` tasks; returns appends/s.
async fn append_load(store: &Arc<dyn EventStore>, writers: usize, per_writer: usize) -> f64 {
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|_| {
            let store = Arc::clone(store);
            tokio::spawn(async move {
                let stream_id = StreamId::of("table", Uuid::now_v7()).unwrap();
                for _ in 0..per_writer {
                    let event = NewEvent::new("fairdeal.bench.v1.Happened", vec![7u8; PAYLOAD]);
                    store
                        .append(&stream_id, ExpectedVersion::Any, vec![event])
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    (writers * per_writer) as f64 / started.elapsed().as_secs_f64()
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
    let probe = Arc::new(LatencyProbe::default());
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

    let phases: Vec<(usize, usize)> = std::env::var("BUS_BENCH_PHASES")
        .ok()
        .map(|v| {
            v.split(',')
                .filter_map(|p| {
                    let (w, n) = p.split_once(':')?;
                    Some((w.parse().ok()?, n.parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_else(|| {
            vec![
                (1, EVENTS_ONE_WRITER),
                (8, EVENTS_PER_WRITER_OF_EIGHT),
                (256, EVENTS_PER_WRITER_OF_256),
            ]
        });
    let mut applied = 0;
    for (writers, per_writer) in phases {
        // The raw baseline right before the phase: the machine's fsync rate drifts.
        let raw_insert = raw_postgres(pg, writers).await;
        probe.latencies.lock().unwrap().clear();
        let started = Instant::now();
        let rate = append_load(&store, writers, per_writer).await;
        applied += writers * per_writer;
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
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let end_to_end = (writers * per_writer) as f64 / started.elapsed().as_secs_f64();
        let mut latencies = probe.latencies.lock().unwrap().clone();
        latencies.sort();
        println!(
            "bus pipeline, {writers} writer(s): {rate:>7.0} appends/s ({:.2}x raw INSERT at the same concurrency), end to end {end_to_end:>7.0} events/s   append->consumer p50 {}, p99 {}   ({} events)",
            rate / raw_insert,
            micros(percentile(&latencies, 50)),
            micros(percentile(&latencies, 99)),
            latencies.len()
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
