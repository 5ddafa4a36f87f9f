//! Authorization: players cannot read seeds or deal; internal methods need a service token
//! (and seeds only go to the dealing service); public reads need none.

use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use tonic::{Code, Status};
use uuid::Uuid;

use crate::common::{Db, TestApp, with};

/// The code of a call that must have been refused.
#[track_caller]
fn refusal<T: std::fmt::Debug>(result: Result<T, Status>) -> Code {
    result.unwrap_err().code()
}

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
    let deal = || dpb::DealHandRequest {
        table_id: t.clone(),
        deck: "dix".into(),
        hand: 0,
    };
    let (c, d) = (&mut app.commitment, &mut app.dealing);
    // Each refused call: who tries what, and the code it is refused with.
    let refused = [
        (
            "a player reads seeds",
            refusal(c.get_table_dealing_seeds(with(&me, seeds())).await),
            Code::PermissionDenied,
        ),
        (
            "another internal service reads seeds (only dealing does)",
            refusal(c.get_table_dealing_seeds(with(&tables, seeds())).await),
            Code::PermissionDenied,
        ),
        (
            "no token reads seeds",
            refusal(c.get_table_dealing_seeds(seeds()).await),
            Code::Unauthenticated,
        ),
        (
            "a player reserves a bet (and so reads a pair's seed)",
            refusal(
                c.reserve_bet(with(
                    &me,
                    cpb::ReserveBetRequest {
                        user_id: player.to_string(),
                        bet: "dice".into(),
                        ..Default::default()
                    },
                ))
                .await,
            ),
            Code::PermissionDenied,
        ),
        // Dealing: internal only.
        (
            "a player deals a hand",
            refusal(d.deal_hand(with(&me, deal())).await),
            Code::PermissionDenied,
        ),
        (
            "no token deals a hand",
            refusal(d.deal_hand(deal()).await),
            Code::Unauthenticated,
        ),
        (
            "a player deals a duplicate hand",
            refusal(
                d.deal_duplicate(with(
                    &me,
                    dpb::DealDuplicateRequest {
                        table_id: t.clone(),
                        hand: 0,
                    },
                ))
                .await,
            ),
            Code::PermissionDenied,
        ),
        // Players cannot contribute for others, reveal, or create tables directly.
        (
            "a player contributes a seed",
            refusal(
                c.contribute_seed(with(
                    &me,
                    cpb::ContributeSeedRequest {
                        table_id: t.clone(),
                        seat: 0,
                        player_id: player.to_string(),
                        contribution: "x".into(),
                    },
                ))
                .await,
            ),
            Code::PermissionDenied,
        ),
        (
            "a player reveals a table's seed",
            refusal(
                c.reveal_table_seed(with(
                    &me,
                    cpb::RevealTableSeedRequest {
                        table_id: t.clone(),
                        operator: "me".into(),
                        justification: "curious".into(),
                    },
                ))
                .await,
            ),
            Code::PermissionDenied,
        ),
        (
            "a player rotates another player's seed pair",
            refusal(
                c.rotate_seed_pair(with(
                    &me,
                    cpb::RotateSeedPairRequest {
                        user_id: Uuid::now_v7().to_string(),
                    },
                ))
                .await,
            ),
            Code::PermissionDenied,
        ),
        (
            "a service places a bet (bets are a player's own)",
            refusal(
                d.place_bet(with(
                    &tables,
                    dpb::PlaceBetRequest {
                        options: Some(dpb::GameOptions {
                            game: "dice".into(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ))
                .await,
            ),
            Code::PermissionDenied,
        ),
    ];
    for (what, code, expected) in refused {
        assert_eq!(code, expected, "{what}");
    }

    // Public reads need no token and show no seed before the reveal.
    let public = app.table(&t).await;
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
    let e = app.reveal(&tables, &t, "", "").await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(app.table(&t).await, public);
    let revealed = app
        .reveal(
            &tables,
            &t,
            "ops@example",
            "table abandoned before the first deal",
        )
        .await
        .unwrap();
    assert_eq!(revealed.reveal_reason, "operator");
    assert_eq!(revealed.server_seed.len(), 64);
    app.stop().await;
}
