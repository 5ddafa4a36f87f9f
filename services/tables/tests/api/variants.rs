//! Every variant of SPEC 5 plays to `GameFinished` through gRPC: the two decks, with and
//! without penalised aces, and each way to win the trump and score (an auction, made or
//! nothing, purchase in points, purchase from a budget), sixteen tables at once. A player
//! holds seat 0 and plays from its turn views; the engine's bots hold the others. Each
//! finished game names its variant, and the revealed seed re-derives every deal with the
//! variant's deck.

use std::time::Duration;

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_proto::fairdeal::tables::v1 as pb;
use pb::table_event::Event as E;

use crate::harness::{Db, TestApp};
use crate::moves;
use crate::play::check_watched;

/// Longest wait for one message of a table's stream.
const WAIT: Duration = Duration::from_secs(60);

/// Every valid combination: 2 decks x aces or not x 4 ways to win the trump and score.
fn variants() -> Vec<pb::TableOptions> {
    let mut out = Vec::new();
    for deck in [pb::Deck::Dix, pb::Deck::Ruff] {
        for penalised_aces in [false, true] {
            for (made_or_nothing, purchase) in [
                (false, pb::Purchase::Unspecified),
                (true, pb::Purchase::Unspecified),
                (false, pb::Purchase::Points),
                (false, pb::Purchase::Budget),
            ] {
                out.push(pb::TableOptions {
                    deck: deck as i32,
                    penalised_aces,
                    made_or_nothing,
                    purchase: purchase as i32,
                    budget: None,
                    tarot: None,
                });
            }
        }
    }
    out
}

/// One table of `options` played to the seed reveal; checks what seat 0 watched, the
/// finished game and every deal.
async fn play_variant(app: &TestApp, options: pb::TableOptions) {
    let me = app.player();
    let created = me
        .create(pb::CreateTableRequest {
            options: Some(options),
            bot_seats: vec![1, 2, 3],
            move_seconds: 0,
            timelock_seconds: 0,
        })
        .await;
    let id = created.table_id;
    let mut stream = me.watch_turns(&id, 0).await;
    me.sit(&id, 0).await.unwrap();

    let mut watched = Vec::new();
    let mut moves = 0u64;
    loop {
        let message = tokio::time::timeout(WAIT, stream.message())
            .await
            .unwrap_or_else(|_| panic!("{options:?}: no message for {WAIT:?}"))
            .unwrap()
            .expect("the watch runs until the seed is revealed");
        if let Some(view) = &message.view
            && let Some(action) = moves::choose(view, moves)
        {
            moves += 1;
            me.act(&id, view.version, &format!("m{moves}"), action)
                .await
                .unwrap_or_else(|s| panic!("{options:?}: move {moves} refused: {s:?}"));
        }
        let revealed = matches!(
            message.event.as_ref().and_then(|e| e.event.as_ref()),
            Some(E::TableSeedRevealed(_))
        );
        watched.push(message);
        if revealed {
            break;
        }
    }
    check_watched(&watched, Some(0));
    assert!(moves > 0, "{options:?}: the player never moved");

    // After the game everything is public: replay it and re-derive every deal.
    let end = me.view(&id).await;
    assert_eq!(end.version, watched.len() as u64);
    assert_eq!(end.status, pb::TableStatus::Finished as i32);
    let deck = match pb::Deck::try_from(options.deck).unwrap() {
        pb::Deck::Ruff => Deck::Ruff,
        _ => Deck::Dix,
    };
    let mut replay = me.watch(&id, 0).await;
    let (mut deals, mut current, mut finished) = (0, None, None);
    for _ in 0..end.version {
        let message = tokio::time::timeout(WAIT, replay.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match message.event.unwrap().event.unwrap() {
            E::Placeholder(_) => panic!("{options:?}: a placeholder after the game finished"),
            E::HandStarted(h) => {
                assert_eq!(h.commitment, created.commitment);
                current = Some((
                    h.hand,
                    Deal::from_seeds(deck, &end.server_seed, &h.client_seed, &h.salt),
                ));
                deals += 1;
            }
            E::CardsDealt(c) => {
                let (hand, deal) = current.as_ref().unwrap();
                assert_eq!(c.hand, *hand);
                assert_eq!(
                    c.cards,
                    deal.codes(&deal.hands[c.position as usize]),
                    "{options:?}: hand {hand}, seat {}",
                    c.seat
                );
            }
            E::GameFinished(f) => finished = Some(f),
            _ => {}
        }
    }
    let finished = finished.unwrap_or_else(|| panic!("{options:?}: no GameFinished"));
    assert_eq!(finished.variant.as_ref(), Some(&options));
    assert_eq!(finished.reason, pb::FinishReason::Completed as i32);
    assert_eq!(finished.hands_played, deals);
    assert_eq!(finished.final_scores.len(), 2);
    assert!(finished.winner < 2);
    assert_eq!(finished.players.len(), 4);
    assert_eq!(finished.players[0].player_id, me.id.to_string());
    assert!(!finished.players[0].bot);
    assert!(finished.players[1..].iter().all(|p| p.bot));
}

async fn every_variant(db: Db) {
    let app = TestApp::spawn(db).await;
    futures::future::join_all(variants().into_iter().map(|o| play_variant(&app, o))).await;
    app.stop().await;
}

#[tokio::test]
async fn every_variant_reaches_game_finished_embedded() {
    every_variant(Db::Sqlite).await;
}

#[tokio::test]
async fn every_variant_reaches_game_finished_postgres_nats() {
    every_variant(Db::Postgres).await;
}
