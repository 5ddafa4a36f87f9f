//! A single-player flow over 100 bets with rotations; the CLI reproduces every bet.

use fairdeal_fairness::commitment::Commitment;
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use uuid::Uuid;

use crate::common::{Db, TestApp, cli_json, with};

/// (game, option flag, option value) played in turn.
const GAMES: [(&str, Option<(&str, u64)>); 6] = [
    ("dice", None),
    ("crash", None),
    ("mines", Some(("--mines", 3))),
    ("plinko", Some(("--pins", 12))),
    ("tower", None),
    ("jackpot", Some(("--tickets", 500))),
];

fn options(i: usize) -> dpb::GameOptions {
    let (game, option) = GAMES[i % GAMES.len()];
    let mut o = dpb::GameOptions {
        game: game.into(),
        ..Default::default()
    };
    match option {
        Some(("--mines", v)) => o.mines = Some(v),
        Some(("--pins", v)) => o.pins = Some(v),
        Some(("--tickets", v)) => o.tickets = Some(v),
        _ => {}
    }
    o
}

async fn pair_flow(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let user = Uuid::now_v7();
    let me = app.player_token(user);
    let pair = app
        .commitment
        .get_seed_pair(with(&me, cpb::GetSeedPairRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .pair
        .unwrap();
    assert_eq!((pair.index, pair.next_nonce), (0, 0));
    app.commitment
        .set_client_seed(with(
            &me,
            cpb::SetClientSeedRequest {
                user_id: String::new(),
                client_seed: "my own seed".into(),
            },
        ))
        .await
        .unwrap();

    let mut bets = Vec::new();
    let mut revealed = Vec::new();
    for i in 0..100 {
        if i == 40 {
            // The client seed may change mid-pair; the counter goes on.
            app.commitment
                .set_client_seed(with(
                    &me,
                    cpb::SetClientSeedRequest {
                        user_id: user.to_string(),
                        client_seed: "changed".into(),
                    },
                ))
                .await
                .unwrap();
        }
        if i == 60 || i == 85 {
            let r = app
                .commitment
                .rotate_seed_pair(with(&me, cpb::RotateSeedPairRequest::default()))
                .await
                .unwrap()
                .into_inner();
            revealed.push(r.revealed.unwrap());
            assert_eq!(r.pair.unwrap().next_nonce, 0);
        }
        let bet = app
            .dealing
            .place_bet(with(
                &me,
                dpb::PlaceBetRequest {
                    options: Some(options(i)),
                },
            ))
            .await
            .unwrap()
            .into_inner();
        bets.push((i, bet));
    }
    let last = app
        .commitment
        .rotate_seed_pair(with(&me, cpb::RotateSeedPairRequest::default()))
        .await
        .unwrap()
        .into_inner();
    revealed.push(last.revealed.unwrap());
    assert_eq!(
        revealed.iter().map(|r| r.bets).collect::<Vec<_>>(),
        vec![60, 25, 15]
    );
    // Each revealed seed is also readable later, and matches its commitment.
    let again = app
        .commitment
        .get_revealed_seed_pair(with(
            &me,
            cpb::GetRevealedSeedPairRequest {
                user_id: String::new(),
                index: 1,
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .revealed
        .unwrap();
    assert_eq!(again.server_seed, revealed[1].server_seed);

    for (i, bet) in &bets {
        let seed = &revealed[bet.pair_index as usize];
        assert_eq!(Commitment::of(&seed.server_seed).to_hex(), bet.commitment);
        let expected_client = if *i < 40 { "my own seed" } else { "changed" };
        assert_eq!(bet.client_seed, expected_client);
        let (game, option) = GAMES[i % GAMES.len()];
        let nonce = bet.nonce.to_string();
        let mut args = vec![
            "outcome",
            game,
            "--server-seed",
            &seed.server_seed,
            "--client-seed",
            &bet.client_seed,
            "--salt",
            &nonce,
        ];
        let value;
        if let Some((flag, v)) = option {
            value = v.to_string();
            args.extend([flag, value.as_str()]);
        }
        let cli = cli_json(&args);
        let ours: serde_json::Value = serde_json::from_str(&bet.result_json).unwrap();
        assert_eq!(cli[0], ours, "bet {i}");
    }
    // Nonces: 0..60 on pair 0, 0..25 on pair 1, 0..15 on pair 2.
    let nonces: Vec<(u64, u64)> = bets.iter().map(|(_, b)| (b.pair_index, b.nonce)).collect();
    assert_eq!(nonces[59], (0, 59));
    assert_eq!(nonces[60], (1, 0));
    assert_eq!(nonces[99], (2, 14));
    app.assert_relayed().await;
    app.stop().await;
}

#[tokio::test]
async fn pair_flow_sqlite() {
    pair_flow(Db::Sqlite).await;
}

#[tokio::test]
async fn pair_flow_postgres() {
    pair_flow(Db::Postgres).await;
}
