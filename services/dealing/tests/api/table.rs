//! A full table flow: create, contribute x4, bind the delayed value, deal hands 0..n,
//! reveal; the CLI reproduces every deal from the revealed seeds.

use fairdeal_fairness::commitment::Commitment;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tonic::Code;
use uuid::Uuid;

use crate::common::{Db, TestApp, cli_json, with};

const HANDS: u64 = 8;

async fn table_flow(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let tables = app.service_token("tables");
    let table_id = Uuid::now_v7();
    let t = table_id.to_string();

    let created = app
        .create_table(&tables, &t, "drand quicknet round 9000001")
        .await
        .unwrap();
    assert_eq!(created.commitment.len(), 64);
    assert_eq!(created.short_code, created.commitment[..5]);
    assert!(created.server_seed.is_empty());
    // A second create is refused.
    let again = app.create_table(&tables, &t, "").await.unwrap_err();
    assert_eq!(again.code(), Code::AlreadyExists);

    let players: Vec<Uuid> = (0..4).map(|_| Uuid::now_v7()).collect();
    for (seat, player) in players.iter().enumerate() {
        app.commitment
            .contribute_seed(with(
                &tables,
                cpb::ContributeSeedRequest {
                    table_id: t.clone(),
                    seat: seat as u32,
                    player_id: player.to_string(),
                    contribution: format!("lucky {seat}"),
                },
            ))
            .await
            .unwrap();
    }
    let deal = |hand: u64| dpb::DealHandRequest {
        table_id: t.clone(),
        deck: "tarot4".into(),
        hand,
    };
    // Before the named delayed value is known, nothing can be dealt.
    let early = app
        .dealing
        .deal_hand(with(&tables, deal(0)))
        .await
        .unwrap_err();
    assert_eq!(early.code(), Code::FailedPrecondition, "{early:?}");
    app.bind_delayed_value(&tables, &t, "a1b2c3d4e5")
        .await
        .unwrap();

    let mut dealt = Vec::new();
    for hand in 0..HANDS {
        let r = app
            .dealing
            .deal_hand(with(&tables, deal(hand)))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.salt, hand.to_string());
        assert_eq!(r.commitment, created.commitment);
        dealt.push(r);
    }
    // Re-asking for a dealt hand gives the same deal; skipping ahead is refused.
    let replay = app
        .dealing
        .deal_hand(with(&tables, deal(2)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(replay.deal, dealt[2].deal);
    let skip = app
        .dealing
        .deal_hand(with(&tables, deal(HANDS + 1)))
        .await
        .unwrap_err();
    assert_eq!(skip.code(), Code::FailedPrecondition);
    // The client seed is fixed: no more contributions or delayed values.
    let late = app
        .commitment
        .contribute_seed(with(
            &tables,
            cpb::ContributeSeedRequest {
                table_id: t.clone(),
                seat: 5,
                player_id: Uuid::now_v7().to_string(),
                contribution: "late".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(late.code(), Code::FailedPrecondition);

    let before = app.table(&t).await;
    assert!(before.server_seed.is_empty());
    assert_eq!(before.contributions.len(), 4);
    let client_seed = before.client_seed.clone();
    assert!(client_seed.ends_with(":a1b2c3d4e5"));
    assert_eq!(client_seed, dealt[0].client_seed);

    let revealed = app.reveal(&tables, &t, "", "").await.unwrap();
    assert_eq!(revealed.reveal_reason, "finished");
    let seed = revealed.server_seed.clone();
    assert!(Commitment::of(&seed).to_hex() == created.commitment);
    // After the reveal: no more deals, no second reveal.
    let after = app
        .dealing
        .deal_hand(with(&tables, deal(HANDS)))
        .await
        .unwrap_err();
    assert_eq!(after.code(), Code::FailedPrecondition);

    // The CLI reproduces every deal from the revealed seeds.
    let lines = cli_json(&[
        "deal",
        "--game",
        "tarot4",
        "--server-seed",
        &seed,
        "--client-seed",
        &client_seed,
        "--salt",
        "0",
        "--count",
        &HANDS.to_string(),
    ]);
    assert_eq!(lines.len(), HANDS as usize);
    for (line, ours) in lines.iter().zip(&dealt) {
        let deal = ours.deal.as_ref().unwrap();
        assert_eq!(line["distribution_number"], deal.distribution_number);
        assert_eq!(line["commitment"], created.commitment);
        let hands: Vec<Vec<String>> = serde_json::from_value(line["hands"].clone()).unwrap();
        assert_eq!(
            hands,
            deal.hands
                .iter()
                .map(|h| h.cards.clone())
                .collect::<Vec<_>>()
        );
        let chien: Vec<String> = serde_json::from_value(line["chien"].clone()).unwrap();
        assert_eq!(chien, deal.chien);
    }
    // And the public verification RPC agrees, without a token.
    let v = app
        .dealing
        .verify_deal(dpb::VerifyDealRequest {
            deck: "tarot4".into(),
            server_seed: seed.clone(),
            client_seed: client_seed.clone(),
            salt: "3".into(),
            explain: true,
            commitment: created.commitment.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(v.commitment_matches);
    assert_eq!(v.deal, dealt[3].deal);
    assert!(!v.explanation.is_empty());
    app.assert_relayed().await;
    app.stop().await;
}

#[tokio::test]
async fn table_flow_sqlite() {
    table_flow(Db::Sqlite).await;
}

#[tokio::test]
async fn table_flow_postgres() {
    table_flow(Db::Postgres).await;
}

#[tokio::test]
async fn duplicate_deal_with_candidate_log() {
    let mut app = TestApp::spawn(Db::Sqlite).await;
    let tables = app.service_token("tables");
    let t = app.new_table(&tables).await;
    let mut deals = Vec::new();
    for hand in 0..3 {
        deals.push(
            app.dealing
                .deal_duplicate(with(
                    &tables,
                    dpb::DealDuplicateRequest {
                        table_id: t.clone(),
                        hand,
                    },
                ))
                .await
                .unwrap()
                .into_inner(),
        );
    }
    let table = app.reveal(&tables, &t, "", "").await.unwrap();
    for (hand, ours) in deals.iter().enumerate() {
        let lines = cli_json(&[
            "duplicate",
            "--server-seed",
            &table.server_seed,
            "--client-seed",
            &table.client_seed,
            "--sequence",
            &hand.to_string(),
        ]);
        let cli = &lines[0];
        let accepted = ours.candidates.last().unwrap();
        assert!(accepted.rejection.is_empty());
        assert_eq!(
            accepted.distribution_number,
            ours.deal.as_ref().unwrap().distribution_number
        );
        // The CLI selects the same deal after the same rejected candidates.
        assert_eq!(cli["distribution_number"], accepted.distribution_number);
        assert_eq!(cli["salt"], accepted.salt);
        let rejected = cli["rejected"].as_array().unwrap();
        assert_eq!(rejected.len() + 1, ours.candidates.len());
        for (theirs, c) in rejected.iter().zip(&ours.candidates) {
            assert_eq!(theirs["salt"], c.salt);
            assert!(!c.rejection.is_empty());
        }
    }
    app.stop().await;
}
