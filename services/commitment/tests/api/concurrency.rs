//! Ordinary concurrency never answers ABORTED: commands on one stream queue in the process
//! (`fairdeal_platform::Streams`), so 50 concurrent contributions at one table are each
//! accepted or refused by a domain rule.

use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use tokio::task::JoinSet;
use tonic::Code;
use uuid::Uuid;

use crate::harness::{Db, TestApp, with};

const CONCURRENT: u64 = 50;

async fn concurrent_contributions(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let tables = app.service_token("tables");
    let t = app.new_table(&tables).await;
    // 50 players on 16 seats (0..=15): 16 get a seat's contribution in, the rest find it
    // taken.
    let mut contributions = JoinSet::new();
    for i in 0..CONCURRENT {
        let mut commitment = app.commitment.clone();
        let tables = tables.clone();
        let t = t.clone();
        contributions.spawn(async move {
            commitment
                .contribute_seed(with(
                    &tables,
                    cpb::ContributeSeedRequest {
                        table_id: t,
                        seat: (i % 16) as u32,
                        player_id: Uuid::now_v7().to_string(),
                        contribution: format!("player {i}"),
                    },
                ))
                .await
        });
    }
    let mut accepted = 0;
    while let Some(result) = contributions.join_next().await {
        match result.unwrap() {
            Ok(_) => accepted += 1,
            Err(status) => {
                assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
                assert!(
                    status.message().contains("already contributed"),
                    "{status:?}"
                );
            }
        }
    }
    assert_eq!(accepted, 16);
    let table = app
        .commitment
        .get_table_commitment(cpb::GetTableCommitmentRequest { table_id: t })
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    assert_eq!(table.contributions.len(), 16);
    app.stop().await;
}

#[tokio::test]
async fn concurrent_contributions_sqlite() {
    concurrent_contributions(Db::Sqlite).await;
}

#[tokio::test]
async fn concurrent_contributions_postgres() {
    concurrent_contributions(Db::Postgres).await;
}
