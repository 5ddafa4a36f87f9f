//! A table outlives its dependencies' outages and its own process: dealing down when the
//! match starts leaves the table waiting (nothing half-written), and it resumes at its next
//! request; a new replica started over the same database rebuilds every table from its log
//! and plays on.

use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::harness::{Db, TestApp};
use crate::moves;

#[tokio::test]
async fn a_table_waits_for_the_dealer_then_survives_a_restart_embedded() {
    let mut app = TestApp::spawn_with(Db::Sqlite, 1, false).await;
    let me = app.player();
    let id = me.create_against_bots(0).await;
    // The fourth seat starts the match; the dealing service is down, so no hand yet.
    let sat = me.sit(&id, 0).await.unwrap();
    let waiting = me.view(&id).await;
    assert_eq!(
        waiting.version, sat.version,
        "nothing appended past the start"
    );
    assert_eq!(waiting.status, pb::TableStatus::Playing as i32);
    let game = waiting.game.unwrap();
    assert_eq!(game.phase, "awaiting_deal");
    assert!(game.my_hand.is_empty() && game.legal.is_empty());

    // Back up: the next request deals, and the bots play up to seat 0.
    app.start_dealing().await;
    let dealt = me.view(&id).await;
    let game = dealt.game.clone().unwrap();
    assert_eq!(game.my_hand.len(), 10);
    assert_eq!(game.turn, Some(0));
    assert!(!dealt.client_seed.is_empty());

    // A few moves, then the replica stops and a new one takes over from the log.
    for _ in 0..5 {
        let view = me.view(&id).await;
        let action = moves::choose(&view, 5).unwrap();
        me.act(&id, view.version, &uuid::Uuid::now_v7().to_string(), action)
            .await
            .unwrap();
    }
    let before = me.view(&id).await;
    app.stop_replica(0).await;
    let replica = app.start_replica().await;
    let me = me.on(&replica);
    let after = me.view(&id).await;
    assert_eq!(after, before, "the same table, rebuilt from its log");

    // Play on to the end through the new replica; its watch replays the whole log.
    let mut moves = 0;
    loop {
        let view = me.view(&id).await;
        if view.status == pb::TableStatus::Finished as i32 && !view.server_seed.is_empty() {
            break;
        }
        let action = moves::choose(&view, 5).expect("seat 0's turn: bots play at once");
        me.act(&id, view.version, &uuid::Uuid::now_v7().to_string(), action)
            .await
            .unwrap();
        moves += 1;
        assert!(moves < 5_000);
    }
    let end = me.view(&id).await;
    let mut stream = me.watch(&id, 0).await;
    for version in 1..=end.version {
        let message = stream.message().await.unwrap().unwrap();
        assert_eq!(message.version, version);
    }
    app.stop().await;
}

/// The next message of `stream` that is a `HandStarted` (10 s at most): the hand dealt.
async fn hand_started(stream: &mut tonic::Streaming<pb::WatchResponse>) -> u64 {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let message = tokio::time::timeout_at(deadline, stream.message())
            .await
            .expect("a hand dealt within 10 s, with no request to the table")
            .unwrap()
            .unwrap();
        if matches!(
            message.event.as_ref().and_then(|e| e.event.as_ref()),
            Some(pb::table_event::Event::HandStarted(_))
        ) {
            return message.version;
        }
    }
}

/// A deal the service owes (the dealer was down when the match started) is taken again by
/// the service itself once the dealer is back: a seat waiting on `Watch`, as the proto tells
/// it to, sends no request that would prompt it.
async fn a_table_deals_by_itself_once_the_dealer_is_back(db: Db) {
    let mut app = TestApp::spawn_with(db, 1, false).await;
    let me = app.player();
    let id = me.create_against_bots(0).await;
    let sat = me.sit(&id, 0).await.unwrap();
    let mut stream = me.watch(&id, sat.version).await;
    app.start_dealing().await;
    let healthy = std::time::Instant::now();
    let dealt = hand_started(&mut stream).await;
    // The owed step is retried at least every second, so a dealer healthy again is used
    // within about one (and a debug build's deal).
    assert!(
        healthy.elapsed() < std::time::Duration::from_millis(2_500),
        "dealt {:?} after the dealer was healthy",
        healthy.elapsed()
    );
    assert_eq!(
        dealt,
        sat.version + 1,
        "the deal is the next event after the start"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_table_deals_by_itself_once_the_dealer_is_back_embedded() {
    a_table_deals_by_itself_once_the_dealer_is_back(Db::Sqlite).await;
}

#[tokio::test]
async fn a_table_deals_by_itself_once_the_dealer_is_back_postgres() {
    a_table_deals_by_itself_once_the_dealer_is_back(Db::Postgres).await;
}

/// The step owed survives the replica that owed it: a new replica over the same database
/// finds the table in the deadlines projection and deals once the dealer is back, with no
/// request to the table.
async fn a_new_replica_takes_the_step_its_predecessor_owed(db: Db) {
    let mut app = TestApp::spawn_with(db, 1, false).await;
    let me = app.player();
    let id = me.create_against_bots(0).await;
    let sat = me.sit(&id, 0).await.unwrap();
    app.stop_replica(0).await;
    let replica = app.start_replica().await;
    let me = me.on(&replica);
    let mut stream = me.watch(&id, sat.version).await;
    app.start_dealing().await;
    let healthy = std::time::Instant::now();
    let dealt = hand_started(&mut stream).await;
    // The owed step is retried at least every second, so a dealer healthy again is used
    // within about one (and a debug build's deal).
    assert!(
        healthy.elapsed() < std::time::Duration::from_millis(2_500),
        "dealt {:?} after the dealer was healthy",
        healthy.elapsed()
    );
    assert_eq!(dealt, sat.version + 1);
    app.stop().await;
}

#[tokio::test]
async fn a_new_replica_takes_the_step_its_predecessor_owed_embedded() {
    a_new_replica_takes_the_step_its_predecessor_owed(Db::Sqlite).await;
}

#[tokio::test]
async fn a_new_replica_takes_the_step_its_predecessor_owed_postgres() {
    a_new_replica_takes_the_step_its_predecessor_owed(Db::Postgres).await;
}

/// A reveal the service owes (the commitment service unreachable when the game finished) is
/// taken again by the service itself once it is back: after the game nobody asks for anything.
async fn a_finished_game_is_revealed_once_the_commitment_service_is_back(db: Db) {
    let app = TestApp::spawn_with(db, 1, true).await;
    let me = app.player();
    let id = me.create_against_bots(0).await;
    me.sit(&id, 0).await.unwrap();
    // The first hand is dealt (its client seed fixed): from here the tables service needs
    // the commitment service only for the reveal. Cut, then play to the end.
    assert_eq!(me.view(&id).await.game.unwrap().my_hand.len(), 10);
    app.commitment_link().cut(true);
    let mut moves = 0;
    let finished = loop {
        let view = me.view(&id).await;
        if view.status == pb::TableStatus::Finished as i32 {
            break view;
        }
        let action = moves::choose(&view, 9).expect("seat 0's turn: bots play at once");
        me.act(&id, view.version, &uuid::Uuid::now_v7().to_string(), action)
            .await
            .unwrap();
        moves += 1;
        assert!(moves < 5_000);
    };
    assert!(finished.server_seed.is_empty(), "not revealed while cut");
    let mut stream = me.watch(&id, finished.version).await;
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(500), stream.message())
            .await
            .is_err(),
        "nothing can be appended while the commitment service is out of reach"
    );
    app.commitment_link().cut(false);
    let back = std::time::Instant::now();
    let message = tokio::time::timeout(std::time::Duration::from_secs(10), stream.message())
        .await
        .expect("revealed within 10 s, with no request to the table")
        .unwrap()
        .unwrap();
    // Retried at least every second: the commitment service back is used within about one.
    assert!(
        back.elapsed() < std::time::Duration::from_millis(2_500),
        "revealed {:?} after the commitment service was back",
        back.elapsed()
    );
    assert!(
        matches!(
            message.event.as_ref().and_then(|e| e.event.as_ref()),
            Some(pb::table_event::Event::TableSeedRevealed(_))
        ),
        "{message:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_finished_game_is_revealed_once_the_commitment_service_is_back_embedded() {
    a_finished_game_is_revealed_once_the_commitment_service_is_back(Db::Sqlite).await;
}

#[tokio::test]
async fn a_finished_game_is_revealed_once_the_commitment_service_is_back_postgres() {
    a_finished_game_is_revealed_once_the_commitment_service_is_back(Db::Postgres).await;
}
