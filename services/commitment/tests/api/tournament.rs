//! A tournament set: commit, bind the delayed value, generate, reveal; boards recomputed
//! from the revealed secret.

use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use tonic::Code;
use uuid::Uuid;

use crate::harness::{Db, TestApp, with};

#[tokio::test]
async fn tournament_set_flow() {
    let mut app = TestApp::spawn(Db::Sqlite).await;
    let organiser = app.service_token("organiser");
    for deck in ["dix", "bridge"] {
        let id = Uuid::now_v7().to_string();
        let committed = app
            .commitment
            .commit_tournament(with(
                &organiser,
                cpb::CommitTournamentRequest {
                    tournament_id: id.clone(),
                    deck: deck.into(),
                    delayed_source: "EuroMillions draw of 2026-12-01".into(),
                },
            ))
            .await
            .unwrap()
            .into_inner()
            .tournament
            .unwrap();
        let request = || cpb::GenerateBoardsRequest {
            tournament_id: id.clone(),
            session: 1,
            first_board: 1,
            count: 4,
        };
        let e = app
            .commitment
            .generate_boards(with(&organiser, request()))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition);
        app.commitment
            .bind_tournament_delayed_value(with(
                &organiser,
                cpb::BindTournamentDelayedValueRequest {
                    tournament_id: id.clone(),
                    value: "4 17 23 38 45 / 2 9".into(),
                },
            ))
            .await
            .unwrap();
        let boards = app
            .commitment
            .generate_boards(with(&organiser, request()))
            .await
            .unwrap()
            .into_inner()
            .boards;
        assert_eq!(boards.len(), 4);
        let t = app
            .commitment
            .reveal_tournament(with(
                &organiser,
                cpb::RevealTournamentRequest {
                    tournament_id: id.clone(),
                },
            ))
            .await
            .unwrap()
            .into_inner()
            .tournament
            .unwrap();
        assert_eq!(t.commitment, committed.commitment);
        if deck == "dix" {
            for b in &boards {
                let d = Deal::from_seeds(
                    Deck::Dix,
                    &t.secret,
                    &t.delayed_value,
                    &format!("1:{}", b.board),
                );
                assert_eq!(b.number, d.distribution_number().to_string());
            }
        } else {
            for b in &boards {
                assert_eq!(b.hands.len(), 4);
                assert!(b.hands.iter().all(|h| h.cards.len() == 13));
            }
        }
    }
    app.stop().await;
}
