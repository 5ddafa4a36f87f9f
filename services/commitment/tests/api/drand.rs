//! drand rounds as tables' delayed values, against local test beacons (a test chain with its
//! own key over drand's HTTP API: not drand), on both backends: the happy path (round fixed at
//! commit, fetched, verified, bound, in the client seed), a slow relay (timeout, retry,
//! success), relays down (the round declared stalled, the fallback round bound), a lying relay
//! (refused, counted, the next relay used), and a delayed value by hand refused.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_commitment::drand::Drand;
use fairdeal_drand_client::{BeaconClient, FetchPolicy, Relay};
use fairdeal_harness::drand::{BeaconMode, Lie, TestBeacon, relays};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use sha2::{Digest, Sha256};
use tonic::Code;

use crate::harness::{Db, TestApp, with};

/// One round a second; round 1 was 50 s ago.
const PERIOD: u64 = 1;

pub(crate) async fn beacons(n: usize) -> Vec<TestBeacon> {
    relays(n, 9, PERIOD, 50).await
}

/// The service's drand over `beacons` (asked in order): round = first round after the
/// commit + 1, fallback 3 rounds later, stalled 1 s after its time, short timeouts.
pub(crate) fn drand(beacons: &[TestBeacon]) -> Drand {
    drand_with_margin(beacons, 1)
}

/// [`drand`] with a margin of `margin_rounds` rounds (seconds) after the commit.
pub(crate) fn drand_with_margin(beacons: &[TestBeacon], margin_rounds: u64) -> Drand {
    let chain = Arc::new(beacons[0].chain().chain().unwrap());
    let relays = beacons
        .iter()
        .map(|b| Relay::parse(&b.url()).unwrap())
        .collect();
    let policy = FetchPolicy {
        // Generous: the relays answer in a few ms, but share the test's runtime with
        // everything else on a loaded machine; a slow relay sleeps well past this.
        request_timeout: Duration::from_secs(1),
        passes: 2,
        backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(100),
    };
    Drand {
        client: BeaconClient::new(chain, relays, policy).unwrap(),
        margin_rounds,
        fallback_rounds: 3,
        stall_after: Duration::from_secs(1),
        deal_wait: Duration::from_secs(20),
    }
}

/// Creates a table as `tables` with no delayed source; the table as created.
pub(crate) async fn create(app: &mut TestApp, source: &str) -> cpb::TableCommitment {
    create_timelocked(app, source, 0).await.unwrap()
}

/// Creates a table as `tables`, its latest end `timelock_seconds` away (0: no timelock).
async fn create_timelocked(
    app: &mut TestApp,
    source: &str,
    timelock_seconds: u32,
) -> Result<cpb::TableCommitment, tonic::Status> {
    let tables = app.service_token("tables");
    let table_id = uuid::Uuid::now_v7().to_string();
    Ok(app
        .commitment
        .create_table_commitment(with(
            &tables,
            cpb::CreateTableCommitmentRequest {
                table_id,
                delayed_source: source.into(),
                timelock_seconds,
            },
        ))
        .await?
        .into_inner()
        .table
        .unwrap_or_default())
}

/// The first deal's seeds (as the dealing service), which binds the round if needed.
async fn deal(
    app: &mut TestApp,
    table_id: &str,
) -> Result<cpb::GetTableDealingSeedsResponse, tonic::Status> {
    let dealing = app.service_token("dealing");
    app.commitment
        .get_table_dealing_seeds(with(
            &dealing,
            cpb::GetTableDealingSeedsRequest {
                table_id: table_id.into(),
            },
        ))
        .await
        .map(tonic::Response::into_inner)
}

pub(crate) async fn table(app: &mut TestApp, table_id: &str) -> cpb::TableCommitment {
    app.commitment
        .get_table_commitment(cpb::GetTableCommitmentRequest {
            table_id: table_id.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .table
        .unwrap()
}

/// The round's randomness as the test chain signs it.
pub(crate) fn randomness(beacon: &TestBeacon, round: u64) -> String {
    beacon
        .chain()
        .sign(round)
        .unwrap()
        .signature()
        .randomness()
        .to_hex()
}

/// A timelocked seed: encrypted at commit to the first round at or after the latest end plus
/// the margin, and that round's signature decrypts it to the seed the deals use; out-of-range
/// latest ends, a table naming its own source and a service without drand are refused, naming
/// `timelock_seconds`.
async fn timelocked_seed(db: Db) {
    let b = beacons(1).await;
    let mut app = TestApp::spawn_with(db, Some(drand(&b))).await;
    let before = fairdeal_harness::drand::unix_now();
    let created = create_timelocked(&mut app, "", 120).await.unwrap();
    let after = fairdeal_harness::drand::unix_now();
    let schedule = b[0].chain().info().schedule;
    assert!(created.timelock_latest_end >= before + 120, "{created:?}");
    // The commitment's time is taken rounded up to the next whole second.
    assert!(
        created.timelock_latest_end <= after + 1 + 120,
        "{created:?}"
    );
    assert_eq!(
        created.timelock_round,
        schedule
            .round_after(created.timelock_latest_end, 1)
            .unwrap()
    );
    assert!(created.timelock_round > created.drand_round);
    assert!(
        created
            .timelock_ciphertext
            .starts_with("-----BEGIN AGE ENCRYPTED FILE-----"),
        "{created:?}"
    );
    let chain = b[0].chain().chain().unwrap();
    let header = fairdeal_drand::timelock::header(created.timelock_ciphertext.as_bytes()).unwrap();
    assert_eq!(header.round, created.timelock_round);
    assert_eq!(header.chain_hash, chain.chain_hash());
    // The seed stays secret in the public view; the round's signature opens it.
    assert!(created.server_seed.is_empty());
    let seeds = deal(&mut app, &created.table_id).await.unwrap();
    let opened = fairdeal_drand::timelock::decrypt(
        &chain,
        &b[0].chain().sign(created.timelock_round).unwrap(),
        created.timelock_ciphertext.as_bytes(),
    )
    .unwrap();
    assert_eq!(opened.as_slice(), seeds.server_seed.as_bytes());
    // Another round's signature does not.
    let wrong = fairdeal_drand::timelock::decrypt(
        &chain,
        &b[0].chain().sign(created.timelock_round + 1).unwrap(),
        created.timelock_ciphertext.as_bytes(),
    );
    assert!(wrong.is_err(), "{wrong:?}");
    // GetTableCommitment shows the same timelock.
    let read = table(&mut app, &created.table_id).await;
    assert_eq!(read.timelock_round, created.timelock_round);
    assert_eq!(read.timelock_ciphertext, created.timelock_ciphertext);

    for seconds in [1, 59, 2_592_001] {
        let refused = create_timelocked(&mut app, "", seconds).await.unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(
            refused.message().contains("timelock_seconds"),
            "{refused:?}"
        );
    }
    let refused = create_timelocked(&mut app, "lottery of 2030-01-01", 60)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(
        refused.message().contains("timelock_seconds"),
        "{refused:?}"
    );

    let mut plain = TestApp::spawn(db).await;
    let refused = create_timelocked(&mut plain, "", 60).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(
        refused.message().contains("timelock_seconds"),
        "{refused:?}"
    );
}

async fn happy_path(db: Db) {
    let b = beacons(1).await;
    let mut app = TestApp::spawn_with(db, Some(drand(&b))).await;
    let before = fairdeal_harness::drand::unix_now();
    let before_micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros();
    let created = create(&mut app, "").await;
    let schedule = b[0].chain().info().schedule;
    // Fixed at commit: the first round at or after the commit, plus the margin of 1.
    let earliest = schedule.round_after(before, 1).unwrap();
    assert!(created.drand_round >= earliest, "{created:?}");
    // The whole margin (one 1 s round) lies after the moment of the call, not after the
    // whole second it falls in: the commitment, recorded a moment later, precedes R.
    let published = u128::from(schedule.round_time(created.drand_round).unwrap()) * 1_000_000;
    assert!(
        published >= before_micros + 1_000_000,
        "round {} at {published} µs, the call at {before_micros} µs",
        created.drand_round
    );
    assert_eq!(created.drand_fallback_round, created.drand_round + 3);
    assert_eq!(
        created.drand_chain_hash,
        hex::encode(b[0].chain().info().chain_hash())
    );
    assert!(
        created
            .delayed_source
            .contains("fairdeal-test-chain-not-drand")
    );
    assert!(created.delayed_value.is_empty());

    // The first deal waits for the round, binds it, and fixes the client seed with it.
    let seeds = deal(&mut app, &created.table_id).await.unwrap();
    let after = table(&mut app, &created.table_id).await;
    let round = created.drand_round;
    assert_eq!(after.drand_bound_round, round);
    assert_eq!(after.delayed_value, randomness(&b[0], round));
    assert_eq!(
        after.drand_signature,
        b[0].chain().sign(round).unwrap().signature().to_hex()
    );
    assert!(!after.drand_stalled);
    let no_contributions = hex::encode(Sha256::digest(b""));
    assert_eq!(
        seeds.client_seed,
        format!("{no_contributions}:{}", randomness(&b[0], round))
    );
    app.stop().await;
}

async fn slow_relay_is_retried(db: Db) {
    let b = beacons(1).await;
    b[0].set_mode(BeaconMode::Slow {
        delay: Duration::from_secs(3),
        times: 1,
    });
    let drand = drand(&b);
    let client = drand.client.clone();
    let mut app = TestApp::spawn_with(db, Some(drand)).await;
    let created = create(&mut app, "").await;
    deal(&mut app, &created.table_id).await.unwrap();
    let after = table(&mut app, &created.table_id).await;
    assert_eq!(after.drand_bound_round, created.drand_round);
    assert!(
        b[0].round_requests() >= 2,
        "the slow answer timed out, a retry got it"
    );
    assert_eq!(client.refused(), 0);
    app.stop().await;
}

async fn stalled_round_gives_way_to_the_fallback(db: Db) {
    let b = beacons(1).await;
    b[0].set_mode(BeaconMode::Down);
    let mut app = TestApp::spawn_with(db, Some(drand(&b))).await;
    let created = create(&mut app, "").await;
    // While the relay is down: no deal (UNAVAILABLE), until the round is declared stalled.
    let mut stalled = false;
    for _ in 0..40 {
        match deal(&mut app, &created.table_id).await {
            Err(status) => assert_eq!(status.code(), Code::Unavailable, "{status:?}"),
            Ok(seeds) => panic!("dealt with the relay down: {seeds:?}"),
        }
        if table(&mut app, &created.table_id).await.drand_stalled {
            stalled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(stalled, "the round was never declared stalled");
    // The relay is back: the fallback round is bound, never the stalled round.
    b[0].set_mode(BeaconMode::Honest);
    let seeds = deal(&mut app, &created.table_id).await.unwrap();
    let after = table(&mut app, &created.table_id).await;
    assert_eq!(after.drand_bound_round, created.drand_fallback_round);
    assert_eq!(
        after.delayed_value,
        randomness(&b[0], created.drand_fallback_round)
    );
    assert!(seeds.client_seed.ends_with(&after.delayed_value));
    app.stop().await;
}

async fn lying_relay_is_refused(db: Db) {
    let b = beacons(2).await;
    b[0].set_mode(BeaconMode::Lying(Lie::WrongSignature));
    let drand = drand(&b);
    let client = drand.client.clone();
    let mut app = TestApp::spawn_with(db, Some(drand)).await;
    let created = create(&mut app, "").await;
    deal(&mut app, &created.table_id).await.unwrap();
    let after = table(&mut app, &created.table_id).await;
    // The honest second relay's round, verified; the lie refused and counted.
    assert_eq!(after.drand_bound_round, created.drand_round);
    assert_eq!(after.delayed_value, randomness(&b[1], created.drand_round));
    assert!(client.refused() >= 1);
    app.stop().await;
}

async fn delayed_value_by_hand_is_refused(db: Db) {
    let b = beacons(1).await;
    let mut app = TestApp::spawn_with(db, Some(drand(&b))).await;
    let created = create(&mut app, "").await;
    let tables = app.service_token("tables");
    let refused = app
        .commitment
        .bind_table_delayed_value(with(
            &tables,
            cpb::BindTableDelayedValueRequest {
                table_id: created.table_id.clone(),
                value: "drand:123".into(),
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused.message().starts_with("delayed_value: "),
        "{refused:?}"
    );
    assert!(
        table(&mut app, &created.table_id)
            .await
            .delayed_value
            .is_empty()
    );
    // A table naming its own source keeps the manual binding, drand or not.
    let own = create(&mut app, "EuroMillions draw of 2026-12-01").await;
    assert_eq!(own.drand_round, 0);
    app.commitment
        .bind_table_delayed_value(with(
            &tables,
            cpb::BindTableDelayedValueRequest {
                table_id: own.table_id.clone(),
                value: "07 12 23 34 45".into(),
            },
        ))
        .await
        .unwrap();
    app.stop().await;
}

#[tokio::test]
async fn drand_happy_path_sqlite() {
    happy_path(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_happy_path_postgres() {
    happy_path(Db::Postgres).await;
}

#[tokio::test]
async fn drand_slow_relay_is_retried_sqlite() {
    slow_relay_is_retried(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_slow_relay_is_retried_postgres() {
    slow_relay_is_retried(Db::Postgres).await;
}

#[tokio::test]
async fn drand_stalled_round_gives_way_to_the_fallback_sqlite() {
    stalled_round_gives_way_to_the_fallback(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_stalled_round_gives_way_to_the_fallback_postgres() {
    stalled_round_gives_way_to_the_fallback(Db::Postgres).await;
}

#[tokio::test]
async fn drand_lying_relay_is_refused_sqlite() {
    lying_relay_is_refused(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_lying_relay_is_refused_postgres() {
    lying_relay_is_refused(Db::Postgres).await;
}

#[tokio::test]
async fn drand_delayed_value_by_hand_is_refused_sqlite() {
    delayed_value_by_hand_is_refused(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_delayed_value_by_hand_is_refused_postgres() {
    delayed_value_by_hand_is_refused(Db::Postgres).await;
}

#[tokio::test]
async fn drand_timelocked_seed_sqlite() {
    timelocked_seed(Db::Sqlite).await;
}

#[tokio::test]
async fn drand_timelocked_seed_postgres() {
    timelocked_seed(Db::Postgres).await;
}
