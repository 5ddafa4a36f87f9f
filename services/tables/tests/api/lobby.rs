//! The lobby: open tables, filtered by variant and open seats; a started table leaves it.

use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as pb;

use crate::harness::{Db, Player, TestApp, with};

async fn list(p: &Player, request: pb::ListTablesRequest) -> Vec<pb::LobbyTable> {
    p.client
        .clone()
        .list_tables(with(&p.token, request))
        .await
        .unwrap()
        .into_inner()
        .tables
}

/// Lists until `ok` holds: the lobby is a projection, updated just after the events commit
/// (bounded: 10 s).
async fn until(
    p: &Player,
    request: pb::ListTablesRequest,
    ok: impl Fn(&[pb::LobbyTable]) -> bool,
) -> Vec<pb::LobbyTable> {
    for _ in 0..500 {
        let tables = list(p, request).await;
        if ok(&tables) {
            return tables;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the lobby never showed what was expected");
}

fn ids(tables: &[pb::LobbyTable]) -> Vec<&str> {
    tables.iter().map(|t| t.table_id.as_str()).collect()
}

#[tokio::test]
async fn the_lobby_lists_open_tables_by_variant_and_open_seats() {
    let app = TestApp::spawn(Db::Sqlite).await;
    let (a, b) = (app.player(), app.player());
    let plain = a.create(pb::CreateTableRequest::default()).await.table_id;
    let ruff = a
        .create(pb::CreateTableRequest {
            options: Some(pb::TableOptions {
                deck: pb::Deck::Ruff as i32,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .table_id;
    let aces = a
        .create(pb::CreateTableRequest {
            options: Some(pb::TableOptions {
                penalised_aces: true,
                ..Default::default()
            }),
            bot_seats: vec![1, 3],
            move_seconds: 60,
            timelock_seconds: 0,
        })
        .await
        .table_id;
    let all = until(&a, pb::ListTablesRequest::default(), |t| t.len() == 3).await;
    assert_eq!(ids(&all), vec![&plain, &ruff, &aces], "oldest first");
    assert_eq!(all[2].open_seats, vec![0, 2]);
    assert_eq!(all[2].bot_seats, vec![1, 3]);
    assert_eq!(all[2].move_seconds, 60);

    let by_deck = list(
        &a,
        pb::ListTablesRequest {
            variant: Some(pb::VariantFilter {
                deck: Some(pb::Deck::Ruff as i32),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&by_deck), vec![&ruff]);
    let by_aces = list(
        &a,
        pb::ListTablesRequest {
            variant: Some(pb::VariantFilter {
                penalised_aces: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(ids(&by_aces), vec![&aces]);

    // A seat taken: three open seats left at the plain table.
    a.sit(&plain, 0).await.unwrap();
    let four = pb::ListTablesRequest {
        min_open_seats: 4,
        ..Default::default()
    };
    let open4 = until(&a, four, |t| t.len() == 1).await;
    assert_eq!(ids(&open4), vec![&ruff]);

    // The penalised-aces table fills (bots count) and leaves the lobby.
    a.sit(&aces, 0).await.unwrap();
    b.sit(&aces, 2).await.unwrap();
    let left = until(&a, pb::ListTablesRequest::default(), |t| t.len() == 2).await;
    assert_eq!(ids(&left), vec![&plain, &ruff]);
    assert_eq!(left[0].open_seats, vec![1, 2, 3]);

    let status = a
        .client
        .clone()
        .list_tables(with(
            &a.token,
            pb::ListTablesRequest {
                limit: 101,
                ..Default::default()
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().contains("limit"));
    app.stop().await;
}
