//! drand rounds as tournaments' delayed values, against local test beacons (a test chain with
//! its own key over drand's HTTP API: not drand), on both backends: a tournament committed
//! without a source of its own gets a round at commit, public before it is out; the background
//! binder binds it verified (round, signature and randomness in the log) with no call asking
//! for it, and the boards are the deals of that randomness; a value by hand is refused; a lying
//! beacon is refused and the tournament stays unbound; a stalled round gives way to the
//! fallback.

use std::time::Duration;

use fairdeal_eventstore::StreamId;
use fairdeal_fairness::Deck;
use fairdeal_fairness::deal::Deal;
use fairdeal_harness::drand::{BeaconMode, Lie};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use tonic::Code;

use crate::drand::{beacons, drand, randomness};
use crate::harness::{Db, TestApp, with};

/// Commits a tournament of `deck` as the organiser; `source` empty: a drand round.
pub(crate) async fn commit(
    app: &mut TestApp,
    deck: &str,
    source: &str,
) -> Result<cpb::Tournament, tonic::Status> {
    let organiser = app.service_token("organiser");
    Ok(app
        .commitment
        .commit_tournament(with(
            &organiser,
            cpb::CommitTournamentRequest {
                tournament_id: uuid::Uuid::now_v7().to_string(),
                deck: deck.into(),
                delayed_source: source.into(),
            },
        ))
        .await?
        .into_inner()
        .tournament
        .unwrap_or_default())
}

/// The tournament as the public sees it.
pub(crate) async fn tournament(app: &mut TestApp, id: &str) -> cpb::Tournament {
    app.commitment
        .get_tournament(cpb::GetTournamentRequest {
            tournament_id: id.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .tournament
        .unwrap()
}

/// Boards 1..=count of session 1.
async fn generate(
    app: &mut TestApp,
    id: &str,
    count: u32,
) -> Result<Vec<cpb::Board>, tonic::Status> {
    let organiser = app.service_token("organiser");
    app.commitment
        .generate_boards(with(
            &organiser,
            cpb::GenerateBoardsRequest {
                tournament_id: id.into(),
                session: 1,
                first_board: 1,
                count,
            },
        ))
        .await
        .map(|r| r.into_inner().boards)
}

async fn bind_by_hand(app: &mut TestApp, id: &str, value: &str) -> Result<(), tonic::Status> {
    let organiser = app.service_token("organiser");
    app.commitment
        .bind_tournament_delayed_value(with(
            &organiser,
            cpb::BindTournamentDelayedValueRequest {
                tournament_id: id.into(),
                value: value.into(),
            },
        ))
        .await
        .map(|_| ())
}

/// Reads the tournament until `done` holds (at most `seconds`), with no other call.
pub(crate) async fn tournament_until(
    app: &mut TestApp,
    id: &str,
    seconds: u64,
    done: impl Fn(&cpb::Tournament) -> bool,
) -> cpb::Tournament {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        let t = tournament(app, id).await;
        if done(&t) {
            return t;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not reached in {seconds} s: {t:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The tournament's events as the commitment service stored them.
async fn stored(app: &TestApp, id: &str) -> Vec<fairdeal_eventstore::RecordedEvent> {
    let stream = StreamId::of("tournament", id).unwrap();
    app.storage()
        .events()
        .read_stream(&stream, 1, 100)
        .await
        .unwrap()
}

async fn bound_by_the_binder(db: Db) {
    let b = beacons(1).await;
    let mut app = TestApp::spawn_with(db, Some(drand(&b))).await;
    let before = fairdeal_harness::drand::unix_now();
    let committed = commit(&mut app, "dix", "").await.unwrap();
    let schedule = b[0].chain().info().schedule;
    // Fixed at commit and public before it is out.
    let round = committed.drand_round;
    assert!(
        round >= schedule.round_after(before, 1).unwrap(),
        "{committed:?}"
    );
    assert_eq!(committed.drand_fallback_round, round + 3);
    assert_eq!(
        committed.drand_chain_hash,
        hex::encode(b[0].chain().info().chain_hash())
    );
    assert_eq!(
        committed.delayed_source,
        format!(
            "drand fairdeal-test-chain-not-drand round {round}, fallback {}, chain {}",
            round + 3,
            committed.drand_chain_hash
        )
    );
    assert!(committed.delayed_value.is_empty());
    assert_eq!(committed.drand_bound_round, 0);
    // No boards before the round is out: not bound, and GenerateBoards does not wait.
    let early = generate(&mut app, &committed.tournament_id, 2)
        .await
        .unwrap_err();
    assert_eq!(early.code(), Code::FailedPrecondition, "{early:?}");
    assert!(
        early.message().contains(&format!("drand round {round}")),
        "{early:?}"
    );
    // A value by hand is refused, naming the field and the reason.
    let refused = bind_by_hand(&mut app, &committed.tournament_id, "4 17 23 38 45")
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused.message().starts_with(&format!(
            "delayed_value: this tournament's delayed value is drand round {round}"
        )),
        "{refused:?}"
    );

    // The background binder binds the round once out, with no call asking for it.
    let bound = tournament_until(&mut app, &committed.tournament_id, 20, |t| {
        !t.delayed_value.is_empty()
    })
    .await;
    assert_eq!(bound.drand_bound_round, round);
    assert_eq!(bound.delayed_value, randomness(&b[0], round));
    assert_eq!(
        bound.drand_signature,
        b[0].chain().sign(round).unwrap().signature().to_hex()
    );
    assert!(!bound.drand_stalled);
    // The log records the round fixed at commit, and the round, signature and randomness
    // bound.
    let events = stored(&app, &committed.tournament_id).await;
    let commit_event: cpb::TournamentCommitted = events[0].decode_payload().unwrap();
    assert_eq!(commit_event.drand_round, round);
    assert_eq!(commit_event.drand_fallback_round, round + 3);
    assert_eq!(commit_event.drand_chain_hash, committed.drand_chain_hash);
    let binding: cpb::DelayedValueBound = events
        .iter()
        .find(|e| e.is::<cpb::DelayedValueBound>())
        .unwrap()
        .decode_payload()
        .unwrap();
    assert_eq!(binding.subject_id, committed.tournament_id);
    assert_eq!(binding.drand_round, round);
    assert_eq!(binding.drand_signature, bound.drand_signature);
    assert_eq!(binding.drand_randomness, bound.delayed_value);
    assert_eq!(binding.value, bound.delayed_value);
    // Still refused by hand once bound.
    let again = bind_by_hand(&mut app, &committed.tournament_id, "x")
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition);

    // The boards are the SPEC deals of (secret, randomness, "1:<board>").
    let boards = generate(&mut app, &committed.tournament_id, 3)
        .await
        .unwrap();
    assert_eq!(boards.len(), 3);
    let organiser = app.service_token("organiser");
    let revealed = app
        .commitment
        .reveal_tournament(with(
            &organiser,
            cpb::RevealTournamentRequest {
                tournament_id: committed.tournament_id.clone(),
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .tournament
        .unwrap();
    for board in &boards {
        let deal = Deal::from_seeds(
            Deck::Dix,
            &revealed.secret,
            &bound.delayed_value,
            &format!("1:{}", board.board),
        );
        assert_eq!(board.number, deal.distribution_number().to_string());
    }

    // A tournament naming its own source keeps the binding by hand, drand or not.
    let own = commit(&mut app, "bridge", "EuroMillions draw of 2026-12-01")
        .await
        .unwrap();
    assert_eq!(own.drand_round, 0);
    assert_eq!(own.delayed_source, "EuroMillions draw of 2026-12-01");
    bind_by_hand(&mut app, &own.tournament_id, "4 17 23 38 45 / 2 9")
        .await
        .unwrap();
    assert_eq!(
        generate(&mut app, &own.tournament_id, 1)
            .await
            .unwrap()
            .len(),
        1
    );
    app.stop().await;
}

async fn lying_beacon_is_refused(db: Db) {
    let b = beacons(1).await;
    b[0].set_mode(BeaconMode::Lying(Lie::WrongSignature));
    let drand = drand(&b);
    let client = drand.client.clone();
    let mut app = TestApp::spawn_with(db, Some(drand)).await;
    let committed = commit(&mut app, "tarot4", "").await.unwrap();
    let id = committed.tournament_id.clone();
    // The binder asks from the round's time on; every answer is refused and counted.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while client.refused() == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never asked");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Past the round's stall time and the fallback's: never bound.
    let schedule = b[0].chain().info().schedule;
    let fallback_time = schedule.round_time(committed.drand_fallback_round).unwrap();
    while fairdeal_harness::drand::unix_now() <= fallback_time + 1 {
        let t = tournament(&mut app, &id).await;
        assert!(t.delayed_value.is_empty(), "a lie was bound: {t:?}");
        assert_eq!(t.drand_bound_round, 0);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // No boards: GenerateBoards asks the relay again, which lies again.
    let refused = generate(&mut app, &id, 1).await.unwrap_err();
    assert!(
        matches!(refused.code(), Code::Unavailable | Code::FailedPrecondition),
        "{refused:?}"
    );
    let t = tournament(&mut app, &id).await;
    assert!(t.delayed_value.is_empty(), "{t:?}");
    assert!(client.refused() >= 2, "{}", client.refused());
    assert!(
        !stored(&app, &id)
            .await
            .iter()
            .any(|e| e.is::<cpb::DelayedValueBound>())
    );
    app.stop().await;
}

async fn stalled_round_gives_way_to_the_fallback(db: Db) {
    let b = beacons(1).await;
    b[0].set_mode(BeaconMode::Down);
    let mut app = TestApp::spawn_with(db, Some(drand(&b))).await;
    let committed = commit(&mut app, "dix", "").await.unwrap();
    let id = committed.tournament_id.clone();
    // The binder declares the round stalled by itself (nothing else asks for it).
    let stalled = tournament_until(&mut app, &id, 20, |t| t.drand_stalled).await;
    assert!(stalled.delayed_value.is_empty());
    // The relay is back: the fallback round is bound, never the stalled round.
    b[0].set_mode(BeaconMode::Honest);
    let bound = tournament_until(&mut app, &id, 40, |t| !t.delayed_value.is_empty()).await;
    assert_eq!(bound.drand_bound_round, committed.drand_fallback_round);
    assert_eq!(
        bound.delayed_value,
        randomness(&b[0], committed.drand_fallback_round)
    );
    let events = stored(&app, &id).await;
    let stall: cpb::DrandRoundStalled = events
        .iter()
        .find(|e| e.is::<cpb::DrandRoundStalled>())
        .unwrap()
        .decode_payload()
        .unwrap();
    assert_eq!(stall.tournament_id, id);
    assert!(stall.table_id.is_empty());
    assert_eq!(stall.round, committed.drand_round);
    assert_eq!(stall.fallback_round, committed.drand_fallback_round);
    assert_eq!(generate(&mut app, &id, 2).await.unwrap().len(), 2);
    app.stop().await;
}

/// Without drand, a tournament must name its source (INVALID_ARGUMENT naming the field), and
/// one that does is bound by hand as before.
async fn without_drand_a_source_is_required(db: Db) {
    let mut app = TestApp::spawn(db).await;
    let refused = commit(&mut app, "dix", "").await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(
        refused.message().starts_with("delayed_source is required"),
        "{refused:?}"
    );
    let own = commit(&mut app, "dix", "lottery of 2030-01-01")
        .await
        .unwrap();
    assert_eq!(own.drand_round, 0);
    bind_by_hand(&mut app, &own.tournament_id, "7 12")
        .await
        .unwrap();
    app.stop().await;
}

#[tokio::test]
async fn drand_tournament_bound_by_the_binder_sqlite() {
    bound_by_the_binder(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_tournament_bound_by_the_binder_postgres() {
    bound_by_the_binder(Db::Postgres).await;
}

#[tokio::test]
async fn drand_tournament_lying_beacon_is_refused_sqlite() {
    lying_beacon_is_refused(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_tournament_lying_beacon_is_refused_postgres() {
    lying_beacon_is_refused(Db::Postgres).await;
}

#[tokio::test]
async fn drand_tournament_stalled_round_gives_way_to_the_fallback_sqlite() {
    stalled_round_gives_way_to_the_fallback(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_tournament_stalled_round_gives_way_to_the_fallback_postgres() {
    stalled_round_gives_way_to_the_fallback(Db::Postgres).await;
}

#[tokio::test]
async fn drand_off_tournament_needs_a_source_sqlite() {
    without_drand_a_source_is_required(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_off_tournament_needs_a_source_postgres() {
    without_drand_a_source_is_required(Db::Postgres).await;
}
