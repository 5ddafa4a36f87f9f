//! Caller mistakes are never logged at ERROR (ERROR is for server faults), and the audit line
//! of an operator reveal carries only bounded text: a burst of refused requests (malformed,
//! over-long, wrong state, unknown, duplicate, forbidden) leaves no ERROR line and no echo of
//! the over-long values in the logs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/mod.rs"]
mod common;

use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tonic::Code;
use uuid::Uuid;

use common::{Db, LogBuffer, TestApp, with};

#[tokio::test]
async fn caller_mistakes_are_not_logged_as_errors() {
    let logs = LogBuffer::default();
    tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .init();

    let mut app = TestApp::spawn(Db::Sqlite).await;
    let tables = app.service_token("tables");
    let player = app.player_token(Uuid::now_v7());
    let long = "q".repeat(100_000);
    let t = Uuid::now_v7().to_string();
    let create = cpb::CreateTableCommitmentRequest {
        table_id: t.clone(),
        delayed_source: String::new(),
        timelock_seconds: 0,
    };
    app.commitment
        .create_table_commitment(with(&tables, create.clone()))
        .await
        .unwrap();
    let mut codes = Vec::new();
    let c = &mut app.commitment;
    codes.push(
        c.create_table_commitment(with(&tables, create))
            .await
            .unwrap_err()
            .code(),
    );
    let reveal = |operator: &str, justification: &str| cpb::RevealTableSeedRequest {
        table_id: t.clone(),
        operator: operator.into(),
        justification: justification.into(),
    };
    codes.push(
        c.reveal_table_seed(with(&tables, reveal("ops", &long)))
            .await
            .unwrap_err()
            .code(),
    );
    codes.push(
        c.reveal_table_seed(with(&tables, reveal(&long, "why")))
            .await
            .unwrap_err()
            .code(),
    );
    // Game end before any deal: a wrong state.
    codes.push(
        c.reveal_table_seed(with(&tables, reveal("", "")))
            .await
            .unwrap_err()
            .code(),
    );
    codes.push(
        c.get_table_commitment(cpb::GetTableCommitmentRequest {
            table_id: Uuid::now_v7().to_string(),
        })
        .await
        .unwrap_err()
        .code(),
    );
    codes.push(
        c.get_table_dealing_seeds(with(
            &tables,
            cpb::GetTableDealingSeedsRequest {
                table_id: t.clone(),
            },
        ))
        .await
        .unwrap_err()
        .code(),
    );
    codes.push(
        c.set_client_seed(with(
            &player,
            cpb::SetClientSeedRequest {
                user_id: String::new(),
                client_seed: long.clone(),
            },
        ))
        .await
        .unwrap_err()
        .code(),
    );
    let d = &mut app.dealing;
    codes.push(
        d.deal_hand(with(
            &tables,
            dpb::DealHandRequest {
                table_id: t.clone(),
                deck: "dix".into(),
                hand: 5,
            },
        ))
        .await
        .unwrap_err()
        .code(),
    );
    codes.push(
        d.deal_hand(with(
            &tables,
            dpb::DealHandRequest {
                table_id: Uuid::now_v7().to_string(),
                deck: "dix".into(),
                hand: 0,
            },
        ))
        .await
        .unwrap_err()
        .code(),
    );
    codes.push(
        d.verify_deal(dpb::VerifyDealRequest {
            deck: "dix".into(),
            server_seed: long.clone(),
            client_seed: "c".into(),
            salt: "0".into(),
            ..Default::default()
        })
        .await
        .unwrap_err()
        .code(),
    );
    codes.push(
        d.place_bet(with(
            &player,
            dpb::PlaceBetRequest {
                options: Some(dpb::GameOptions {
                    game: long.clone(),
                    ..Default::default()
                }),
                bet_id: String::new(),
            },
        ))
        .await
        .unwrap_err()
        .code(),
    );
    assert_eq!(
        codes,
        vec![
            Code::AlreadyExists,
            Code::InvalidArgument,
            Code::InvalidArgument,
            Code::FailedPrecondition,
            Code::NotFound,
            Code::PermissionDenied,
            Code::InvalidArgument,
            Code::FailedPrecondition,
            Code::NotFound,
            Code::InvalidArgument,
            Code::InvalidArgument,
        ]
    );
    // A valid audited reveal is logged at WARN with its bounded fields.
    app.commitment
        .reveal_table_seed(with(&tables, reveal("ops", "abandoned table")))
        .await
        .unwrap();
    app.stop().await;

    let text = logs.text();
    let errors: Vec<&str> = text.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert!(
        errors.is_empty(),
        "caller mistakes logged as errors: {errors:#?}"
    );
    assert!(
        !text.contains(&"q".repeat(64)),
        "an over-long value reached the log"
    );
    assert!(
        text.lines().any(|l| l.contains(" WARN ")
            && l.contains("operator reveal")
            && l.contains("abandoned table")),
        "no audit line for the operator reveal"
    );
}
