//! A single-player flow over 100 bets with rotations; the CLI reproduces every bet. Retried
//! bets (same bet id) stay one bet.

use fairdeal_eventstore::StreamId;
use fairdeal_fairness::commitment::Commitment;
use fairdeal_fairness::outcome::{Game, Options, Round};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_proto::fairdeal::dealing::v1 as dpb;
use fairdeal_proto::fairdeal::dealing::v1::OutcomeIssued;
use prost::Message;
use tonic::Code;
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
    let pair = app.seed_pair(&me).await;
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
                    ..Default::default()
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

/// The `OutcomeIssued` events of a user, as (pair, nonce, bet id).
async fn recorded_outcomes(app: &TestApp, user: Uuid) -> Vec<(u64, u64, String)> {
    let stream = StreamId::of("outcomes", user).unwrap();
    app.dealing_storage
        .events()
        .read_stream(&stream, 1, 1000)
        .await
        .unwrap()
        .iter()
        .map(|e| {
            let m = OutcomeIssued::decode(e.payload.as_slice()).unwrap();
            (m.pair_index, m.nonce, m.bet_id)
        })
        .collect()
}

async fn bet_retries(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let user = Uuid::now_v7();
    let me = app.player_token(user);
    let bet = |bet_id: &str, mines: u64| dpb::PlaceBetRequest {
        options: Some(dpb::GameOptions {
            game: "mines".into(),
            mines: Some(mines),
            ..Default::default()
        }),
        bet_id: bet_id.into(),
    };

    // A retried bet (its reply lost) is the same bet: same nonce and result, one record.
    let id = Uuid::now_v7().to_string();
    let first = app
        .dealing
        .place_bet(with(&me, bet(&id, 3)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((first.nonce, first.bet_id.as_str()), (0, id.as_str()));
    let again = app
        .dealing
        .place_bet(with(&me, bet(&id, 3)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again, first);
    assert_eq!(
        recorded_outcomes(&app, user).await,
        vec![(0, 0, id.clone())]
    );

    // The same id for another bet is refused, and nothing is reserved or recorded.
    let refused = app
        .dealing
        .place_bet(with(&me, bet(&id, 5)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::AlreadyExists, "{refused:?}");
    assert!(refused.message().contains("bet_id"), "{refused:?}");
    let bad = app
        .dealing
        .place_bet(with(&me, bet("not-a-uuid", 3)))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().contains("bet_id"), "{bad:?}");

    // The dealing service stopped after the reservation (the nonce is consumed, nothing
    // recorded): the client's retry completes that very bet.
    let crashed = Uuid::now_v7().to_string();
    let reserved = app
        .commitment
        .reserve_bet(with(
            &app.service_token("dealing"),
            cpb::ReserveBetRequest {
                user_id: user.to_string(),
                bet_id: crashed.clone(),
                bet: "mines --mines 3".into(),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reserved.nonce, 1);
    let completed = app
        .dealing
        .place_bet(with(&me, bet(&crashed, 3)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(completed.nonce, 1);
    let outcome = Round::new(
        Game::Mines,
        &Options {
            mines: Some(3),
            ..Options::default()
        },
    )
    .unwrap()
    .from_seeds(&reserved.server_seed, &reserved.client_seed, "1");
    assert_eq!(completed.result_text, outcome.to_string());

    // Bets without an id are new bets each time.
    let fresh = app
        .dealing
        .place_bet(with(&me, bet("", 3)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fresh.nonce, 2);
    assert!(Uuid::parse_str(&fresh.bet_id).is_ok());

    // After a rotation the old bet can no longer be retried.
    app.commitment
        .rotate_seed_pair(with(&me, cpb::RotateSeedPairRequest::default()))
        .await
        .unwrap();
    let late = app
        .dealing
        .place_bet(with(&me, bet(&id, 3)))
        .await
        .unwrap_err();
    assert_eq!(late.code(), Code::FailedPrecondition, "{late:?}");
    assert_eq!(
        recorded_outcomes(&app, user).await,
        vec![(0, 0, id), (0, 1, crashed), (0, 2, fresh.bet_id)]
    );
    app.stop().await;
}

#[tokio::test]
async fn bet_retries_sqlite() {
    bet_retries(Db::Sqlite).await;
}

#[tokio::test]
async fn bet_retries_postgres() {
    bet_retries(Db::Postgres).await;
}
