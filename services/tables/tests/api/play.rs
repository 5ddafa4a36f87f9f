//! Four players play a whole match through gRPC, each move chosen by the engine's bot from
//! the player's own `GetTable` view, while every seat and a spectator watch. Every watched
//! message and every view is checked for other seats' hands; at the end the revealed seed
//! re-derives every deal.

use std::collections::BTreeMap;
use std::time::Duration;

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::table_event::Event as E;
use tokio::task::JoinHandle;

use crate::harness::{Db, Player, TestApp};
use crate::moves;

/// Everything a watcher received (with turn views), up to and including the seed reveal.
pub(crate) fn watch_to_the_end(
    player: &Player,
    table_id: &str,
) -> JoinHandle<Vec<pb::WatchResponse>> {
    let player = player.clone();
    let table_id = table_id.to_owned();
    tokio::spawn(async move {
        let mut stream = player.watch_turns(&table_id, 0).await;
        let mut got = Vec::new();
        while let Some(message) = stream.message().await.unwrap() {
            let last = matches!(
                message.event.as_ref().and_then(|e| e.event.as_ref()),
                Some(E::TableSeedRevealed(_))
            );
            got.push(message);
            if last {
                return got;
            }
        }
        panic!("the watch ended before the seed was revealed");
    })
}

/// Versions 1, 2, 3... and, before the game finished, no `CardsDealt` but the viewer's own;
/// a turn view only for the viewer's own seat, when it is to act (none for a spectator).
pub(crate) fn check_watched(messages: &[pb::WatchResponse], viewer: Option<u32>) {
    let mut finished = false;
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m.version, i as u64 + 1, "versions without gap or duplicate");
        if let Some(view) = &m.view {
            let game = view.game.as_ref().unwrap();
            assert!(
                viewer.is_some() && game.my_seat == viewer && game.turn == viewer,
                "viewer {viewer:?} received seat {:?}'s view at version {}",
                game.my_seat,
                m.version
            );
            assert_eq!(view.version, m.version);
        }
        match m.event.as_ref().and_then(|e| e.event.as_ref()).unwrap() {
            E::CardsDealt(dealt) => {
                assert!(
                    finished || viewer == Some(dealt.seat),
                    "viewer {viewer:?} received seat {}'s cards at version {}",
                    dealt.seat,
                    m.version
                );
            }
            E::GameFinished(_) => finished = true,
            _ => {}
        }
    }
    assert!(finished);
}

async fn full_match(db: Db) {
    let app = TestApp::spawn(db).await;
    let players: Vec<Player> = (0..4).map(|_| app.player()).collect();
    let spectator = app.player();
    let created = players[0]
        .create(pb::CreateTableRequest {
            options: None,
            bot_seats: vec![],
            move_seconds: 0,
            timelock_seconds: 0,
        })
        .await;
    let id = created.table_id.clone();
    assert_eq!(created.version, 1);
    assert_eq!(created.short_code, created.commitment[..5]);
    let watchers: Vec<_> = players
        .iter()
        .chain([&spectator])
        .map(|p| watch_to_the_end(p, &id))
        .collect();

    for (seat, p) in players.iter().enumerate() {
        let sat = p.sit(&id, seat as u32).await.unwrap();
        assert_eq!(sat.commitment, created.commitment);
        assert_eq!(sat.short_code, created.short_code);
        if seat < 3 {
            p.contribute(&id, &format!("my seed {seat}")).await.unwrap();
        }
    }

    // (seat, hand) -> the cards the seat's own view showed at some point.
    let mut shown: BTreeMap<(u32, u32), Vec<String>> = BTreeMap::new();
    let mut moves = 0;
    loop {
        let table = spectator.view(&id).await;
        let game = table.game.clone().unwrap();
        assert!(game.my_hand.is_empty() && game.my_seat.is_none() && game.legal.is_empty());
        if table.status == pb::TableStatus::Finished as i32 && !table.server_seed.is_empty() {
            break;
        }
        let turn = game.turn.expect("someone must act while the match is on");
        let player = &players[turn as usize];
        let mine = player.view(&id).await;
        let my_game = mine.game.as_ref().unwrap();
        assert_eq!(my_game.my_seat, Some(turn));
        if let Some(hand) = my_game.hand {
            shown
                .entry((turn, hand))
                .or_default()
                .extend(my_game.my_hand.iter().cloned());
        }
        // Another seat's view at the same moment: its own cards only, no moves.
        let other = &players[((turn + 1) % 4) as usize];
        let theirs = other.view(&id).await;
        assert!(theirs.game.as_ref().unwrap().legal.is_empty());
        let action = moves::choose(&mine, 0x5eed).expect("the seat to act has legal moves");
        let command_id = uuid::Uuid::now_v7().to_string();
        let version = player
            .act(&id, mine.version, &command_id, action.clone())
            .await
            .unwrap();
        assert!(version > mine.version);
        moves += 1;
        assert!(moves < 5_000, "the match should end");
    }

    // At least one whole hand: 40 cards played by the players themselves.
    assert!(moves >= 40, "{moves} moves");
    let end = players[0].view(&id).await;
    let game = end.game.clone().unwrap();
    assert_eq!(game.phase, "finished");
    let winner = game.winner.expect("a winner");
    assert!(!end.client_seed.is_empty());

    let mut watched = Vec::new();
    for w in watchers {
        watched.push(
            tokio::time::timeout(Duration::from_secs(60), w)
                .await
                .unwrap()
                .unwrap(),
        );
    }
    for (i, messages) in watched.iter().enumerate() {
        check_watched(messages, (i < 4).then_some(i as u32));
        assert_eq!(messages.len() as u64, end.version);
    }
    // Public events are the same in every view; placeholders only where CardsDealt is.
    for v in 0..end.version as usize {
        let views: Vec<&pb::TableEvent> = watched
            .iter()
            .map(|m| m[v].event.as_ref().unwrap())
            .collect();
        let hidden = views
            .iter()
            .filter(|e| matches!(e.event, Some(E::Placeholder(_))))
            .count();
        match hidden {
            0 => assert!(views.windows(2).all(|w| w[0] == w[1])),
            // Three seats and the spectator do not see one seat's cards.
            4 => assert!(
                views
                    .iter()
                    .any(|e| matches!(e.event, Some(E::CardsDealt(_))))
            ),
            n => panic!("{n} placeholders at version {}", v + 1),
        }
    }

    // After the game, everything is public: replay from 0 as the spectator and re-derive
    // every deal from the revealed seed.
    let mut replay = spectator.watch(&id, 0).await;
    let mut events = Vec::new();
    while events.len() < end.version as usize {
        events.push(replay.message().await.unwrap().unwrap());
    }
    let mut deals = 0;
    let mut finished = None;
    let mut current: Option<(u32, Deal)> = None;
    for m in &events {
        match m.event.as_ref().unwrap().event.as_ref().unwrap() {
            E::Placeholder(_) => panic!("a placeholder after the game finished"),
            E::HandStarted(h) => {
                assert_eq!(h.commitment, created.commitment);
                assert_eq!(h.client_seed, end.client_seed);
                assert_eq!(h.salt, h.hand.to_string());
                let deal = Deal::from_seeds(Deck::Dix, &end.server_seed, &h.client_seed, &h.salt);
                current = Some((h.hand, deal));
                deals += 1;
            }
            E::CardsDealt(c) => {
                let (hand, deal) = current.as_ref().unwrap();
                assert_eq!(c.hand, *hand);
                let expected = deal.codes(&deal.hands[c.position as usize]);
                assert_eq!(c.cards, expected, "hand {hand}, seat {}", c.seat);
                // What the seat's own view showed is among its dealt cards.
                for card in shown.get(&(c.seat, c.hand)).into_iter().flatten() {
                    assert!(c.cards.contains(card));
                }
            }
            E::GameFinished(f) => finished = Some(f.clone()),
            _ => {}
        }
    }
    let finished = finished.unwrap();
    assert_eq!(finished.winner, winner);
    assert_eq!(finished.hands_played, deals);
    assert_eq!(finished.final_scores, game.scores);
    assert_eq!(finished.reason, pb::FinishReason::Completed as i32);
    for (seat, p) in finished.players.iter().enumerate() {
        assert_eq!(p.seat, seat as u32);
        assert_eq!(p.player_id, players[seat].id.to_string());
        assert!(!p.bot);
    }
    assert_eq!(finished.teams[0].seats, vec![0, 2]);
    assert_eq!(finished.teams[1].seats, vec![1, 3]);
    // The three contributions are public events of the table.
    let contributed = events
        .iter()
        .filter(|m| matches!(m.event.as_ref().unwrap().event, Some(E::SeedContributed(_))))
        .count();
    assert_eq!(contributed, 3);

    // The auditor's replay: the stored log, decoded and mapped back to the rules engine's
    // events, is re-decided event by event and ends where the table did.
    let stream = fairdeal_eventstore::StreamId::of("table", &id).unwrap();
    let stored = app
        .tables_storage()
        .events()
        .read_stream(&stream, 1, 100_000)
        .await
        .unwrap();
    assert_eq!(stored.len() as u64, end.version);
    let decoded: Vec<_> = stored
        .iter()
        .map(|e| fairdeal_tables::events::from_recorded::<fairdeal_tables::Game>(e).unwrap())
        .collect();
    let log = fairdeal_tables::domain::engine_log(&decoded);
    let replayed = match <fairdeal_tables::Game as fairdeal_table_game::TableGame>::verify(&log)
        .expect("the log re-decides")
    {
        fairdeal_games_wire::any::AnyGame::JeuDu10(game) => game,
        other => panic!("a Jeu du 10 table replays as Jeu du 10, not {other:?}"),
    };
    assert_eq!(replayed.phase(), fairdeal_games::Phase::Finished);
    assert_eq!(replayed.scores().to_vec(), finished.final_scores);
    app.stop().await;
}

#[tokio::test]
async fn four_players_play_a_match_to_the_end_embedded() {
    full_match(Db::Sqlite).await;
}

#[tokio::test]
async fn four_players_play_a_match_to_the_end_postgres_nats() {
    full_match(Db::Postgres).await;
}
