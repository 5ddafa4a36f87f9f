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
