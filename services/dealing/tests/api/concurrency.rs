//! Ordinary concurrency never answers ABORTED: commands on one stream queue in the process
//! (`fairdeal_platform::Streams`), so 50 concurrent bets of one player all succeed with
//! distinct nonces, and 50 concurrent deals at one table deal each hand once (concurrent
//! contributions at one table: services/commitment/tests/api/concurrency.rs).

use std::collections::BTreeSet;

use fairdeal_commitment::seeds::seed_store;
use fairdeal_eventstore::StreamId;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tokio::task::JoinSet;
use tonic::Code;
use uuid::Uuid;

use crate::common::{Db, TestApp, with};

const CONCURRENT: u64 = 50;

async fn concurrent_bets(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let user = Uuid::now_v7();
    let me = app.player_token(user);
    // The player's first bets: the seed pair is opened by the same burst.
    let mut bets = JoinSet::new();
    for _ in 0..CONCURRENT {
        let mut dealing = app.dealing.clone();
        let me = me.clone();
        bets.spawn(async move {
            dealing
                .place_bet(with(
                    &me,
                    dpb::PlaceBetRequest {
                        options: Some(dpb::GameOptions {
                            game: "dice".into(),
                            ..Default::default()
                        }),
                        bet_id: Uuid::now_v7().to_string(),
                    },
                ))
                .await
        });
    }
    let mut nonces = BTreeSet::new();
    while let Some(result) = bets.join_next().await {
        let bet = result.unwrap().unwrap().into_inner();
        assert_eq!(bet.pair_index, 0);
        assert!(nonces.insert(bet.nonce), "nonce {} twice", bet.nonce);
    }
    assert_eq!(nonces, (0..CONCURRENT).collect::<BTreeSet<_>>());
    // One OutcomeIssued per bet, and the pair's counter after all of them.
    let recorded = app
        .dealing_storage
        .events()
        .read_stream(&StreamId::of("outcomes", user).unwrap(), 1, 1000)
        .await
        .unwrap();
    assert_eq!(recorded.len() as u64, CONCURRENT);
    let pair = app.seed_pair(&me).await;
    assert_eq!(pair.next_nonce, CONCURRENT);
    // The burst opened one pair and sealed one seed for it (no orphan seeds).
    let sealed = seed_store(app.commitment_storage.db())
        .key_ids()
        .await
        .unwrap();
    assert_eq!(sealed, vec![("test".to_owned(), 1)]);
    app.stop().await;
}

#[tokio::test]
async fn concurrent_bets_sqlite() {
    concurrent_bets(Db::Sqlite).await;
}

#[tokio::test]
async fn concurrent_bets_postgres() {
    concurrent_bets(Db::Postgres).await;
}

async fn concurrent_deals(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let tables = app.service_token("tables");
    let t = app.new_table(&tables).await;
    // 50 callers ask for hands 0 and 1 at once: hand 0 is dealt once and handed to all of
    // its askers; hand 1 either follows it or is refused as ahead of its turn.
    let mut deals = JoinSet::new();
    for i in 0..CONCURRENT {
        let mut dealing = app.dealing.clone();
        let tables = tables.clone();
        let t = t.clone();
        deals.spawn(async move {
            let hand = i % 2;
            let r = dealing
                .deal_hand(with(
                    &tables,
                    dpb::DealHandRequest {
                        table_id: t,
                        deck: "bridge".into(),
                        hand,
                    },
                ))
                .await;
            (hand, r)
        });
    }
    let mut numbers = [BTreeSet::new(), BTreeSet::new()];
    while let Some(result) = deals.join_next().await {
        let (hand, r) = result.unwrap();
        match r {
            Ok(r) => {
                numbers[hand as usize].insert(r.into_inner().deal.unwrap().distribution_number);
            }
            Err(status) => {
                assert_eq!(hand, 1, "{status:?}");
                assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
            }
        }
    }
    assert_eq!(numbers[0].len(), 1, "hand 0 dealt differently");
    assert!(numbers[1].len() <= 1, "hand 1 dealt differently");
    let recorded = app
        .dealing_storage
        .events()
        .read_stream(&StreamId::of("deals", &t).unwrap(), 1, 100)
        .await
        .unwrap();
    assert_eq!(recorded.len(), 1 + numbers[1].len());
    app.stop().await;
}

#[tokio::test]
async fn concurrent_deals_sqlite() {
    concurrent_deals(Db::Sqlite).await;
}

#[tokio::test]
async fn concurrent_deals_postgres() {
    concurrent_deals(Db::Postgres).await;
}
