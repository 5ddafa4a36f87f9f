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
