//! Every text field of the commitment and dealing requests is bounded: an over-long value is
//! INVALID_ARGUMENT naming the field and the bound, without echoing the value, and nothing is
//! appended. Public verification refuses server seeds that are not 64 lowercase hex.

use fairdeal_eventstore::StreamId;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tonic::{Code, Status};
use uuid::Uuid;

use crate::common::{Db, TestApp, with};

/// A megabyte of text.
fn huge() -> String {
    "x".repeat(1_000_000)
}

/// INVALID_ARGUMENT naming `field` and `bound`, with at most a short echo of the value.
fn assert_refused<T: std::fmt::Debug>(result: Result<T, Status>, field: &str, bound: &str) {
    let status = result.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
    let message = status.message();
    assert!(message.contains(field), "{field}: {message}");
    assert!(message.contains(bound), "{field} {bound}: {message}");
    assert!(message.len() < 300, "{field}: {} bytes", message.len());
    assert!(
        !message.contains(&"x".repeat(40)),
        "{field} echoed: {message}"
    );
}

async fn bounded_fields(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let tables = app.service_token("tables");
    let dealing = app.service_token("dealing");
    let t = Uuid::now_v7().to_string();
    let c = &mut app.commitment.clone();
    c.create_table_commitment(with(
        &tables,
        cpb::CreateTableCommitmentRequest {
            table_id: t.clone(),
            delayed_source: "lottery".into(),
            timelock_seconds: 0,
        },
    ))
    .await
    .unwrap();
    let table_stream = StreamId::of("commitmenttable", &t).unwrap();
    let events = app.commitment_storage.events();
    let before = events
        .read_stream(&table_stream, 1, 100)
        .await
        .unwrap()
        .len();

    // The audited reveal that blocked the relay: 1 MB of operator or justification.
    assert_refused(
        app.reveal(&tables, &t, "ops", &huge()).await,
        "justification",
        "500",
    );
    assert_refused(
        app.reveal(&tables, &t, &huge(), "abandoned").await,
        "operator",
        "64",
    );
    assert_refused(
        c.contribute_seed(with(
            &tables,
            cpb::ContributeSeedRequest {
                table_id: t.clone(),
                seat: 0,
                player_id: Uuid::now_v7().to_string(),
                contribution: huge(),
            },
        ))
        .await,
        "contribution",
        "at most 128",
    );
    assert_refused(
        c.contribute_seed(with(
            &tables,
            cpb::ContributeSeedRequest {
                table_id: t.clone(),
                seat: 0,
                player_id: huge(),
                contribution: "mine".into(),
            },
        ))
        .await,
        "player_id",
        "45",
    );
    assert_refused(
        c.bind_table_delayed_value(with(
            &tables,
            cpb::BindTableDelayedValueRequest {
                table_id: t.clone(),
                value: huge(),
            },
        ))
        .await,
        "delayed_value",
        "1024",
    );
    // Nothing of it reached the table's stream.
    assert_eq!(
        events
            .read_stream(&table_stream, 1, 100)
            .await
            .unwrap()
            .len(),
        before
    );

    assert_refused(
        c.create_table_commitment(with(
            &tables,
            cpb::CreateTableCommitmentRequest {
                table_id: Uuid::now_v7().to_string(),
                delayed_source: huge(),
                timelock_seconds: 0,
            },
        ))
        .await,
        "delayed_source",
        "256",
    );
    assert_refused(
        c.get_table_commitment(cpb::GetTableCommitmentRequest { table_id: huge() })
            .await,
        "table_id",
        "45",
    );
    let user = Uuid::now_v7();
    let me = app.player_token(user);
    assert_refused(
        c.set_client_seed(with(
            &me,
            cpb::SetClientSeedRequest {
                user_id: String::new(),
                client_seed: huge(),
            },
        ))
        .await,
        "client_seed",
        "128",
    );
    assert_refused(
        c.reserve_bet(with(
            &dealing,
            cpb::ReserveBetRequest {
                user_id: user.to_string(),
                bet_id: String::new(),
                bet: huge(),
            },
        ))
        .await,
        "bet",
        "128",
    );
    assert_refused(
        c.reserve_bet(with(
            &dealing,
            cpb::ReserveBetRequest {
                user_id: user.to_string(),
                bet_id: huge(),
                bet: "dice".into(),
            },
        ))
        .await,
        "bet_id",
        "45",
    );
    assert_refused(
        c.commit_tournament(with(
            &tables,
            cpb::CommitTournamentRequest {
                tournament_id: Uuid::now_v7().to_string(),
                deck: "bridge".into(),
                delayed_source: huge(),
            },
        ))
        .await,
        "delayed_source",
        "256",
    );

    // The dealing service's fields.
    let d = &mut app.dealing.clone();
    assert_refused(
        d.deal_hand(with(
            &tables,
            dpb::DealHandRequest {
                table_id: t.clone(),
                deck: huge(),
                hand: 0,
            },
        ))
        .await,
        "deck",
        "16",
    );
    assert_refused(
        d.place_bet(with(
            &me,
            dpb::PlaceBetRequest {
                options: Some(dpb::GameOptions {
                    game: huge(),
                    ..Default::default()
                }),
                bet_id: String::new(),
            },
        ))
        .await,
        "options.game",
        "16",
    );
    assert_refused(
        d.place_bet(with(
            &me,
            dpb::PlaceBetRequest {
                options: Some(dpb::GameOptions {
                    game: "dice".into(),
                    ..Default::default()
                }),
                bet_id: huge(),
            },
        ))
        .await,
        "bet_id",
        "45",
    );
    // Public verification: the server seed is SPEC's 64 lowercase hex, nothing else.
    let verify = |server_seed: String| dpb::VerifyDealRequest {
        deck: "dix".into(),
        server_seed,
        client_seed: "c".into(),
        salt: "0".into(),
        ..Default::default()
    };
    for bad in [
        String::new(),
        "not hex at all".into(),
        "A".repeat(64),
        huge(),
    ] {
        assert_refused(d.verify_deal(verify(bad)).await, "server_seed", "64");
    }
    let seed = "ab".repeat(32);
    assert_refused(
        d.verify_deal(dpb::VerifyDealRequest {
            client_seed: huge(),
            ..verify(seed.clone())
        })
        .await,
        "client_seed",
        "1089",
    );
    assert_refused(
        d.verify_deal(dpb::VerifyDealRequest {
            salt: huge(),
            ..verify(seed.clone())
        })
        .await,
        "salt",
        "64",
    );
    assert_refused(
        d.verify_outcome(dpb::VerifyOutcomeRequest {
            options: Some(dpb::GameOptions {
                game: "dice".into(),
                ..Default::default()
            }),
            server_seed: String::new(),
            client_seed: "c".into(),
            salt: "0".into(),
            ..Default::default()
        })
        .await,
        "server_seed",
        "64",
    );
    assert_refused(
        d.verify_duplicate(dpb::VerifyDuplicateRequest {
            server_seed: "zz".into(),
            client_seed: "c".into(),
            ..Default::default()
        })
        .await,
        "server_seed",
        "64",
    );
    assert_refused(
        d.number_of_deal(dpb::NumberOfDealRequest {
            deck: "dix".into(),
            order: vec!["AS".into(); 100_000],
        })
        .await,
        "order",
        "78",
    );
    assert!(d.verify_deal(verify(seed)).await.is_ok());

    // At the bounds, an audited reveal goes through and is recorded.
    let revealed = app
        .reveal(&tables, &t, &"o".repeat(64), &"j".repeat(500))
        .await
        .unwrap();
    assert_eq!(revealed.reveal_reason, "operator");
    app.stop().await;
}

#[tokio::test]
async fn bounded_fields_sqlite() {
    bounded_fields(Db::Sqlite).await;
}

#[tokio::test]
async fn bounded_fields_postgres() {
    bounded_fields(Db::Postgres).await;
}
