//! The ledger's ingest rate from a backlog, beside the raw batched insert of the same rows in
//! the same run (issue 30: at least 50,000 events/s on PostgreSQL + NATS, and at least half
//! of the raw insert).
//!
//! PostgreSQL + NATS (`INGEST_BACKEND=postgres`, the default): `INGEST_EVENTS` events (default
//! 200,000; streams of 100, 200-byte payloads) are appended to a "tables" log and relayed to
//! JetStream; then the ledger is started in this process (its JetStream consumer, its
//! batched ingest, its tree follower and checkpoints) and timed until its tree holds them
//! all. The baseline: the archive's rows as the ledger wrote them, read back and inserted
//! into a second database migrated the same way (same table, indexes, constraints,
//! triggers) with the archive's own insert statement, `INGEST_BATCH` rows per transaction.
//! The ratio is what everything else costs: fetching from JetStream, decoding and verifying
//! each event, the chain checks, the commitments, the heads, the tree.
//!
//! Embedded (`INGEST_BACKEND=embedded`): the backlog is in the shared SQLite log the ledger
//! tails; same baseline in a second SQLite file.
//!
//! Steady (`INGEST_MODE=steady`, PostgreSQL + NATS): no backlog, but a producer appending
//! `INGEST_RATE` events a second (default 6,500: what one tables replica at its target load
//! of 5,000 moves/s stores) for `INGEST_SECONDS` (default 30), 8 writers of 4-event appends,
//! relayed to JetStream as the services do, while the ledger runs beside it in the same
//! process. Reported: the rate produced, and the ledger's lag sampled every 100 ms (the age
//! of the event its newest leaf holds), p50/p99/max.
//!
//! `cargo xtask services` in one shell, its exports in another, then
//! `cargo bench -p fairdeal-ledger --bench ingest`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

// The services' allocator, as the ledger's binary runs with.
#[global_allocator]
static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;

use std::time::{Duration, Instant};

use fairdeal_db::Db;
use fairdeal_event::{NewEvent, StreamId};
use fairdeal_eventstore::ExpectedVersion;
use fairdeal_harness::common;
use fairdeal_kit::{CommonConfig, Shutdown};
use fairdeal_ledger::archive::{Content, IngestSql, LeafRow};
use fairdeal_ledger::ingest::INGEST_BATCH;
use fairdeal_ledger::log::CheckpointPolicy;
use fairdeal_ledger::{Application, MIGRATIONS, Parts};
use fairdeal_platform::{Bus, Storage};
use fairdeal_tlog::NoteSigner;

const PER_STREAM: u64 = 100;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Appends `streams` x [`PER_STREAM`] events to `storage`'s log; returns the seconds taken.
async fn backlog(storage: &Storage, streams: u64) -> f64 {
    let started = Instant::now();
    for s in 0..streams {
        let stream = StreamId::of("table", uuid::Uuid::now_v7()).unwrap();
        let batch = (0..PER_STREAM)
            .map(|i| NewEvent::new("fairdeal.bench.v1.Moved", vec![i as u8; 200]))
            .collect();
        storage
            .events()
            .append(&stream, ExpectedVersion::NoStream, batch)
            .await
            .unwrap();
        if s % 200 == 0 {
            tokio::task::yield_now().await;
        }
    }
    started.elapsed().as_secs_f64()
}

/// How long the ledger took: from its start until its tree held every event, and from its
/// first leaf until then (the rate once running, without the start-up: opening the archive,
/// creating the consumer).
struct Timing {
    from_start: f64,
    running: f64,
}

/// Starts the ledger over `storage` and times it until its tree holds `events` leaves.
async fn ingest(common: &CommonConfig, storage: Storage, events: u64, sources: &[&str]) -> Timing {
    let started = Instant::now();
    let app = Application::assemble(
        common,
        Parts {
            storage,
            signer: NoteSigner::from_seed("ledger.bench", &[9; 32]).unwrap(),
            policy: CheckpointPolicy {
                interval: Duration::from_secs(5),
                leaves: 1_000,
            },
            sources: sources.iter().map(|s| (*s).to_owned()).collect(),
        },
    )
    .await
    .unwrap();
    let ledger = app.handles().clone();
    let shutdown = app.shutdown();
    tokio::spawn(app.run_until_stopped());
    let mut first_leaf = None;
    loop {
        let size = ledger.status().await.unwrap().tree_size;
        if size > 0 && first_leaf.is_none() {
            first_leaf = Some((Instant::now(), size));
        }
        if size >= events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let from_start = started.elapsed().as_secs_f64();
    let (first, at_first) = first_leaf.unwrap_or((started, 0));
    // The leaves already there at the first sample count as ingested before it.
    let running = first.elapsed().as_secs_f64() * events as f64 / (events - at_first).max(1) as f64;
    shutdown.trigger();
    shutdown.wait_for_tasks().await;
    Timing {
        from_start,
        running,
    }
}

type Stored = (
    i64,
    String,
    String,
    i64,
    String,
    String,
    Vec<u8>,
    Vec<u8>,
    Option<String>,
    Vec<u8>,
    Vec<u8>,
    Vec<u8>,
);

/// The archive's rows as the ledger wrote them.
async fn written_rows(db: &Db) -> Vec<LeafRow> {
    let rows: Vec<Stored> = fairdeal_db::on_db!(db, pool => {
        sqlx::query_as(
            "SELECT leaf_index, event_id, stream_id, stream_version, event_type, correlation_id, \
             hash, leaf, subject, envelope, body_salt, chain_salt FROM ledger_leaves \
             ORDER BY leaf_index",
        )
        .fetch_all(pool)
        .await
        .unwrap()
    });
    rows.into_iter()
        .map(|r| LeafRow {
            leaf_index: r.0,
            event_id: r.1,
            stream_id: r.2,
            stream_version: r.3,
            event_type: r.4,
            correlation_id: r.5,
            hash: r.6,
            leaf: r.7,
            subject: r.8,
            content: Some(Content {
                envelope: r.9,
                body_salt: r.10,
                chain_salt: r.11,
            }),
            erased_at_ms: None,
        })
        .collect()
}

/// Inserts `rows` into `db`'s archive with the ledger's own statement, [`INGEST_BATCH`] rows
/// per transaction; returns the seconds taken.
async fn raw_insert(db: &Db, rows: &[LeafRow]) -> f64 {
    let started = Instant::now();
    for batch in rows.chunks(INGEST_BATCH) {
        match db {
            Db::Postgres { pool, .. } => {
                let mut tx = pool.begin().await.unwrap();
                <sqlx::Postgres as IngestSql>::insert_leaves(&mut tx, batch)
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
            }
            Db::Sqlite { pool } => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
                <sqlx::Sqlite as IngestSql>::insert_leaves(&mut tx, batch)
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
            }
        }
    }
    started.elapsed().as_secs_f64()
}

fn report(backend: &str, events: u64, append: f64, ingest: &Timing, raw: f64) {
    let from_start = events as f64 / ingest.from_start;
    let running = events as f64 / ingest.running;
    let raw_rate = events as f64 / raw;
    println!(
        "ledger ingest ({backend}): {events} events, {running:.0} events/s once running \
         ({from_start:.0} events/s from the ledger's start, {:.2} s); raw batched insert of the \
         same rows ({INGEST_BATCH} per transaction), same run: {raw_rate:.0} rows/s; ingest / \
         raw = {:.2} ({:.2} from the start); the backlog's appends: {:.0} events/s",
        ingest.from_start,
        running / raw_rate,
        from_start / raw_rate,
        events as f64 / append
    );
}

async fn postgres_nats(streams: u64) {
    let events = streams * PER_STREAM;
    let prefix = fairdeal_testkit::subject_prefix("ledgerbench");
    let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
    let url = database.url().to_owned();
    let tables_common = common("tables", &url, Some(&prefix));
    let tables = Storage::open(&tables_common, "tables", &[]).await.unwrap();
    let relay = Shutdown::new();
    let bus = Bus::start(&tables_common, &tables, "tables", &relay)
        .await
        .unwrap();
    let append = backlog(&tables, streams).await;
    // Wait until the relay has published the whole backlog to JetStream.
    let js = bus.jetstream().unwrap().clone();
    let stream_name = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.tables"))
        .unwrap()
        .stream_name()
        .to_owned();
    loop {
        let mut stream = js.get_stream(&stream_name).await.unwrap();
        if stream.info().await.unwrap().state.messages >= events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ledger_common = common("ledger", &url, Some(&prefix));
    let ledger = Storage::open(&ledger_common, "ledger", &[&MIGRATIONS])
        .await
        .unwrap();
    let ledger_db = ledger.db().clone();
    let secs = ingest(&ledger_common, ledger, events, &["tables"]).await;
    let rows = written_rows(&ledger_db).await;
    assert_eq!(rows.len() as u64, events);

    let baseline = fairdeal_testkit::TestDatabase::create().await.unwrap();
    let baseline_storage = Storage::open(
        &common("ledger", baseline.url(), None),
        "ledger",
        &[&MIGRATIONS],
    )
    .await
    .unwrap();
    let raw = raw_insert(baseline_storage.db(), &rows).await;
    report("PostgreSQL + NATS", events, append, &secs, raw);

    relay.trigger();
    relay.wait_for_tasks().await;
    let c = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.tables")).unwrap();
    let _ = js.delete_stream(c.stream_name()).await;
    let _ = js.delete_stream(c.dead_letter_stream_name()).await;
    baseline_storage.db().close().await;
    ledger_db.close().await;
    tables.db().close().await;
    baseline.drop().await.unwrap();
    database.drop().await.unwrap();
}

async fn embedded(streams: u64) {
    let events = streams * PER_STREAM;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("platform.db").display());
    let ledger_common = common("ledger", &url, None);
    let storage = Storage::open(&ledger_common, "ledger", &[&MIGRATIONS])
        .await
        .unwrap();
    let append = backlog(&storage, streams).await;
    let db = storage.db().clone();
    let secs = ingest(&ledger_common, storage, events, &["tables"]).await;
    let rows = written_rows(&db).await;
    assert_eq!(rows.len() as u64, events);
    let baseline_url = format!("sqlite://{}", dir.path().join("baseline.db").display());
    let baseline = Storage::open(
        &common("ledger", &baseline_url, None),
        "ledger",
        &[&MIGRATIONS],
    )
    .await
    .unwrap();
    let raw = raw_insert(baseline.db(), &rows).await;
    report("embedded SQLite", events, append, &secs, raw);
    baseline.db().close().await;
    db.close().await;
}

/// The ledger beside a steady producer (see the module docs).
async fn steady(rate: u64, seconds: u64) {
    const WRITERS: u64 = 8;
    const PER_APPEND: u64 = 4;
    let prefix = fairdeal_testkit::subject_prefix("ledgersteady");
    let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
    let url = database.url().to_owned();
    let tables_common = common("tables", &url, Some(&prefix));
    let tables = Storage::open(&tables_common, "tables", &[]).await.unwrap();
    let relay = Shutdown::new();
    let bus = Bus::start(&tables_common, &tables, "tables", &relay)
        .await
        .unwrap();
    let ledger_common = common("ledger", &url, Some(&prefix));
    let ledger = Storage::open(&ledger_common, "ledger", &[&MIGRATIONS])
        .await
        .unwrap();
    let ledger_db = ledger.db().clone();
    let app = Application::assemble(
        &ledger_common,
        Parts {
            storage: ledger,
            signer: NoteSigner::from_seed("ledger.bench", &[9; 32]).unwrap(),
            policy: CheckpointPolicy {
                interval: Duration::from_secs(5),
                leaves: 1_000,
            },
            sources: vec!["tables".to_owned()],
        },
    )
    .await
    .unwrap();
    let stop = app.shutdown();
    tokio::spawn(app.run_until_stopped());

    let started = Instant::now();
    let window = Duration::from_secs(seconds);
    let appends_per_writer = rate / WRITERS / PER_APPEND;
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let events = tables.events();
        writers.push(tokio::spawn(async move {
            let mut appended = 0u64;
            let pause = Duration::from_secs_f64(1.0 / appends_per_writer.max(1) as f64);
            let mut next = Instant::now();
            while started.elapsed() < window {
                // A stream of 100 events at most, like a table's hand.
                let stream = StreamId::of("table", uuid::Uuid::now_v7()).unwrap();
                for _ in 0..25 {
                    let batch = (0..PER_APPEND)
                        .map(|i| NewEvent::new("fairdeal.bench.v1.Moved", vec![i as u8; 200]))
                        .collect();
                    events
                        .append(&stream, ExpectedVersion::Any, batch)
                        .await
                        .unwrap();
                    appended += PER_APPEND;
                    next += pause;
                    if let Some(wait) = next.checked_duration_since(Instant::now()) {
                        tokio::time::sleep(wait).await;
                    }
                    if started.elapsed() >= window {
                        break;
                    }
                }
            }
            appended
        }));
    }
    let mut lags = Vec::new();
    while started.elapsed() < window {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let newest: Option<Vec<u8>> = fairdeal_db::on_db!(&ledger_db, pool => {
            sqlx::query_scalar(
                "SELECT envelope FROM ledger_leaves ORDER BY leaf_index DESC LIMIT 1",
            )
            .fetch_optional(pool)
            .await
            .unwrap()
        });
        if let Some(envelope) = newest.filter(|_| started.elapsed() > Duration::from_secs(1)) {
            let event = fairdeal_event::RecordedEvent::decode_envelope(0, &envelope).unwrap();
            let age = std::time::SystemTime::now()
                .duration_since(event.occurred_at)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
            lags.push(age);
        }
    }
    let mut produced = 0;
    for writer in writers {
        produced += writer.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    lags.sort_by(f64::total_cmp);
    let at = |q: f64| lags[((lags.len() - 1) as f64 * q).round() as usize];
    println!(
        "ledger beside a steady producer (PostgreSQL + NATS): {:.0} events/s produced for \
         {elapsed:.0} s; ledger lag p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({} samples)",
        produced as f64 / elapsed,
        at(0.5),
        at(0.99),
        lags[lags.len() - 1],
        lags.len()
    );
    stop.trigger();
    stop.wait_for_tasks().await;
    relay.trigger();
    relay.wait_for_tasks().await;
    if let Some(js) = bus.jetstream() {
        let c = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.tables")).unwrap();
        let _ = js.delete_stream(c.stream_name()).await;
        let _ = js.delete_stream(c.dead_letter_stream_name()).await;
    }
    ledger_db.close().await;
    tables.db().close().await;
    database.drop().await.unwrap();
}

fn main() {
    // `cargo bench` passes `--bench`; this binary has no other arguments.
    let streams = env("INGEST_EVENTS", 200_000).div_ceil(PER_STREAM);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if std::env::var("INGEST_MODE").as_deref() == Ok("steady") {
        let rate = env("INGEST_RATE", 6_500);
        let seconds = env("INGEST_SECONDS", 30);
        runtime.block_on(steady(rate, seconds));
        return;
    }
    match std::env::var("INGEST_BACKEND").as_deref() {
        Ok("embedded") => runtime.block_on(embedded(streams)),
        _ => runtime.block_on(postgres_nats(streams)),
    }
}
