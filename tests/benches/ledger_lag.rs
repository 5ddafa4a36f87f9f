//! The ledger under the platform's load (issue 30): tables played through the public gRPC API
//! by bot clients while the ledger ingests every service's events beside them; how far the
//! ledger stands behind, and how soon a finished game exports.
//!
//! The stack is the one the end-to-end tests run ([`fairdeal_e2e::platform::GameStack`]:
//! commitment, dealing, tables) with the rating service and the ledger, all in this process,
//! on `LAG_BACKEND=postgres` (PostgreSQL + NATS JetStream, the default) or `embedded` (one
//! SQLite file, the in-process bus). `LAG_TABLES` tables (default 48) are played at once, each
//! by four clients whose moves the engine's bot chooses from their own turn views; a finished
//! table is replaced by a new one, for `LAG_SECONDS` (default 30) seconds.
//!
//! Reported:
//! - moves/s over the window (every bid, pass, trump and card the clients sent);
//! - the ledger's lag, sampled every 100 ms: the age of its newest leaf (now minus the
//!   `occurred_at` of the last event it archived). Under a steady load this is how far behind
//!   the platform the ledger stands; a ledger that cannot keep up shows it growing.
//!   p50/p99/max of the samples;
//! - events stored by the services and leaves archived over the window (the ratio is what
//!   the ledger ingested of what the platform produced);
//! - export latency: for each finished table, from its `GameFinished` (the event's
//!   `occurred_at`) to the first `ExportGame` that succeeds (asked every 10 ms), p50/p99/max.
//!
//! `cargo xtask services` in one shell, its exports in another, then
//! `cargo bench -p fairdeal-e2e --bench ledger_lag`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use fairdeal_e2e::platform::{Backend, GameStack, channel};
use fairdeal_eventstore::{EventStore, RecordedEvent, StreamId};
use fairdeal_ledger::log::CheckpointPolicy;
use fairdeal_ledger::{MIGRATIONS, SCHEMA};
use fairdeal_proto::fairdeal::ledger::v1 as pb;
use fairdeal_proto::fairdeal::ledger::v1::ledger_service_client::LedgerServiceClient;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_tlog::NoteSigner;
use tokio::sync::Mutex;
use tonic::transport::Channel;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// p50, p99 and max of `values` (milliseconds).
fn percentiles(values: &mut [f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), values[values.len() - 1])
}

fn millis_since(time: SystemTime) -> f64 {
    SystemTime::now()
        .duration_since(time)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The `occurred_at` of the table's `GameFinished` and of its `TableSeedRevealed`.
async fn finished_at(tables: &Arc<dyn EventStore>, table_id: &str) -> (SystemTime, SystemTime) {
    let stream = StreamId::parse(format!("table-{table_id}")).unwrap();
    let events: Vec<RecordedEvent> = tables.read_stream(&stream, 1, 100_000).await.unwrap();
    let at = |found: Option<&RecordedEvent>| found.map(|e| e.occurred_at).unwrap();
    (
        at(events.iter().find(|e| e.is::<tpb::GameFinished>())),
        at(events.iter().find(|e| e.is::<tpb::TableSeedRevealed>())),
    )
}

/// Asks for the export every 10 ms until it succeeds.
async fn export_when_ready(ledger: &mut LedgerServiceClient<Channel>, table_id: &str) {
    loop {
        let answer = ledger
            .export_game(pb::ExportGameRequest {
                table_id: table_id.to_owned(),
                previous_tree_sizes: vec![],
            })
            .await;
        if let Ok(stream) = answer {
            let mut stream = stream.into_inner();
            let mut complete = true;
            while let Some(chunk) = stream.message().await.transpose() {
                if chunk.is_err() {
                    complete = false;
                    break;
                }
            }
            if complete {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Events in a store's whole log (the sum of its streams' positions is not dense: counted by
/// reading).
async fn count_events(store: &Arc<dyn EventStore>) -> u64 {
    let mut from = 0;
    let mut count = 0;
    loop {
        let batch = store.read_all(from, 10_000).await.unwrap();
        let Some(last) = batch.last() else {
            return count;
        };
        from = last.position + 1;
        count += batch.len() as u64;
    }
}

async fn run(backend: Backend) {
    let tables = env("LAG_TABLES", 48);
    let seconds = env("LAG_SECONDS", 30);
    let mut stack = GameStack::start(backend).await.unwrap();
    // The rating service consumes every GameFinished, as on the platform.
    {
        use fairdeal_rating_service::projection::MIGRATIONS as RATING;
        use fairdeal_rating_service::startup::{Application, Parts, SCHEMA};
        let storage = stack.storage(SCHEMA, &[&RATING]).await.unwrap();
        let app = Application::assemble(
            &stack.common("rating").unwrap(),
            Parts {
                storage,
                authn: stack.authenticator(),
                k: fairdeal_rating::DEFAULT_K,
            },
        )
        .await
        .unwrap();
        stack.on_stop(app.shutdown());
        tokio::spawn(app.run_until_stopped());
    }
    let ledger_storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let ledger_db = ledger_storage.db().clone();
    let port = stack
        .start_ledger(
            ledger_storage,
            NoteSigner::from_seed("ledger.lag.bench", &[4; 32]).unwrap(),
            CheckpointPolicy {
                interval: Duration::from_secs(5),
                leaves: 1_000,
            },
        )
        .await
        .unwrap();
    // The services' stores, to count what they produced.
    let mut stores = Vec::new();
    for schema in [
        fairdeal_tables::startup::SCHEMA,
        fairdeal_commitment::startup::SCHEMA,
        fairdeal_dealing::startup::SCHEMA,
        fairdeal_rating_service::startup::SCHEMA,
    ] {
        stores.push(stack.storage(schema, &[]).await.unwrap().events());
        if backend == Backend::Embedded {
            break; // One shared log.
        }
    }
    let tables_store = stores[0].clone();

    let stack = Arc::new(stack);
    let moves = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicBool::new(true));
    // Per finished game: GameFinished to export, GameFinished to the seed's reveal, and the
    // reveal to the export.
    let exports: Arc<Mutex<Vec<(f64, f64, f64)>>> = Arc::new(Mutex::new(Vec::new()));
    let produced_before = {
        let mut n = 0;
        for store in &stores {
            n += count_events(store).await;
        }
        n
    };
    let leaves_before: i64 = fairdeal_db::on_db!(&ledger_db, pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM ledger_leaves").fetch_one(pool).await.unwrap()
    });
    let started = Instant::now();
    let mut players_tasks = Vec::new();
    for _ in 0..tables {
        let (stack, moves, running, exports, tables_store) = (
            stack.clone(),
            moves.clone(),
            running.clone(),
            exports.clone(),
            tables_store.clone(),
        );
        players_tasks.push(tokio::spawn(async move {
            let mut ledger = LedgerServiceClient::new(channel(port).unwrap());
            while running.load(Ordering::Relaxed) {
                let players: Vec<_> = (0..4).map(|_| stack.player().unwrap()).collect();
                let created = players[0]
                    .create_table(tpb::CreateTableRequest::default())
                    .await
                    .unwrap();
                fairdeal_client::seat_players(&created.table_id, &players, "lag")
                    .await
                    .unwrap();
                let counted = moves.clone();
                fairdeal_client::play_to_the_end(&created.table_id, &players, 11, |_, _| {
                    counted.fetch_add(1, Ordering::Relaxed);
                })
                .await
                .unwrap();
                let (finished, revealed) = finished_at(&tables_store, &created.table_id).await;
                export_when_ready(&mut ledger, &created.table_id).await;
                let reveal = revealed
                    .duration_since(finished)
                    .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
                exports
                    .lock()
                    .await
                    .push((millis_since(finished), reveal, millis_since(revealed)));
            }
        }));
    }
    // Sample the ledger's lag: the age of its newest leaf.
    let mut lags = Vec::new();
    let window = Duration::from_secs(seconds);
    while started.elapsed() < window {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let newest: Option<Vec<u8>> = fairdeal_db::on_db!(&ledger_db, pool => {
            sqlx::query_scalar(
                "SELECT envelope FROM ledger_leaves WHERE envelope IS NOT NULL \
                 ORDER BY leaf_index DESC LIMIT 1",
            )
            .fetch_optional(pool)
            .await
            .unwrap()
        });
        if let Some(envelope) = newest {
            let event = RecordedEvent::decode_envelope(0, &envelope).unwrap();
            lags.push(millis_since(event.occurred_at));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let moved = moves.load(Ordering::Relaxed);
    let leaves_at_end: i64 = fairdeal_db::on_db!(&ledger_db, pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM ledger_leaves").fetch_one(pool).await.unwrap()
    });
    let mut produced_at_end = 0;
    for store in &stores {
        produced_at_end += count_events(store).await;
    }
    running.store(false, Ordering::Relaxed);
    for task in players_tasks {
        let _ = task.await;
    }
    let produced = produced_at_end - produced_before;
    let archived = u64::try_from(leaves_at_end - leaves_before).unwrap_or(0);
    let (lag50, lag99, lag_max) = percentiles(&mut lags);
    let games = exports.lock().await.clone();
    let mut exported: Vec<f64> = games.iter().map(|g| g.0).collect();
    let mut reveals: Vec<f64> = games.iter().map(|g| g.1).collect();
    let mut after_reveal: Vec<f64> = games.iter().map(|g| g.2).collect();
    let (exp50, exp99, exp_max) = percentiles(&mut exported);
    let (rev50, rev99, _) = percentiles(&mut reveals);
    let (after50, after99, _) = percentiles(&mut after_reveal);
    let name = match backend {
        Backend::Embedded => "embedded SQLite",
        Backend::PostgresNats => "PostgreSQL + NATS",
    };
    println!(
        "ledger under load ({name}, {tables} tables, {elapsed:.0} s): {:.0} moves/s; events \
         stored {produced} ({:.0}/s), archived {archived} ({:.2} of them); ledger lag p50 \
         {lag50:.0} ms, p99 {lag99:.0} ms, max {lag_max:.0} ms ({} samples); export after \
         GameFinished p50 {exp50:.0} ms, p99 {exp99:.0} ms, max {exp_max:.0} ms ({} games; of \
         which the tables service's seed reveal p50 {rev50:.0} ms, p99 {rev99:.0} ms, and from \
         the reveal to the export p50 {after50:.0} ms, p99 {after99:.0} ms)",
        moved as f64 / elapsed,
        produced as f64 / elapsed,
        archived as f64 / produced.max(1) as f64,
        lags.len(),
        exported.len(),
    );
    let stack = Arc::into_inner(stack).expect("every table task ended");
    stack.stop().await.unwrap();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match std::env::var("LAG_BACKEND").as_deref() {
        Ok("embedded") => runtime.block_on(run(Backend::Embedded)),
        _ => runtime.block_on(run(Backend::PostgresNats)),
    }
}
