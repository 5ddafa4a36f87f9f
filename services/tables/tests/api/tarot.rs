//! French Tarot tables (issue 34): a table of 3, 4 or 5 seats created with Tarot's options,
//! played to the end through gRPC by one seat from its own turn views (the client's bot
//! choosing from what the seat sees) against the service's bots, while the seat and a
//! spectator watch; every message each receives before the game is over is checked for
//! what it may see: no other seat's cards, no chien, no écart card but the taker's own.
//! The stored log re-decides as Tarot, every deal's scores summing to zero. A Tarot seat
//! whose clock runs out is played for, then abandoned to the bot, as a Jeu du 10 one is
//! (`clocks.rs`).

use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;
use fairdeal_table_game::TableGame;
use pb::table_event::Event as E;

use crate::clocks::timeouts_play_for_seat_0_then_abandon_it;
use crate::harness::{Db, TestApp};
use crate::moves;

/// The next message of `stream`, within 30 s.
async fn next(stream: &mut tonic::Streaming<pb::WatchResponse>) -> pb::WatchResponse {
    tokio::time::timeout(Duration::from_secs(30), stream.message())
        .await
        .expect("a message in time")
        .unwrap()
        .expect("the stream goes on")
}

/// Checks what `seat` (`None`: a spectator) was sent before `GameFinished`.
fn only_what_it_may_see(messages: &[pb::WatchResponse], seat: Option<u32>) {
    let mut taker = None;
    for m in messages {
        let Some(event) = m.event.as_ref().and_then(|e| e.event.as_ref()) else {
            continue;
        };
        match event {
            E::GameFinished(_) => return,
            E::CardsDealt(c) => assert_eq!(Some(c.seat), seat, "another seat's hand"),
            E::TalonDealt(_) => panic!("the chien, hidden from everyone during the game"),
            E::TarotAuctionWon(w) => taker = Some(w.seat),
            E::TarotCardDiscarded(d) => {
                assert_eq!(
                    Some(d.seat),
                    seat,
                    "an écart card shown to another than the taker"
                );
                assert_eq!(Some(d.seat), taker, "only the taker discards");
            }
            _ => {}
        }
    }
    panic!("the game finished");
}

async fn plays_tarot(db: Db, seats: u32) {
    let app = TestApp::spawn(db).await;
    let me = app.player();
    let spectator = app.player();
    let id = me
        .create(pb::CreateTableRequest {
            options: Some(pb::TableOptions {
                tarot: Some(pb::TarotOptions { seats, rounds: 1 }),
                ..Default::default()
            }),
            bot_seats: (1..seats).collect(),
            move_seconds: 0,
            timelock_seconds: 0,
        })
        .await
        .table_id;
    spectator.spectate(&id).await.unwrap();
    let mut turns = me.watch_turns(&id, 0).await;
    let mut watching = spectator.watch(&id, 0).await;
    me.sit(&id, 0).await.unwrap();

    let (mut mine, mut moves_made) = (Vec::new(), 0u64);
    loop {
        let message = next(&mut turns).await;
        assert_eq!(
            message.version,
            mine.len() as u64 + 1,
            "no gap, no duplicate"
        );
        let revealed = matches!(
            message.event.as_ref().and_then(|e| e.event.as_ref()),
            Some(E::TableSeedRevealed(_))
        );
        if let Some(view) = &message.view {
            let game = view.game.as_ref().unwrap();
            assert!(
                game.tarot.is_some(),
                "a Tarot table's view has Tarot's part"
            );
            assert_eq!(game.my_seat, Some(0));
            moves_made += 1;
            let action = moves::choose(view, moves_made).expect("a move on this seat's turn");
            me.act(&id, view.version, &format!("t{moves_made}"), action)
                .await
                .unwrap();
        }
        mine.push(message);
        if revealed {
            break;
        }
    }
    let mut theirs = Vec::new();
    while theirs.len() < mine.len() {
        theirs.push(next(&mut watching).await);
    }
    only_what_it_may_see(&mine, Some(0));
    only_what_it_may_see(&theirs, None);
    // At least its say in each deal's auction (a deal every seat passes is void).
    assert!(
        moves_made >= u64::from(seats),
        "this seat spoke in every deal ({moves_made} moves)"
    );

    let end = me.view(&id).await;
    assert_eq!(end.status, pb::TableStatus::Finished as i32);
    // The stored log re-decides as Tarot: every card, bid and score.
    let stored = app
        .tables_storage()
        .events()
        .read_stream(
            &fairdeal_eventstore::StreamId::of("table", &id).unwrap(),
            1,
            100_000,
        )
        .await
        .unwrap();
    let decoded: Vec<_> = stored
        .iter()
        .map(|e| fairdeal_tables::events::from_recorded::<fairdeal_tables::Game>(e).unwrap())
        .collect();
    let log = fairdeal_tables::domain::engine_log(&decoded);
    let game = match <fairdeal_tables::Game as TableGame>::verify(&log).expect("re-decides") {
        fairdeal_games_wire::any::AnyGame::Tarot(game) => game,
        other => panic!("a Tarot table replays as Tarot, not {other:?}"),
    };
    assert_eq!(game.scores().len(), seats as usize);
    assert_eq!(
        game.scores().iter().sum::<i32>(),
        0,
        "Tarot's scores sum to zero"
    );
    app.stop().await;
}

#[tokio::test]
async fn tarot_at_three_four_and_five_seats_embedded() {
    for seats in [3, 4, 5] {
        plays_tarot(Db::Sqlite, seats).await;
    }
}

#[tokio::test]
async fn tarot_at_three_four_and_five_seats_postgres_nats() {
    for seats in [3, 4, 5] {
        plays_tarot(Db::Postgres, seats).await;
    }
}

/// A Tarot table of four, 20 s a move, the engine's bot at seats 1 to 3: seat 0's clock
/// runs out as at a Jeu du 10 table. Two rounds (eight deals), so seat 0 has a turn in
/// every deal even when each is passed out: more turns than the walk needs.
async fn tarot_seat_times_out(db: Db) {
    let app = TestApp::spawn(db).await;
    let me = app.player();
    let id = me
        .create(pb::CreateTableRequest {
            options: Some(pb::TableOptions {
                tarot: Some(pb::TarotOptions {
                    seats: 4,
                    rounds: 2,
                }),
                ..Default::default()
            }),
            bot_seats: vec![1, 2, 3],
            move_seconds: 20,
            timelock_seconds: 0,
        })
        .await
        .table_id;
    timeouts_play_for_seat_0_then_abandon_it(&app, &me, &id, 4).await;
    app.stop().await;
}

#[tokio::test]
async fn tarot_timeouts_play_for_the_seat_then_abandon_it_embedded() {
    tarot_seat_times_out(Db::Sqlite).await;
}

#[tokio::test]
async fn tarot_timeouts_play_for_the_seat_then_abandon_it_postgres_nats() {
    tarot_seat_times_out(Db::Postgres).await;
}
