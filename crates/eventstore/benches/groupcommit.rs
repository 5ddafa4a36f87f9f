//! Group-commit throughput and latency, side by side with a raw baseline, in one run.
//!
//! `cargo bench -p fairdeal-eventstore --features conformance --bench groupcommit`
//! (`GC_SECONDS=n` sets the length of each case, default 3).
//!
//! - baseline: raw sqlx, 100-row UNNEST inserts (one autocommit statement each) over 8
//!   connections into a copy of the `events` table (`LIKE ... INCLUDING ALL`: the same
//!   columns, constraints and unique indexes, no triggers), positions from the xid as the store
//!   makes them;
//! - the store: `append` of one ~300-byte event per call by 1, 8, 64 and 256 concurrent
//!   writers, each on its own stream: events/s, p50 and p99 of the append call;
//! - the same behind fences (issue 33: each writer's stream in one of 64 partitions whose
//!   leases the bench holds, each append checked against its lease in the appending
//!   statement), right after each unfenced case: the fence's cost as a ratio of the same run;
//! - the embedded store (SQLite, WAL, synchronous=FULL) with 1 and 64 writers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use fairdeal_eventstore::conformance::{Backend, PgBackend, SqliteBackend};
use fairdeal_eventstore::{EventStore, ExpectedVersion, Fence, NewEvent, StreamId};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

fn payload(n: u64) -> Vec<u8> {
    // ~300 bytes, the size MEASUREMENTS uses.
    n.to_be_bytes().iter().copied().cycle().take(300).collect()
}

fn event(n: u64) -> NewEvent {
    NewEvent::new("fairdeal.bench.v1.Appended", payload(n)).with_correlation_id("bench")
}

fn seconds() -> Duration {
    let s = std::env::var("GC_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(s)
}

struct Figure {
    name: String,
    events_per_s: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// The partitions of the fenced cases, each leased to the bench for the run.
const PARTITIONS: u32 = 64;

/// `writers` tasks, each appending one event per call to its own stream until the time is
/// up; with `fenced`, behind the lease of the stream's partition (writer modulo
/// [`PARTITIONS`]).
async fn appends(name: String, store: Arc<dyn EventStore>, writers: usize, fenced: bool) -> Figure {
    let run = seconds();
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let store = store.clone();
            let fence = fenced.then(|| Fence {
                partition: u32::try_from(writer).unwrap() % PARTITIONS,
                owner: "bench".into(),
                epoch: 1,
            });
            tokio::spawn(async move {
                let s = StreamId::of("bench", Uuid::now_v7()).unwrap();
                let mut latencies = Vec::new();
                let mut version = 0u64;
                while start.elapsed() < run {
                    let t = Instant::now();
                    let expected = ExpectedVersion::Exact(version);
                    let events = vec![event(version)];
                    match &fence {
                        None => store.append(&s, expected, events).await,
                        Some(fence) => store.append_fenced(&s, expected, events, fence).await,
                    }
                    .unwrap();
                    latencies.push(t.elapsed());
                    version += 1;
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed().as_secs_f64();
    all.sort();
    Figure {
        name,
        events_per_s: all.len() as f64 / elapsed,
        p50_ms: Some(percentile(&all, 0.50)),
        p99_ms: Some(percentile(&all, 0.99)),
    }
}

async fn raw_baseline(backend: &PgBackend) -> Figure {
    const CONNECTIONS: usize = 8;
    const ROWS: usize = 100;
    let pool = fairdeal_db::postgres_pool_options()
        .max_connections(CONNECTIONS as u32)
        .connect_with(backend.connect_options())
        .await
        .unwrap();
    sqlx::query("CREATE TABLE eventstore.raw_events (LIKE eventstore.events INCLUDING ALL)")
        .execute(&pool)
        .await
        .unwrap();
    let run = seconds();
    let start = Instant::now();
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut rows = 0usize;
                let mut n = 0u64;
                while start.elapsed() < run {
                    let ids: Vec<Uuid> = (0..ROWS).map(|_| Uuid::now_v7()).collect();
                    let streams: Vec<String> = (0..ROWS)
                        .map(|_| format!("bench-{}", Uuid::now_v7().simple()))
                        .collect();
                    let payloads: Vec<Vec<u8>> = (0..ROWS).map(|i| payload(n + i as u64)).collect();
                    let hashes: Vec<Vec<u8>> = (0..ROWS).map(|_| vec![7u8; 32]).collect();
                    n += ROWS as u64;
                    sqlx::query(
                        "INSERT INTO eventstore.raw_events (position, tx_id, event_id, \
                             stream_id, version, event_type, occurred_at_us, correlation_id, \
                             causation_id, trace_context, payload, prev_hash, hash) \
                         SELECT (pg_current_xact_id()::text::bigint << 20) + u.ord - 1, \
                             pg_current_xact_id(), u.id, u.stream, 1, \
                             'fairdeal.bench.v1.Appended', 1764000000000000, 'bench', '', \
                             '{}'::jsonb, u.payload, u.hash, u.hash \
                         FROM UNNEST($1::uuid[], $2::text[], $3::bytea[], $4::bytea[]) \
                             WITH ORDINALITY AS u(id, stream, payload, hash, ord)",
                    )
                    .bind(ids)
                    .bind(streams)
                    .bind(payloads)
                    .bind(hashes)
                    .execute(&pool)
                    .await
                    .unwrap();
                    rows += ROWS;
                }
                rows
            })
        })
        .collect();
    let mut rows = 0;
    for t in tasks {
        rows += t.await.unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    pool.close().await;
    Figure {
        name: "raw UNNEST 100 rows/stmt, 8 connections".into(),
        events_per_s: rows as f64 / elapsed,
        p50_ms: None,
        p99_ms: None,
    }
}

#[tokio::main]
async fn main() {
    let mut figures = Vec::new();
    let backend = PgBackend::create().await;
    figures.push(raw_baseline(&backend).await);
    let store: Arc<dyn EventStore> = match std::env::var("GC_PG_WRITERS")
        .ok()
        .and_then(|w| w.parse().ok())
    {
        Some(w) => Arc::new(backend.pg_store().clone().with_group_commit_writers(w)),
        None => backend.store(),
    };
    let cases: Vec<usize> = std::env::var("GC_CASES")
        .ok()
        .map(|c| c.split(',').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 8, 64, 256]);
    // The leases of the fenced cases, as `fairdeal_platform::ownership` keeps them.
    let pool = fairdeal_db::postgres_pool_options()
        .max_connections(1)
        .connect_with(backend.connect_options())
        .await
        .unwrap();
    sqlx::raw_sql(
        "CREATE TABLE eventstore.partition_leases (partition INTEGER PRIMARY KEY, \
             owner TEXT NOT NULL, epoch BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL); \
         INSERT INTO eventstore.partition_leases \
             SELECT p, 'bench', 1, now() + interval '1 hour' FROM generate_series(0, 63) p",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    for writers in cases {
        for fenced in [false, true] {
            figures.push(
                appends(
                    format!(
                        "PostgreSQL append{}, {writers} writers",
                        if fenced { " fenced" } else { "" }
                    ),
                    store.clone(),
                    writers,
                    fenced,
                )
                .await,
            );
        }
    }
    backend.cleanup().await;

    let backend = SqliteBackend::create().await;
    let store = backend.store();
    for writers in [1, 64] {
        figures.push(
            appends(
                format!("SQLite append, {writers} writers"),
                store.clone(),
                writers,
                false,
            )
            .await,
        );
    }
    backend.cleanup().await;

    let baseline = figures[0].events_per_s;
    println!(
        "{:<44} {:>10} {:>7} {:>9} {:>9}",
        "case", "events/s", "ratio", "p50 ms", "p99 ms"
    );
    let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.2}"));
    for f in figures {
        println!(
            "{:<44} {:>10.0} {:>7.2} {:>9} {:>9}",
            f.name,
            f.events_per_s,
            f.events_per_s / baseline,
            ms(f.p50_ms),
            ms(f.p99_ms)
        );
    }
}
