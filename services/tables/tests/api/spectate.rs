//! Spectators: `Spectate` / `StopSpectating` append `SpectatorJoined` / `SpectatorLeft` to
//! the table's stream once per change, a seated player and an unknown table are refused,
//! sitting down ends spectating, and a spectator arriving between a player's read and move
//! does not make the move stale.

use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::table_event::Event as E;
use tonic::Code;

use crate::harness::{Db, TestApp};
use crate::moves;

/// The next `count` messages of `stream` (within 30 s each).
async fn take(
    stream: &mut tonic::Streaming<pb::WatchResponse>,
    count: usize,
) -> Vec<pb::WatchResponse> {
    let mut got = Vec::new();
    while got.len() < count {
        let message = tokio::time::timeout(Duration::from_secs(30), stream.message())
            .await
            .expect("a message in time")
            .unwrap()
            .expect("the stream goes on");
        got.push(message);
    }
    got
}

fn event(m: &pb::WatchResponse) -> &E {
    m.event.as_ref().unwrap().event.as_ref().unwrap()
}

async fn spectators(db: Db) {
    let app = TestApp::spawn(db).await;
    let (me, watcher, late) = (app.player(), app.player(), app.player());
    let id = me
        .create(pb::CreateTableRequest {
            bot_seats: vec![2, 3],
            ..Default::default()
        })
        .await
        .table_id;
    let sat = me.sit(&id, 0).await.unwrap();
    let mut stream = watcher.watch(&id, sat.version).await;

    // Joining: one event, then idempotent.
    let joined = watcher.spectate(&id).await.unwrap();
    assert_eq!(joined, sat.version + 1);
    assert_eq!(watcher.spectate(&id).await.unwrap(), joined);
    let view = watcher.view(&id).await;
    assert_eq!(
        (view.version, view.spectators, view.spectating),
        (joined, 1, true)
    );
    let mine = me.view(&id).await;
    assert_eq!((mine.spectators, mine.spectating), (1, false));
    let got = take(&mut stream, 1).await;
    assert_eq!(got[0].version, joined);
    match event(&got[0]) {
        E::SpectatorJoined(j) => {
            assert_eq!(j.user_id, watcher.id.to_string());
            assert_eq!(j.table_id, id);
        }
        other => panic!("expected SpectatorJoined, got {other:?}"),
    }

    // Refusals change nothing.
    let seated = me.spectate(&id).await.unwrap_err();
    assert_eq!(seated.code(), Code::FailedPrecondition);
    assert!(seated.message().contains("seat 0") || seated.message().contains("sit"));
    let unknown = watcher
        .spectate(&uuid::Uuid::now_v7().to_string())
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let malformed = watcher.spectate("not-a-table").await.unwrap_err();
    assert_eq!(malformed.code(), Code::InvalidArgument);
    assert!(malformed.message().contains("table_id"));
    let unknown = watcher
        .stop_spectating(&uuid::Uuid::now_v7().to_string())
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert_eq!(me.view(&id).await.version, joined);

    // Leaving: one event, then idempotent.
    let left = watcher.stop_spectating(&id).await.unwrap();
    assert_eq!(left, joined + 1);
    assert_eq!(watcher.stop_spectating(&id).await.unwrap(), left);
    let view = watcher.view(&id).await;
    assert_eq!((view.spectators, view.spectating), (0, false));
    match event(&take(&mut stream, 1).await[0]) {
        E::SpectatorLeft(l) => assert_eq!(l.user_id, watcher.id.to_string()),
        other => panic!("expected SpectatorLeft, got {other:?}"),
    }

    // Back as a spectator, then sitting down: SpectatorLeft first, then the seat (which
    // starts the match: seats 2 and 3 are bots).
    let again = watcher.spectate(&id).await.unwrap();
    let took = watcher.sit(&id, 1).await.unwrap();
    let got = take(&mut stream, 3).await;
    assert_eq!(got[0].version, again);
    assert!(matches!(event(&got[0]), E::SpectatorJoined(_)));
    match (event(&got[1]), event(&got[2])) {
        (E::SpectatorLeft(l), E::SeatTaken(t)) => {
            assert_eq!(l.user_id, watcher.id.to_string());
            assert_eq!((t.player_id.as_str(), t.seat), (l.user_id.as_str(), 1));
            assert_eq!(got[2].version, took.version - 1, "then MatchStarted");
        }
        other => panic!("expected SpectatorLeft then SeatTaken, got {other:?}"),
    }
    let view = watcher.view(&id).await;
    assert_eq!((view.spectators, view.spectating), (0, false));
    assert_eq!(view.status, pb::TableStatus::Playing as i32);
    let seated = watcher.spectate(&id).await.unwrap_err();
    assert_eq!(seated.code(), Code::FailedPrecondition);

    // A spectator arrives between the read of the player to act and their move: the move
    // still counts (spectators change nothing a move depends on).
    let seats = [&me, &watcher];
    let before = me.view(&id).await;
    let turn = before.game.as_ref().unwrap().turn.expect("a player's turn") as usize;
    let player = seats[turn];
    let read = player.view(&id).await;
    let arrived = late.spectate(&id).await.unwrap();
    assert_eq!(arrived, read.version + 1);
    let action = moves::choose(&read, 7).unwrap();
    let after = player
        .act(&id, read.version, "after-a-spectator", action.clone())
        .await
        .unwrap();
    assert!(after > arrived);
    // A real change since the read is still stale.
    let stale = player
        .act(&id, read.version, "stale-one", action)
        .await
        .unwrap_err();
    assert_eq!(stale.code(), Code::Aborted);
    let view = late.view(&id).await;
    assert_eq!((view.spectators, view.spectating), (1, true));
    // Spectators never see a hand.
    assert!(view.game.unwrap().my_hand.is_empty());
    app.stop().await;
}

#[tokio::test]
async fn spectators_join_leave_and_sit_down_embedded() {
    spectators(Db::Sqlite).await;
}

#[tokio::test]
async fn spectators_join_leave_and_sit_down_postgres_nats() {
    spectators(Db::Postgres).await;
}
