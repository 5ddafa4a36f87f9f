//! A seed key ring missing a key still in use: a replica that cannot open a seed answers
//! FAILED_PRECONDITION naming the key id (dealing passes it on, never UNAVAILABLE), and the
//! service refuses to start while a stored seed's key is missing from its ring.

use fairdeal_commitment::vault::KeyRing;
use fairdeal_kit::StartError;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tonic::Code;
use uuid::Uuid;

use crate::common::{Db, TestApp, with};

const OLD_KEY: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const NEW_KEY: &str = "2222222222222222222222222222222222222222222222222222222222222222";

fn assert_names_k2_only(message: &str) {
    assert!(message.contains("\"k2\""), "{message}");
    assert!(
        !message.contains(OLD_KEY) && !message.contains(NEW_KEY),
        "key material in {message}"
    );
}

async fn missing_seed_key(db: Db) {
    let old_ring = || KeyRing::parse(&format!("k1:{OLD_KEY}")).unwrap();
    let new_ring = || KeyRing::parse(&format!("k2:{NEW_KEY},k1:{OLD_KEY}")).unwrap();
    let mut app = TestApp::spawn_with_keys(db, old_ring()).await;
    let tables = app.service_token("tables");
    let dealing = app.service_token("dealing");

    // Mid-rotation: a replica already on the new ring seals a table's seed under k2.
    let (mut newer, newer_stop) = app.commitment_replica(new_ring()).await.unwrap();
    let t = Uuid::now_v7().to_string();
    newer
        .create_table_commitment(with(
            &tables,
            cpb::CreateTableCommitmentRequest {
                table_id: t.clone(),
                delayed_source: String::new(),
                timelock_seconds: 0,
            },
        ))
        .await
        .unwrap();

    // The replica on the old ring cannot open that seed: a lasting condition, named.
    let seeds = app
        .commitment
        .get_table_dealing_seeds(with(
            &dealing,
            cpb::GetTableDealingSeedsRequest {
                table_id: t.clone(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(seeds.code(), Code::FailedPrecondition, "{seeds:?}");
    assert_names_k2_only(seeds.message());
    let reveal = app
        .commitment
        .reveal_table_seed(with(
            &tables,
            cpb::RevealTableSeedRequest {
                table_id: t.clone(),
                operator: "ops".into(),
                justification: "abandoned table".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(reveal.code(), Code::FailedPrecondition, "{reveal:?}");
    assert_names_k2_only(reveal.message());
    // The dealing service (calling the old replica) passes it on: not UNAVAILABLE.
    let deal = app
        .dealing
        .deal_hand(with(
            &tables,
            dpb::DealHandRequest {
                table_id: t.clone(),
                deck: "dix".into(),
                hand: 0,
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(deal.code(), Code::FailedPrecondition, "{deal:?}");
    assert_names_k2_only(deal.message());
    // The replica holding k2 serves the same table.
    newer
        .get_table_dealing_seeds(with(
            &dealing,
            cpb::GetTableDealingSeedsRequest {
                table_id: t.clone(),
            },
        ))
        .await
        .unwrap();
    newer_stop.trigger();

    // A replica started on the old ring refuses to start, naming k2 and how many seeds
    // need it; never the key material.
    let refused = match app.commitment_replica(old_ring()).await {
        Ok(_) => panic!("started with a key missing from its ring"),
        Err(e) => e,
    };
    match &refused {
        StartError::Dependency {
            what: "seed_keys",
            reason,
        } => {
            assert!(reason.contains("\"k2\" (1 seed)"), "{reason}");
        }
        other => panic!("unexpected start error {other:?}"),
    }
    assert_names_k2_only(&refused.to_string());
    // With k2 back in the ring it starts.
    let (_, stop) = app.commitment_replica(new_ring()).await.unwrap();
    stop.trigger();
    app.stop().await;
}

#[tokio::test]
async fn missing_seed_key_sqlite() {
    missing_seed_key(Db::Sqlite).await;
}

#[tokio::test]
async fn missing_seed_key_postgres() {
    missing_seed_key(Db::Postgres).await;
}
