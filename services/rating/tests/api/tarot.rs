//! French Tarot: a GameFinished gives one change per seat in the game's own kind
//! (`tarot/<seats>`), each against every other player with the mean of its results as its
//! score; the reads and the rebuild work for those kinds; a malformed one is parked with the
//! field at fault.

use fairdeal_eventstore::StreamId;
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_rating::{
    DEFAULT_K, Exactness, KFactor, Opponents, Placing, Rating, RecordedChange, Score, each_alone,
};
use fairdeal_rating_service::projection::{rebuild, stream_of};
use uuid::Uuid;

use crate::harness::{Db, TestApp, four, game, tarot_game, with};

/// The player's `RatingChanged` events, in order.
async fn changes(app: &TestApp, player: Uuid) -> Vec<rpb::RatingChanged> {
    let stream: StreamId = stream_of(player).unwrap();
    app.storage
        .events()
        .read_stream(&stream, 1, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.decode_payload::<rpb::RatingChanged>().unwrap())
        .collect()
}

/// The change as recorded, its score read as a mean against its opponents.
fn recorded(m: &rpb::RatingChanged) -> RecordedChange {
    RecordedChange {
        before: Rating::new(m.rating_before).unwrap(),
        opponents: Opponents::new(
            m.opponents
                .iter()
                .map(|o| Rating::new(o.rating_before).unwrap())
                .collect(),
        )
        .unwrap(),
        score: Score::recorded(m.score, m.opponents.len()).unwrap(),
        k: KFactor::new(m.k).unwrap(),
        expectation: m.expectation,
        after: m.rating_after,
    }
}

fn new_players(n: usize) -> Vec<Uuid> {
    (0..n).map(|_| Uuid::now_v7()).collect()
}

async fn tarot_is_rated_in_its_kind(db: Db) {
    let app = TestApp::spawn(db).await;
    // Four seats, seat 1 first, seats 2 and 3 level last: placings 2, 1, 3, 3.
    let players = new_players(4);
    let first = tarot_game(&players, &[40, 250, -145, -145]);
    app.finish(&first).await;
    app.until_rated_seats(&first.table_id, 4).await;
    // S: (2 + 0) / 3 = 2/3, 1, (0 + 0.5) / 3 = 1/6 twice; E = 0.5 for all.
    let scores: [f64; 4] = [2.0 / 3.0, 1.0, 1.0 / 6.0, 1.0 / 6.0];
    let mut after = Vec::new();
    for (seat, player) in players.iter().enumerate() {
        let list = changes(&app, *player).await;
        assert_eq!(list.len(), 1, "seat {seat}");
        let m = &list[0];
        assert_eq!(m.game_kind, "tarot/4");
        assert_eq!(m.table_id, first.table_id);
        assert_eq!(m.seat, seat as u32);
        assert_eq!((m.rating_before, m.k, m.games_played), (1500.0, 32.0, 1));
        assert_eq!(m.score.to_bits(), scores[seat].to_bits(), "seat {seat}");
        assert_eq!(m.expectation, 0.5);
        assert_eq!(
            m.rating_after.to_bits(),
            (1500.0 + 32.0 * (scores[seat] - 0.5)).to_bits()
        );
        // Every other player, clockwise from the next seat, weight 1 (all at 1500).
        let opponents: Vec<String> = m.opponents.iter().map(|o| o.player_id.clone()).collect();
        let expected: Vec<String> = (1..4)
            .map(|d| players[(seat + d) % 4].to_string())
            .collect();
        assert_eq!(opponents, expected);
        assert!(m.opponents.iter().all(|o| o.weight == 1.0));
        recorded(m).verify(Exactness::Bits).unwrap();
        after.push(m.rating_after);
    }
    // Zero-sum among equal ratings.
    assert!(after.iter().map(|a| a - 1500.0).sum::<f64>().abs() <= 1e-9);
    assert_eq!(app.parked().await, 0);

    // A second game of three of them and a newcomer, at five seats: another kind, so
    // everyone starts at 1500 there; then a four-seat game starts from the first's ratings
    // and is crates/rating's to the bit.
    let newcomer = Uuid::now_v7();
    let five: Vec<Uuid> = vec![players[3], newcomer, players[0], players[2], players[1]];
    let g5 = tarot_game(&five, &[300, -75, -75, -75, -75]);
    app.finish(&g5).await;
    app.until_rated_seats(&g5.table_id, 5).await;
    let m = changes(&app, newcomer).await.pop().unwrap();
    assert_eq!((m.game_kind.as_str(), m.rating_before), ("tarot/5", 1500.0));
    assert_eq!(m.opponents.len(), 4);
    assert_eq!(m.score, 0.375); // (0 + 3 * 0.5) / 4

    let seated = [players[2], players[3], players[0], players[1]];
    let g4 = tarot_game(&seated, &[10, 20, 30, 40]);
    app.finish(&g4).await;
    app.until_rated_seats(&g4.table_id, 4).await;
    let before: Vec<Rating> = [after[2], after[3], after[0], after[1]]
        .map(|r| Rating::new(r).unwrap())
        .to_vec();
    let placings: [Placing; 4] = [4, 3, 2, 1];
    let by_seat: Vec<(Rating, Placing)> = before.iter().copied().zip(placings).collect();
    let expected = each_alone(&by_seat, DEFAULT_K).unwrap();
    for (seat, player) in seated.iter().enumerate() {
        let list = changes(&app, *player).await;
        let m = list.last().unwrap();
        assert_eq!(m.game_kind, "tarot/4");
        assert_eq!(m.games_played, 2);
        assert_eq!(m.rating_before.to_bits(), before[seat].value().to_bits());
        assert_eq!(
            m.rating_after.to_bits(),
            expected[seat].after().value().to_bits()
        );
        let weights: Vec<f64> = m.opponents.iter().map(|o| o.weight).collect();
        assert_eq!(weights, expected[seat].weights());
    }

    // The reads: the kinds, the history of one kind, the kind's leaderboard.
    let token = app.player_token(players[0]);
    let mut client = app.client.clone();
    let ratings = client
        .get_ratings(with(
            &token,
            rpb::GetRatingsRequest {
                player_id: players[1].to_string(),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    let kinds: Vec<(&str, u32)> = ratings
        .ratings
        .iter()
        .map(|r| (r.game_kind.as_str(), r.games_played))
        .collect();
    assert_eq!(kinds, vec![("tarot/4", 2), ("tarot/5", 1)]);
    let history = client
        .list_rating_history(with(
            &token,
            rpb::ListRatingHistoryRequest {
                player_id: players[1].to_string(),
                game_kind: "tarot/5".into(),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(history.entries.len(), 1);
    assert_eq!(
        history.entries[0].change.as_ref().unwrap().table_id,
        g5.table_id
    );
    let board = client
        .get_leaderboard(with(
            &token,
            rpb::GetLeaderboardRequest {
                game_kind: "tarot/4".into(),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(board.game_kind, "tarot/4");
    assert_eq!(board.entries.len(), 4);
    let ranked: Vec<f64> = board.entries.iter().map(|e| e.rating_unrounded).collect();
    assert!(ranked.windows(2).all(|w| w[0] >= w[1]), "{ranked:?}");
    let unknown = client
        .get_leaderboard(with(
            &token,
            rpb::GetLeaderboardRequest {
                game_kind: "tarot".into(),
                ..Default::default()
            },
        ))
        .await
        .unwrap_err();
    assert!(
        unknown.message().contains("tarot/3"),
        "{}",
        unknown.message()
    );

    // A Jeu du 10 game of four of them is still its own kind, rated as before.
    let jeu = game(four(), 0, fairdeal_proto::fairdeal::tables::v1::Deck::Dix);
    app.finish(&jeu).await;
    app.until_rated(&jeu.table_id).await;

    // The rebuild recomputes every change, Tarot's fractional scores included.
    let report = rebuild(&app.storage).await.unwrap();
    assert_eq!(report.changes, 4 + 5 + 4 + 4);
    assert_eq!(app.parked_reasons().await, Vec::<String>::new());
    app.close().await;
}

#[tokio::test]
async fn a_tarot_game_is_rated_in_its_kind_sqlite() {
    tarot_is_rated_in_its_kind(Db::Sqlite).await;
}

#[tokio::test]
async fn a_tarot_game_is_rated_in_its_kind_postgres() {
    tarot_is_rated_in_its_kind(Db::Postgres).await;
}

async fn tarot_unrated_and_malformed(db: Db) {
    let app = TestApp::spawn(db).await;
    // A bot seat: not rated. An abandoned seat: a loss whatever its placing.
    let players = new_players(3);
    let mut with_bot = tarot_game(&players, &[30, 0, -30]);
    with_bot.players[1].player_id.clear();
    with_bot.players[1].bot = true;
    app.finish(&with_bot).await;
    let mut abandoned = tarot_game(&players, &[30, 0, -30]);
    abandoned.players[0].abandoned = true;
    app.finish(&abandoned).await;
    // Malformed: a side that is not its seat, a winner the scores do not place first.
    let mut bad_side = tarot_game(&new_players(4), &[1, 2, 3, 4]);
    bad_side.teams[2].seats = vec![2, 3];
    app.finish(&bad_side).await;
    let mut bad_winner = tarot_game(&new_players(5), &[1, 2, 3, 4, 5]);
    bad_winner.winner = 0;
    app.finish(&bad_winner).await;
    // And the consumer carries on.
    let good = tarot_game(&new_players(3), &[5, 5, 5]);
    app.finish(&good).await;
    app.until_rated_seats(&good.table_id, 3).await;
    app.wait_until("two parked events", || async { app.parked().await == 2 })
        .await;
    assert_eq!(app.rated_rows(&with_bot.table_id).await, 0);
    assert_eq!(app.rated_rows(&abandoned.table_id).await, 3);
    assert_eq!(app.rated_rows(&bad_side.table_id).await, 0);
    assert_eq!(app.rated_rows(&bad_winner.table_id).await, 0);
    let reasons = app.parked_reasons().await;
    assert_eq!(reasons.len(), 2);
    for field in ["GameFinished.teams.seats", "GameFinished.winner"] {
        assert!(reasons.iter().any(|r| r.contains(field)), "{reasons:?}");
    }
    let first = &changes(&app, players[0]).await[0];
    assert!(first.abandoned);
    assert_eq!((first.score, first.rating_after), (0.0, 1484.0));
    let second = &changes(&app, players[1]).await[0];
    assert_eq!((second.score, second.rating_after), (0.5, 1500.0));
    // Everyone level: a draw for all.
    for m in changes(&app, good.players[0].player_id.parse().unwrap()).await {
        assert_eq!((m.game_kind.as_str(), m.score), ("tarot/3", 0.5));
    }
    app.close().await;
}

#[tokio::test]
async fn tarot_bots_abandons_and_malformed_games_sqlite() {
    tarot_unrated_and_malformed(Db::Sqlite).await;
}

#[tokio::test]
async fn tarot_bots_abandons_and_malformed_games_postgres() {
    tarot_unrated_and_malformed(Db::Postgres).await;
}
