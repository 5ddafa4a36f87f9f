//! The game stack every consumer of games is tested on ([`fairdeal_e2e::platform`]): four
//! players play a whole table through gRPC on each backend, and the table's log ends with
//! the game finished and the seed revealed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_e2e::platform::{Backend, GameStack};
use fairdeal_proto::fairdeal::tables::v1 as pb;

async fn a_table_plays_to_the_end(backend: Backend) {
    let stack = GameStack::start(backend).await.unwrap();
    let (players, view) = stack.play_bot_table().await.unwrap();
    assert!(fairdeal_client::is_over(&view));
    assert_eq!(view.game.as_ref().unwrap().phase, "finished");
    let seats: Vec<String> = view.seats.iter().map(|s| s.player_id.clone()).collect();
    let ids: Vec<String> = players.iter().map(|p| p.id.to_string()).collect();
    assert_eq!(seats, ids);
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_table_plays_to_the_end_embedded() {
    a_table_plays_to_the_end(Backend::Embedded).await;
}

#[tokio::test]
async fn a_table_plays_to_the_end_postgres_nats() {
    a_table_plays_to_the_end(Backend::PostgresNats).await;
}

/// On the embedded default every service shares one log: the table's `GameFinished` is in
/// the same store a consumer of another service reads.
#[tokio::test]
async fn the_shared_log_holds_the_finished_game_embedded() {
    let mut stack = GameStack::start(Backend::Embedded).await.unwrap();
    let (_, view) = stack.play_bot_table().await.unwrap();
    let storage = stack.storage("consumer", &[]).await.unwrap();
    let stream = fairdeal_eventstore::StreamId::of("table", &view.table_id).unwrap();
    let events = storage
        .events()
        .read_stream(&stream, 1, 100_000)
        .await
        .unwrap();
    assert_eq!(events.len() as u64, view.version);
    assert!(events.iter().any(|e| e.is::<pb::GameFinished>()));
    stack.stop().await.unwrap();
}

/// The connection budget (issue 31, item 7): commitment, dealing and tables, each with the
/// smallest budget, run as a role the server refuses more sessions than their sum; sixteen
/// tables played at once need more connections than that at times, and get them by waiting
/// (back-pressure), not as errors. Before the budget, the same stack opened up to 27
/// sessions a service (a shared pool of 16, 8 readers, 2 writers, the listener), past the
/// cap, and its requests failed with "too many connections for role".
#[tokio::test]
async fn at_the_connection_cap_requests_wait_rather_than_fail() {
    use sqlx::Connection as _;
    const BUDGET: u32 = fairdeal_db::ConnectionBudget::MIN;
    const TABLES: usize = 16;
    let (stack, role) = GameStack::start_capped(BUDGET).await.unwrap();
    // The most sessions the role held at once, sampled every 20 ms.
    let admin_url = fairdeal_testkit::postgres_url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = std::sync::Arc::clone(&stop);
        let role = role.clone();
        tokio::spawn(async move {
            let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
            let mut most = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let held: i64 =
                    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE usename = $1")
                        .bind(&role)
                        .fetch_one(&mut admin)
                        .await
                        .unwrap();
                most = most.max(held);
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            most
        })
    };
    let games = (0..TABLES).map(|_| stack.play_bot_table());
    let results = futures::future::join_all(games).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.await.unwrap();
    for result in &results {
        let (_, view) = result.as_ref().unwrap();
        assert!(fairdeal_client::is_over(view));
    }
    assert!(
        most <= i64::from(3 * BUDGET),
        "{most} sessions, over the cap of {}",
        3 * BUDGET
    );
    stack.stop().await.unwrap();
}
