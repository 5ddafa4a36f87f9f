//! The consumer: a GameFinished gives the right four changes, exactly once; malformed and
//! unknown events are parked and the consumer carries on.

use fairdeal_eventstore::{NewEvent, StreamId};
use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating::{
    DEFAULT_K, Exactness, KFactor, Opponents, Rating, RecordedChange, Score, TeamOutcome,
    four_seats,
};
use fairdeal_rating_service::projection::stream_of;
use prost::Name;
use uuid::Uuid;

use crate::harness::{Db, TestApp, four, game};

/// The player's `RatingChanged` events, in order.
async fn changes(
    app: &TestApp,
    player: Uuid,
) -> Vec<(fairdeal_eventstore::RecordedEvent, rpb::RatingChanged)> {
    let stream: StreamId = stream_of(player).unwrap();
    app.storage
        .events()
        .read_stream(&stream, 1, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            assert_eq!(e.event_type, rpb::RatingChanged::full_name());
            let m = e.decode_payload::<rpb::RatingChanged>().unwrap();
            (e, m)
        })
        .collect()
}

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
        score: Score::try_from(m.score).unwrap(),
        k: KFactor::new(m.k).unwrap(),
        expectation: m.expectation,
        after: m.rating_after,
    }
}

async fn four_changes(db: Db) {
    let app = TestApp::spawn(db).await;
    let players = four();
    let first = game(players, 1, tpb::Deck::Dix);
    let finished = app.finish(&first).await;
    app.until_rated(&first.table_id).await;

    let mut after = [0.0; 4];
    for (seat, player) in players.iter().enumerate() {
        let list = changes(&app, *player).await;
        assert_eq!(list.len(), 1, "seat {seat}");
        let (event, m) = &list[0];
        assert_eq!(event.correlation_id, first.table_id);
        assert_eq!(event.causation_id, finished.event_id.to_string());
        assert_eq!(m.player_id, player.to_string());
        assert_eq!(m.table_id, first.table_id);
        assert_eq!(m.game_kind, "jeu-du-10/dix");
        assert_eq!(m.seat, seat as u32);
        assert_eq!((m.rating_before, m.k, m.games_played), (1500.0, 32.0, 1));
        let won = seat % 2 == 1;
        assert_eq!(m.score, if won { 1.0 } else { 0.0 });
        assert_eq!(m.expectation, 0.5);
        assert_eq!(m.rating_after, if won { 1516.0 } else { 1484.0 });
        let opponents: Vec<String> = m.opponents.iter().map(|o| o.player_id.clone()).collect();
        assert_eq!(
            opponents,
            vec![
                players[(seat + 1) % 4].to_string(),
                players[(seat + 3) % 4].to_string()
            ]
        );
        assert!(m.opponents.iter().all(|o| o.weight == 1.0));
        recorded(m).verify(Exactness::Bits).unwrap();
        after[seat] = m.rating_after;
    }

    // A second game, seats shuffled and a fresh player: the changes start from the ratings
    // the first game left, and are crates/rating's to the bit.
    let newcomer = Uuid::now_v7();
    let seated = [players[1], players[0], newcomer, players[3]];
    let second = game(seated, 0, tpb::Deck::Dix);
    app.finish(&second).await;
    app.until_rated(&second.table_id).await;
    let before = [after[1], after[0], 1500.0, after[3]].map(|r| Rating::new(r).unwrap());
    let expected = four_seats(before, TeamOutcome::FirstWon, DEFAULT_K).unwrap();
    for (seat, player) in seated.iter().enumerate() {
        let list = changes(&app, *player).await;
        let (event, m) = list.last().unwrap();
        assert_eq!(event.version as usize, list.len());
        assert_eq!(m.rating_before, before[seat].value());
        assert_eq!(
            m.rating_after.to_bits(),
            expected[seat].after().value().to_bits()
        );
        assert_eq!(m.games_played as usize, list.len());
    }
    // The other deck is another kind: everybody starts again at 1500 there.
    let ruff = game(players, 0, tpb::Deck::Ruff);
    app.finish(&ruff).await;
    app.until_rated(&ruff.table_id).await;
    let list = changes(&app, players[0]).await;
    let (_, m) = list.last().unwrap();
    assert_eq!(
        (m.game_kind.as_str(), m.rating_before, m.games_played),
        ("jeu-du-10/ruff", 1500.0, 1)
    );
    app.close().await;
}

#[tokio::test]
async fn a_finished_game_gives_the_right_four_changes_sqlite() {
    four_changes(Db::Sqlite).await;
}

#[tokio::test]
async fn a_finished_game_gives_the_right_four_changes_postgres() {
    four_changes(Db::Postgres).await;
}

async fn unrated_games(db: Db) {
    let app = TestApp::spawn(db).await;
    let players = four();
    let mut with_bot = game(players, 0, tpb::Deck::Dix);
    with_bot.players[2].player_id.clear();
    with_bot.players[2].bot = true;
    app.finish(&with_bot).await;
    let mut abandoned = game(players, 0, tpb::Deck::Dix);
    abandoned.players[0].abandoned = true;
    app.finish(&abandoned).await;
    app.until_rated(&abandoned.table_id).await;
    assert_eq!(app.rated_rows(&with_bot.table_id).await, 0);
    let list = changes(&app, players[0]).await;
    assert_eq!(list.len(), 1);
    let m = &list[0].1;
    assert!(m.abandoned);
    assert_eq!((m.score, m.rating_after), (0.0, 1484.0));
    let partner = changes(&app, players[2]).await;
    assert_eq!(partner[0].1.score, 1.0);
    assert_eq!(app.parked().await, 0);
    app.close().await;
}

#[tokio::test]
async fn bot_games_are_not_rated_and_an_abandoned_seat_loses_sqlite() {
    unrated_games(Db::Sqlite).await;
}

#[tokio::test]
async fn bot_games_are_not_rated_and_an_abandoned_seat_loses_postgres() {
    unrated_games(Db::Postgres).await;
}

async fn parked(db: Db) {
    let app = TestApp::spawn(db).await;
    let table = Uuid::now_v7();
    // A GameFinished whose payload is not one, and another whose winner is 7.
    app.append(
        &format!("table-{table}"),
        NewEvent::new(tpb::GameFinished::full_name(), vec![0xff, 0x01, 0x02])
            .with_correlation_id(table.to_string()),
    )
    .await;
    let mut bad = game(four(), 0, tpb::Deck::Dix);
    bad.winner = 7;
    app.finish(&bad).await;
    // An event type the tables service does not have.
    let other = Uuid::now_v7();
    app.append(
        &format!("table-{other}"),
        NewEvent::new("fairdeal.elsewhere.v1.Surprise", vec![1, 2, 3])
            .with_correlation_id(other.to_string()),
    )
    .await;
    // The tables' other events are not wanted: no letter.
    app.append(
        &format!("table-{other}"),
        NewEvent::from_message(&tpb::TurnClock {
            table_id: other.to_string(),
            seat: 1,
            deadline_ms: 1,
        }),
    )
    .await;
    // And the consumer carries on.
    let good = game(four(), 1, tpb::Deck::Dix);
    app.finish(&good).await;
    app.until_rated(&good.table_id).await;
    app.wait_until("three parked events", || async { app.parked().await == 3 })
        .await;
    assert_eq!(app.rated_rows(&bad.table_id).await, 0);
    let reasons = app
        .count(
            "SELECT COUNT(*) FROM bus_dead_letters WHERE consumer = $1 \
             AND (reason LIKE '%winner%' OR reason LIKE '%does not decode%' OR reason LIKE '%unknown event type%')",
            "rating",
        )
        .await;
    assert_eq!(reasons, 3);
    app.close().await;
}

#[tokio::test]
async fn malformed_and_unknown_events_are_parked_and_the_consumer_goes_on_sqlite() {
    parked(Db::Sqlite).await;
}

#[tokio::test]
async fn malformed_and_unknown_events_are_parked_and_the_consumer_goes_on_postgres() {
    parked(Db::Postgres).await;
}

async fn once(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let players = four();
    let first = game(players, 0, tpb::Deck::Dix);
    app.finish(&first).await;
    app.until_rated(&first.table_id).await;

    // The same game finished again (another event for the same table): not rated twice.
    app.finish(&first).await;
    // Restart the service: the durable consumer resumes after what it committed.
    app.stop().await;
    app.start().await;
    // Every event again, as redeliveries bring them: the consumer's position is set back
    // to the start (and on NATS its durable consumer is recreated, delivering the whole
    // stream again): the processed ids recorded with the effects decide.
    app.stop().await;
    redeliver_everything(&app, db).await;
    app.start().await;
    let second = game(players, 1, tpb::Deck::Dix);
    app.finish(&second).await;
    app.until_rated(&second.table_id).await;
    assert_eq!(app.rated_rows(&first.table_id).await, 4);
    for player in players {
        let list = changes(&app, player).await;
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].1.rating_before, list[0].1.rating_after);
    }
    assert_eq!(app.parked_reasons().await, Vec::<String>::new());
    app.close().await;
}

/// Sets the rating consumer back to the start of its source (the service is stopped).
async fn redeliver_everything(app: &TestApp, db: Db) {
    fairdeal_db::on_db!(app.storage.db(), pool => {
        sqlx::query("UPDATE bus_consumer_positions SET position = 0 WHERE consumer = $1")
            .bind("rating")
            .execute(pool)
            .await
            .unwrap();
    });
    if db == Db::Postgres {
        let js = async_nats::jetstream::new(
            async_nats::connect(fairdeal_testkit::nats_url())
                .await
                .unwrap(),
        );
        let prefix = app.common.subject_prefix.clone();
        let config = fairdeal_bus::JetStreamConfig::new(format!("{prefix}.tables")).unwrap();
        let stream = js.get_stream(config.stream_name()).await.unwrap();
        stream.delete_consumer("rating").await.unwrap();
    }
}

#[tokio::test]
async fn the_same_game_twice_and_a_redelivery_change_nothing_sqlite() {
    once(Db::Sqlite).await;
}

#[tokio::test]
async fn the_same_game_twice_and_a_redelivery_change_nothing_postgres() {
    once(Db::Postgres).await;
}
