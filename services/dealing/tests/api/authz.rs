//! Authorization: players cannot read seeds or deal; internal methods need a service token
//! (and seeds only go to the dealing service); public reads need none.

use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tonic::Code;
use uuid::Uuid;

use crate::common::{Db, TestApp, with};

#[tokio::test]
async fn players_cannot_read_seeds_or_deal() {
    let mut app = TestApp::spawn(Db::Sqlite).await;
    let tables = app.service_token("tables");
    let player = Uuid::now_v7();
    let me = app.player_token(player);
    let t = app.new_table(&tables).await;

    let seeds = || cpb::GetTableDealingSeedsRequest {
        table_id: t.clone(),
    };
    // A player token: refused.
    let e = app
        .commitment
        .get_table_dealing_seeds(with(&me, seeds()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // Another internal service: refused too (only dealing reads seeds).
    let e = app
        .commitment
        .get_table_dealing_seeds(with(&tables, seeds()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // No token at all.
    let e = app
        .commitment
        .get_table_dealing_seeds(seeds())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    // A player cannot reserve bets (and so read a pair's seed) either.
    let e = app
        .commitment
        .reserve_bet(with(
            &me,
            cpb::ReserveBetRequest {
                user_id: player.to_string(),
                bet: "dice".into(),
                ..Default::default()
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);

    // Dealing: internal only.
    let deal = || dpb::DealHandRequest {
        table_id: t.clone(),
        deck: "dix".into(),
        hand: 0,
    };
    let e = app.dealing.deal_hand(with(&me, deal())).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let e = app.dealing.deal_hand(deal()).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let e = app
        .dealing
        .deal_duplicate(with(
            &me,
            dpb::DealDuplicateRequest {
                table_id: t.clone(),
                hand: 0,
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // Players cannot contribute for others, reveal, or create tables directly.
    let e = app
        .commitment
        .contribute_seed(with(
            &me,
            cpb::ContributeSeedRequest {
                table_id: t.clone(),
                seat: 0,
                player_id: player.to_string(),
                contribution: "x".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let e = app
        .commitment
        .reveal_table_seed(with(
            &me,
            cpb::RevealTableSeedRequest {
                table_id: t.clone(),
                operator: "me".into(),
                justification: "curious".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // A player cannot act on another player's seed pair.
    let e = app
        .commitment
        .rotate_seed_pair(with(
            &me,
            cpb::RotateSeedPairRequest {
                user_id: Uuid::now_v7().to_string(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // A service cannot place a bet (bets are a player's own).
    let e = app
        .dealing
        .place_bet(with(
            &tables,
            dpb::PlaceBetRequest {
                options: Some(dpb::GameOptions {
                    game: "dice".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);

    // Public reads need no token and show no seed before the reveal.
    let public = app
        .commitment
        .get_table_commitment(cpb::GetTableCommitmentRequest {
            table_id: t.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    assert!(public.server_seed.is_empty());
    app.dealing
        .deal_from_number(dpb::DealFromNumberRequest {
            deck: "bridge".into(),
            distribution_number: "0".into(),
        })
        .await
        .unwrap();

    // Reveal before the game started: refused with no state change; an operator reveal
    // (audited, with a justification) works.
    let e = app
        .commitment
        .reveal_table_seed(with(
            &tables,
            cpb::RevealTableSeedRequest {
                table_id: t.clone(),
                ..Default::default()
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let unchanged = app
        .commitment
        .get_table_commitment(cpb::GetTableCommitmentRequest {
            table_id: t.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    assert_eq!(unchanged, public);
    let revealed = app
        .commitment
        .reveal_table_seed(with(
            &tables,
            cpb::RevealTableSeedRequest {
                table_id: t.clone(),
                operator: "ops@example".into(),
                justification: "table abandoned before the first deal".into(),
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap();
    assert_eq!(revealed.reveal_reason, "operator");
    assert_eq!(revealed.server_seed.len(), 64);
    app.stop().await;
}
