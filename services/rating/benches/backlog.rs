//! How fast the rating service works off a backlog of `GameFinished` events, beside the raw
//! append rate of the same events in the same run.
//!
//! For each backend (embedded SQLite; PostgreSQL + NATS JetStream): append N finished games
//! (4 distinct players each out of 1,000) to "tables" streams with 64 concurrent writers
//! (the raw append rate), then start the rating service and time until the last game is
//! rated (every game is applied in order, each in the consumer's transaction: one read of
//! the four ratings, one of the four stream versions, 4 `RatingChanged` appends, one
//! multi-row write per projection).
//!
//! `cargo bench -p fairdeal-rating-service --bench backlog`; `FAIRDEAL_BENCH_GAMES` (default
//! 100000) and `FAIRDEAL_BENCH_BACKENDS` (`sqlite,postgres`) adjust the run. Needs the
//! PostgreSQL and NATS servers of crates/testkit for the second backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use fairdeal_authn::{KeySet, SigningKey};
use fairdeal_eventstore::{ExpectedVersion, NewEvent, StreamId};
use fairdeal_harness::{authenticator, common};
use fairdeal_kit::Shutdown;
use fairdeal_platform::{Bus, Storage};
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::DEFAULT_K;
use fairdeal_rating_service::projection::MIGRATIONS;
use fairdeal_rating_service::startup::{Parts, SCHEMA};
use uuid::Uuid;

const WRITERS: usize = 64;
const PLAYERS: usize = 1_000;

fn game(players: &[Uuid], i: usize) -> tpb::GameFinished {
    // A fixed sequence of distinct seats: i, i + 1 * 7919, ... modulo the pool (prime step).
    let seat = |s: usize| players[(i * 4 + s * 7919) % players.len()];
    tpb::GameFinished {
        table_id: Uuid::now_v7().to_string(),
        players: (0..4)
            .map(|s| tpb::SeatPlayer {
                seat: s as u32,
                player_id: seat(s).to_string(),
                bot: false,
                abandoned: false,
            })
            .collect(),
        teams: vec![
            tpb::TeamSeats {
                team: 0,
                seats: vec![0, 2],
            },
            tpb::TeamSeats {
                team: 1,
                seats: vec![1, 3],
            },
        ],
        final_scores: vec![505, 310],
        winner: (i % 2) as u32,
        variant: None,
        hands_played: 8,
        reason: tpb::FinishReason::Completed as i32,
    }
}

async fn run(backend: &str, games: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (url, database) = if backend == "postgres" {
        let db = fairdeal_testkit::TestDatabase::create().await.unwrap();
        (db.url().to_owned(), Some(db))
    } else {
        (
            format!("sqlite://{}", dir.path().join("bench.db").display()),
            None,
        )
    };
    let prefix = database
        .is_some()
        .then(|| fairdeal_testkit::subject_prefix("ratingbench"));
    let rating_common = common("rating", &url, prefix.as_deref());
    let storage = Storage::open(&rating_common, SCHEMA, &[&MIGRATIONS])
        .await
        .unwrap();
    let tables_shutdown = Shutdown::new();
    let tables = if database.is_some() {
        let c = common("tables", &url, prefix.as_deref());
        let tables = Storage::open(&c, "tables", &[]).await.unwrap();
        Bus::start(&c, &tables, "tables", &tables_shutdown)
            .await
            .unwrap();
        tables
    } else {
        storage.clone()
    };

    let players: Arc<Vec<Uuid>> = Arc::new((0..PLAYERS).map(|_| Uuid::now_v7()).collect());
    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let events = tables.events();
        let players = Arc::clone(&players);
        writers.push(tokio::spawn(async move {
            let mut last = None;
            for i in (w..games).step_by(WRITERS) {
                let g = game(&players, i);
                let stream = StreamId::parse(format!("table-{}", g.table_id)).unwrap();
                let event = NewEvent::from_message(&g).with_correlation_id(g.table_id.clone());
                events
                    .append(&stream, ExpectedVersion::NoStream, vec![event])
                    .await
                    .unwrap();
                last = Some(g.table_id);
            }
            last
        }));
    }
    let mut lasts = Vec::new();
    for w in writers {
        lasts.extend(w.await.unwrap());
    }
    let append_time = started.elapsed();

    let signing = SigningKey::generate().unwrap();
    let authn = authenticator(KeySet::new([signing.public_key()]));
    let mut waiter = storage.signal().subscribe();
    let started = Instant::now();
    let app = fairdeal_rating_service::Application::assemble(
        &rating_common,
        Parts {
            storage: storage.clone(),
            authn,
            k: DEFAULT_K,
        },
    )
    .await
    .unwrap();
    let shutdown = app.shutdown();
    let server = tokio::spawn(app.run_until_stopped());
    // Done when every writer's last game is rated.
    let done = || async {
        let mut all = true;
        for table in &lasts {
            let n: i64 = fairdeal_db::on_db!(storage.db(), pool => {
                sqlx::query_scalar("SELECT COUNT(*) FROM rating_history WHERE table_id = $1")
                    .bind(table)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            });
            all &= n == 4;
        }
        all
    };
    while !done().await {
        // Woken by each committed batch; the timeout only guards against a stall.
        if tokio::time::timeout(Duration::from_secs(120), waiter.changed())
            .await
            .is_err()
        {
            panic!("the consumer stalled");
        }
    }
    let apply_time = started.elapsed();
    let total: i64 = fairdeal_db::on_db!(storage.db(), pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM rating_history")
            .fetch_one(pool)
            .await
            .unwrap()
    });
    assert_eq!(total, 4 * games as i64, "every game rated once");
    println!(
        "{backend}: {games} GameFinished appended in {:.1} s ({:.0}/s, {WRITERS} writers); \
         rated in {:.1} s ({:.0} games/s, {:.0} RatingChanged/s)",
        append_time.as_secs_f64(),
        games as f64 / append_time.as_secs_f64(),
        apply_time.as_secs_f64(),
        games as f64 / apply_time.as_secs_f64(),
        4.0 * games as f64 / apply_time.as_secs_f64(),
    );
    shutdown.trigger();
    server.await.unwrap().unwrap();
    tables_shutdown.trigger();
    tables_shutdown.wait_for_tasks().await;
    if let Some(prefix) = &prefix {
        fairdeal_harness::delete_streams(prefix, ["tables", "rating"]).await;
    }
    if let Some(db) = database {
        storage.db().close().await;
        tables.db().close().await;
        db.drop().await.unwrap();
    }
}

#[tokio::main]
async fn main() {
    let games = std::env::var("FAIRDEAL_BENCH_GAMES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let backends =
        std::env::var("FAIRDEAL_BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    for backend in backends.split(',') {
        run(backend.trim(), games).await;
    }
}
