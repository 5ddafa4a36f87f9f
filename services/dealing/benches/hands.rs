//! Hands dealt per second through the gRPC API end to end (DealHand: token check, seeds from
//! the commitment service over gRPC, the deal, the event appended), beside the fairness
//! crate's own deal rate measured in the same run.
//!
//! `cargo bench -p fairdeal-dealing --bench hands` (embedded SQLite; set
//! `FAIRSVC_BENCH_DB=postgres` for a fresh PostgreSQL database).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    unreachable_pub
)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use uuid::Uuid;

use common::{Db, TestApp, with};

const DECK: &str = "tarot4";
const HANDS_PER_TABLE: u64 = 100;

fn crate_rate(deals: u64) -> f64 {
    let start = Instant::now();
    let mut sink = 0usize;
    for salt in 0..deals {
        let d = Deal::from_seeds(
            Deck::Tarot4,
            "server seed of the bench",
            "client",
            &salt.to_string(),
        );
        // Include the distribution number: the service computes it for every hand.
        sink += d.distribution_number().bits() as usize;
    }
    assert!(sink > 0);
    deals as f64 / start.elapsed().as_secs_f64()
}

async fn grpc_rate(app: &TestApp, tables: usize) -> f64 {
    let token = app.service_token("tables");
    let ids: Vec<String> = (0..tables).map(|_| Uuid::now_v7().to_string()).collect();
    for id in &ids {
        app.commitment
            .clone()
            .create_table_commitment(with(
                &token,
                cpb::CreateTableCommitmentRequest {
                    table_id: id.clone(),
                    delayed_source: String::new(),
                    timelock_seconds: 0,
                },
            ))
            .await
            .unwrap();
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for id in ids {
        let mut dealing = app.dealing.clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            for hand in 0..HANDS_PER_TABLE {
                dealing
                    .deal_hand(with(
                        &token,
                        dpb::DealHandRequest {
                            table_id: id.clone(),
                            deck: DECK.into(),
                            hand,
                        },
                    ))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (tables as u64 * HANDS_PER_TABLE) as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let db = match std::env::var("FAIRSVC_BENCH_DB").as_deref() {
        Ok("postgres") => Db::Postgres,
        _ => Db::Sqlite,
    };
    let app = TestApp::spawn(db).await;
    // Warm up connections and code paths.
    grpc_rate(&app, 1).await;
    println!("deck {DECK}, {HANDS_PER_TABLE} hands per table, backend {db:?}");
    for round in 0..3 {
        let baseline = crate_rate(20_000);
        let one = grpc_rate(&app, 1).await;
        let eight = grpc_rate(&app, 8).await;
        println!(
            "round {round}: fairness crate {baseline:>9.0} deals/s | gRPC DealHand 1 table {one:>7.0} hands/s ({:.4} of crate) | 8 tables in parallel {eight:>7.0} hands/s ({:.4} of crate)",
            one / baseline,
            eight / baseline
        );
    }
    app.stop().await;
}
