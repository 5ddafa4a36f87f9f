//! Reconnecting watchers: from any version, no gap and no duplicate, across moves made while
//! disconnected; a watcher past the current version waits for the next event.

use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::table_event::Event as E;

use crate::harness::{Db, Player, TestApp};
use crate::moves;

/// The next message of `stream`, within 30 s.
async fn next(stream: &mut tonic::Streaming<pb::WatchResponse>) -> pb::WatchResponse {
    tokio::time::timeout(Duration::from_secs(30), stream.message())
        .await
        .expect("a message in time")
        .unwrap()
        .expect("the stream goes on")
}

/// One legal move of `player` (its turn: the bots have played theirs).
async fn play_one(player: &Player, id: &str) {
    let view = player.view(id).await;
    let action = moves::choose(&view, 3).unwrap();
    player
        .act(id, view.version, &uuid::Uuid::now_v7().to_string(), action)
        .await
        .unwrap();
}

async fn reconnects(db: Db) {
    let app = TestApp::spawn(db).await;
    let me = app.player();
    let spectator = app.player();
    let id = me.create_against_bots(0).await;
    me.sit(&id, 0).await.unwrap();

    for viewer in [&me, &spectator] {
        let mut seen: Vec<pb::WatchResponse> = Vec::new();
        // Cut the stream after a few messages each time, move, and reconnect from the last
        // version received.
        for round in 0..6u64 {
            let after = seen.last().map_or(0, |m| m.version);
            let mut stream = viewer.watch(&id, after).await;
            let current = viewer.view(&id).await.version;
            let take = 3 + round * 5;
            while seen.last().map_or(0, |m| m.version) < current.min(after + take) {
                seen.push(next(&mut stream).await);
            }
            drop(stream);
            if round % 2 == 0 {
                play_one(&me, &id).await;
            }
        }
        // Past the current version: the stream waits, then delivers the next event live.
        let current = viewer.view(&id).await.version;
        let mut stream = viewer.watch(&id, current).await;
        let mut from_start = viewer.watch(&id, seen.last().unwrap().version).await;
        play_one(&me, &id).await;
        let live = next(&mut stream).await;
        assert_eq!(live.version, current + 1);
        while seen.last().unwrap().version < current + 1 {
            seen.push(next(&mut from_start).await);
        }
        for (i, m) in seen.iter().enumerate() {
            assert_eq!(m.version, i as u64 + 1, "no gap, no duplicate");
            if let Some(E::CardsDealt(c)) = m.event.as_ref().unwrap().event.as_ref() {
                assert!(
                    std::ptr::eq(viewer, &me) && c.seat == 0,
                    "only seat 0's own cards, and only to seat 0"
                );
            }
        }
        // Replays agree: the same messages from version 0 in one go.
        let mut again = viewer.watch(&id, 0).await;
        for m in &seen {
            assert_eq!(&next(&mut again).await, m);
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn reconnecting_watchers_see_every_version_once_embedded() {
    reconnects(Db::Sqlite).await;
}

#[tokio::test]
async fn reconnecting_watchers_see_every_version_once_postgres_nats() {
    reconnects(Db::Postgres).await;
}

/// A seat that watches with turn views plays a whole match from its stream alone: each
/// view comes on the message after which its seat is to act, at that message's version,
/// equal to `GetTable` at that moment; a spectator watching the same way gets none.
async fn plays_from_turn_views(db: Db) {
    let app = TestApp::spawn(db).await;
    let me = app.player();
    let spectator = app.player();
    let id = me.create_against_bots(0).await;
    spectator.spectate(&id).await.unwrap();
    let mut stream = me.watch_turns(&id, 0).await;
    let mut watching = spectator.watch_turns(&id, 0).await;
    me.sit(&id, 0).await.unwrap();

    let (mut views, mut last) = (0u64, 0u64);
    loop {
        let message = next(&mut stream).await;
        assert_eq!(message.version, last + 1, "no gap, no duplicate");
        last = message.version;
        let other = next(&mut watching).await;
        assert_eq!(other.version, message.version);
        assert!(other.view.is_none(), "a spectator has no turn");
        if let Some(E::TableSeedRevealed(_)) = message.event.as_ref().unwrap().event.as_ref() {
            assert!(message.view.is_none());
            break;
        }
        let Some(view) = message.view else { continue };
        views += 1;
        assert_eq!(view.version, message.version);
        let game = view.game.as_ref().unwrap();
        assert_eq!((game.turn, game.my_seat), (Some(0), Some(0)));
        assert!(!game.legal.is_empty() && !game.my_hand.is_empty());
        // The bots wait for this seat: the table stands where the view says.
        assert_eq!(me.view(&id).await, view);
        let action = moves::choose(&view, views).unwrap();
        me.act(&id, view.version, &format!("t{views}"), action)
            .await
            .unwrap();
    }
    let end = me.view(&id).await;
    assert_eq!(end.status, pb::TableStatus::Finished as i32);
    assert!(views > 10, "a match takes this seat many moves ({views})");
    app.stop().await;
}

#[tokio::test]
async fn a_seat_plays_a_match_from_its_turn_views_embedded() {
    plays_from_turn_views(Db::Sqlite).await;
}

#[tokio::test]
async fn a_seat_plays_a_match_from_its_turn_views_postgres_nats() {
    plays_from_turn_views(Db::Postgres).await;
}
