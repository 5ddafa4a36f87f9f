//! Append throughput of both backends beside a raw insert baseline measured in the same run.
//!
//! `cargo bench -p fairdeal-eventstore --features conformance --bench append`
//!
//! For each backend: one event per commit (sequential, and 8 concurrent writers), and
//! 100-event batches, each next to the same shape of plain INSERTs into a bare table with a
//! payload column (PostgreSQL: one row per autocommit statement / one UNNEST per batch). The
//! ratio store/raw is the cost of the store's work: head lookup, hashing, the trigger and
//! unique indexes. Writes to a fresh test database / temp file, which is dropped afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use fairdeal_eventstore::conformance::{Backend, PgBackend, SqliteBackend};
use fairdeal_eventstore::{EventStore, ExpectedVersion, NewEvent, StreamId};
use std::sync::Arc;
use std::time::Instant;

const SINGLE: u32 = 1_500;
const BATCHES: u32 = 60;
const BATCH: u32 = 100;
const WRITERS: u32 = 8;

fn payload(n: u32) -> Vec<u8> {
    // ~300 bytes, the size MEASUREMENTS uses.
    n.to_be_bytes().iter().copied().cycle().take(300).collect()
}

fn event(n: u32) -> NewEvent {
    NewEvent::new("fairdeal.bench.v1.Appended", payload(n)).with_correlation_id("bench")
}

fn stream(n: u32) -> StreamId {
    StreamId::parse(format!("bench-{n}")).unwrap()
}

struct Figures {
    name: &'static str,
    raw: f64,
    store: f64,
}

async fn store_single(store: Arc<dyn EventStore>, base: u32) -> f64 {
    let s = stream(base);
    let start = Instant::now();
    for i in 0..SINGLE {
        store
            .append(&s, ExpectedVersion::Exact(u64::from(i)), vec![event(i)])
            .await
            .unwrap();
    }
    f64::from(SINGLE) / start.elapsed().as_secs_f64()
}

async fn store_concurrent(store: Arc<dyn EventStore>, base: u32) -> f64 {
    let per = SINGLE / WRITERS;
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let s = stream(base + w);
                for i in 0..per {
                    store
                        .append(&s, ExpectedVersion::Exact(u64::from(i)), vec![event(i)])
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    f64::from(per * WRITERS) / start.elapsed().as_secs_f64()
}

async fn store_batches(store: Arc<dyn EventStore>, base: u32) -> f64 {
    let s = stream(base);
    let start = Instant::now();
    for b in 0..BATCHES {
        let events = (0..BATCH).map(|i| event(b * BATCH + i)).collect();
        store
            .append(&s, ExpectedVersion::Exact(u64::from(b * BATCH)), events)
            .await
            .unwrap();
    }
    f64::from(BATCHES * BATCH) / start.elapsed().as_secs_f64()
}

async fn postgres() -> Vec<Figures> {
    let backend = PgBackend::create().await;
    let pool = backend.pg_store().pool().clone();
    sqlx::query("CREATE TABLE raw_events (id BIGSERIAL PRIMARY KEY, payload BYTEA NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    let store = backend.store();

    let start = Instant::now();
    for i in 0..SINGLE {
        sqlx::query("INSERT INTO raw_events (payload) VALUES ($1)")
            .bind(payload(i))
            .execute(&pool)
            .await
            .unwrap();
    }
    let raw_single = f64::from(SINGLE) / start.elapsed().as_secs_f64();
    let store_single = store_single(store.clone(), 0).await;

    let per = SINGLE / WRITERS;
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                for i in 0..per {
                    sqlx::query("INSERT INTO raw_events (payload) VALUES ($1)")
                        .bind(payload(i))
                        .execute(&pool)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let raw_concurrent = f64::from(per * WRITERS) / start.elapsed().as_secs_f64();
    let store_concurrent = store_concurrent(store.clone(), 100).await;

    let start = Instant::now();
    for b in 0..BATCHES {
        let rows: Vec<Vec<u8>> = (0..BATCH).map(|i| payload(b * BATCH + i)).collect();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO raw_events (payload) SELECT * FROM UNNEST($1::bytea[])")
            .bind(rows)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }
    let raw_batches = f64::from(BATCHES * BATCH) / start.elapsed().as_secs_f64();
    let store_batches = store_batches(store, 200).await;

    backend.cleanup().await;
    vec![
        Figures {
            name: "PostgreSQL, 1 event per commit",
            raw: raw_single,
            store: store_single,
        },
        Figures {
            name: "PostgreSQL, 1 event per commit, 8 writers",
            raw: raw_concurrent,
            store: store_concurrent,
        },
        Figures {
            name: "PostgreSQL, 100 events per commit",
            raw: raw_batches,
            store: store_batches,
        },
    ]
}

async fn sqlite() -> Vec<Figures> {
    let backend = SqliteBackend::create().await;
    let pool = backend.sqlite_store().pool().clone();
    sqlx::query("CREATE TABLE raw_events (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    let store = backend.store();

    let start = Instant::now();
    for i in 0..SINGLE {
        sqlx::query("INSERT INTO raw_events (payload) VALUES (?)")
            .bind(payload(i))
            .execute(&pool)
            .await
            .unwrap();
    }
    let raw_single = f64::from(SINGLE) / start.elapsed().as_secs_f64();
    let store_single = store_single(store.clone(), 0).await;

    let start = Instant::now();
    for b in 0..BATCHES {
        let mut tx = pool.begin().await.unwrap();
        for i in 0..BATCH {
            sqlx::query("INSERT INTO raw_events (payload) VALUES (?)")
                .bind(payload(b * BATCH + i))
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
    }
    let raw_batches = f64::from(BATCHES * BATCH) / start.elapsed().as_secs_f64();
    let store_batches = store_batches(store, 200).await;

    backend.cleanup().await;
    vec![
        Figures {
            name: "SQLite, 1 event per commit",
            raw: raw_single,
            store: store_single,
        },
        Figures {
            name: "SQLite, 100 events per commit",
            raw: raw_batches,
            store: store_batches,
        },
    ]
}

#[tokio::main]
async fn main() {
    let mut figures = postgres().await;
    figures.extend(sqlite().await);
    println!(
        "{:<44} {:>12} {:>14} {:>7}",
        "case", "raw rows/s", "store events/s", "ratio"
    );
    for f in figures {
        println!(
            "{:<44} {:>12.0} {:>14.0} {:>7.2}",
            f.name,
            f.raw,
            f.store,
            f.store / f.raw
        );
    }
}
