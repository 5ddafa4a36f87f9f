//! The reads over gRPC, and the rebuild of the projections from the log.

use fairdeal_proto::fairdeal::rating::v1 as rpb;
use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating_service::projection::rebuild;
use sqlx::Row;
use tonic::{Code, Request};
use uuid::Uuid;

use crate::harness::{Db, TestApp, four, game, with};

/// Every projected value, with the ratings' bits.
async fn snapshot(app: &TestApp) -> (Vec<(String, String, u64, i64)>, Vec<(String, i64, Vec<u8>)>) {
    fairdeal_db::on_db!(app.storage.db(), pool => {
        let ratings = sqlx::query(
            "SELECT player_id, game_kind, rating, games_played FROM ratings ORDER BY player_id, game_kind",
        )
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.try_get::<String, _>(0).unwrap(),
                r.try_get::<String, _>(1).unwrap(),
                r.try_get::<f64, _>(2).unwrap().to_bits(),
                r.try_get::<i64, _>(3).unwrap(),
            )
        })
        .collect();
        let history = sqlx::query(
            "SELECT player_id, version, payload FROM rating_history ORDER BY player_id, version",
        )
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.try_get::<String, _>(0).unwrap(),
                r.try_get::<i64, _>(1).unwrap(),
                r.try_get::<Vec<u8>, _>(2).unwrap(),
            )
        })
        .collect();
        (ratings, history)
    })
}

async fn rebuild_after_1000_games(db: Db) {
    let app = TestApp::spawn(db).await;
    let pool: Vec<Uuid> = (0..40).map(|_| Uuid::now_v7()).collect();
    // A fixed linear congruential sequence picks tables and winners.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n
    };
    let games = 1000;
    for i in 0..games {
        let mut seated = Vec::with_capacity(4);
        while seated.len() < 4 {
            let p = pool[next(pool.len())];
            if !seated.contains(&p) {
                seated.push(p);
            }
        }
        let deck = if i % 5 == 4 {
            tpb::Deck::Ruff
        } else {
            tpb::Deck::Dix
        };
        let mut g = game(
            [seated[0], seated[1], seated[2], seated[3]],
            next(2) as u32,
            deck,
        );
        g.players[next(4)].abandoned = next(10) == 0;
        app.finish(&g).await;
    }
    app.wait_until("1000 games rated", || async {
        app.count("SELECT COUNT(*) FROM rating_history WHERE $1 <> ''", "x")
            .await
            == 4 * games
    })
    .await;
    let before = snapshot(&app).await;
    assert_eq!(before.1.len(), 4000);
    let report = rebuild(&app.storage).await.unwrap();
    assert_eq!(report.changes, 4000);
    assert_eq!(report.ratings as usize, before.0.len());
    let after = snapshot(&app).await;
    assert!(before == after, "the rebuilt projections differ");
    // Ratings really moved: not a board of 1500s.
    assert!(before.0.iter().any(|r| f64::from_bits(r.2).fract() != 0.0));
    app.close().await;
}

#[tokio::test]
async fn a_rebuild_after_1000_games_is_bit_identical_sqlite() {
    rebuild_after_1000_games(Db::Sqlite).await;
}

#[tokio::test]
async fn a_rebuild_after_1000_games_is_bit_identical_postgres() {
    rebuild_after_1000_games(Db::Postgres).await;
}

async fn reads(db: Db) {
    let app = TestApp::spawn(db).await;
    let players = four();
    let token = app.player_token(players[0]);
    let g1 = game(players, 1, tpb::Deck::Dix);
    let g2 = game(players, 1, tpb::Deck::Dix);
    let g3 = game(players, 0, tpb::Deck::Ruff);
    for g in [&g1, &g2, &g3] {
        app.finish(g).await;
        app.until_rated(&g.table_id).await;
    }
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
    assert_eq!(ratings.ratings.len(), 2);
    let dix = &ratings.ratings[0];
    assert_eq!(
        (dix.game_kind.as_str(), dix.games_played),
        ("jeu-du-10/dix", 2)
    );
    assert!(dix.rating_unrounded > 1530.0 && dix.rating_unrounded < 1532.0);
    assert_eq!(dix.rating, dix.rating_unrounded.round() as i64);
    assert_eq!(ratings.ratings[1].rating, 1484);

    // History, newest first, one per page.
    let service = app.service_token("ledger");
    let mut token_ = String::new();
    let mut seen = Vec::new();
    loop {
        let page = client
            .list_rating_history(with(
                &service,
                rpb::ListRatingHistoryRequest {
                    player_id: players[1].to_string(),
                    game_kind: String::new(),
                    page_size: 1,
                    page_token: token_.clone(),
                },
            ))
            .await
            .unwrap()
            .into_inner();
        seen.extend(
            page.entries
                .iter()
                .map(|e| (e.version, e.change.clone().unwrap().table_id)),
        );
        if page.next_page_token.is_empty() {
            break;
        }
        token_ = page.next_page_token;
    }
    assert_eq!(
        seen,
        vec![
            (3, g3.table_id.clone()),
            (2, g2.table_id.clone()),
            (1, g1.table_id.clone())
        ]
    );
    let ruff_only = client
        .list_rating_history(with(
            &token,
            rpb::ListRatingHistoryRequest {
                player_id: players[1].to_string(),
                game_kind: "jeu-du-10/ruff".into(),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ruff_only.entries.len(), 1);
    assert_eq!(ruff_only.entries[0].rating_after_rounded, 1484);

    // The leaderboard: winners first, ties by player id, a minimum number of games.
    let board = |min_games: u32, page_size: u32, page_token: String| {
        let mut client = client.clone();
        let token = token.clone();
        async move {
            client
                .get_leaderboard(with(
                    &token,
                    rpb::GetLeaderboardRequest {
                        game_kind: "jeu-du-10/dix".into(),
                        min_games,
                        page_size,
                        page_token,
                    },
                ))
                .await
                .unwrap()
                .into_inner()
        }
    };
    let first = board(2, 2, String::new()).await;
    let mut winners = vec![players[1].to_string(), players[3].to_string()];
    winners.sort();
    assert_eq!(
        first
            .entries
            .iter()
            .map(|e| e.player_id.clone())
            .collect::<Vec<_>>(),
        winners
    );
    assert_eq!(first.entries[0].rank, 1);
    let second = board(2, 2, first.next_page_token.clone()).await;
    assert_eq!(second.entries.len(), 2);
    assert_eq!(second.entries[0].rank, 3);
    assert!(second.entries[0].rating < first.entries[1].rating);
    assert!(board(3, 10, String::new()).await.entries.is_empty());

    // Bad input: the field is named, nothing is INTERNAL.
    let bad = [
        client
            .get_ratings(with(
                &token,
                rpb::GetRatingsRequest {
                    player_id: "me".into(),
                },
            ))
            .await
            .unwrap_err(),
        client
            .get_leaderboard(with(
                &token,
                rpb::GetLeaderboardRequest {
                    game_kind: "chess".into(),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
        client
            .get_leaderboard(with(
                &token,
                rpb::GetLeaderboardRequest {
                    game_kind: "jeu-du-10/dix".into(),
                    page_size: 101,
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
        client
            .list_rating_history(with(
                &token,
                rpb::ListRatingHistoryRequest {
                    player_id: players[0].to_string(),
                    page_token: "x".repeat(5000),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
    ];
    let fields = ["player_id", "game_kind", "page_size", "page_token"];
    for (status, field) in bad.iter().zip(fields) {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(field), "{status:?}");
        assert!(status.message().len() < 300);
    }
    let anonymous = client
        .get_ratings(Request::new(rpb::GetRatingsRequest {
            player_id: players[0].to_string(),
        }))
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated);
    app.close().await;
}

#[tokio::test]
async fn ratings_history_and_leaderboards_are_read_over_grpc_sqlite() {
    reads(Db::Sqlite).await;
}

#[tokio::test]
async fn ratings_history_and_leaderboards_are_read_over_grpc_postgres() {
    reads(Db::Postgres).await;
}
