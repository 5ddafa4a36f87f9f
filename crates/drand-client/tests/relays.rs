//! The fetch paths against local test beacons (not drand): a true answer, a slow relay (a
//! timeout, then the retry succeeds), a relay down (the next relay answers; with none, a
//! bounded failure), lying relays (each refused, counted, the next relay asked), and a round
//! not published yet (425, never accepted).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use fairdeal_drand_client::{BeaconClient, FetchError, FetchPolicy, Relay};
use fairdeal_harness::drand::{BeaconMode, Lie, TestBeacon, relays};

fn policy() -> FetchPolicy {
    FetchPolicy {
        // Generous: the relays answer in a few ms, but share the test's runtime with
        // everything else on a loaded machine; a slow relay sleeps well past this.
        request_timeout: Duration::from_secs(1),
        passes: 3,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(40),
    }
}

async fn beacons(n: usize) -> Vec<TestBeacon> {
    relays(n, 3, 3, 100).await
}

fn client(beacons: &[TestBeacon]) -> BeaconClient {
    let chain = Arc::new(beacons[0].chain().chain().unwrap());
    let relays = beacons
        .iter()
        .map(|b| Relay::parse(&b.url()).unwrap())
        .collect();
    BeaconClient::new(chain, relays, policy()).unwrap()
}

#[tokio::test]
async fn a_published_round_is_fetched_and_verified() {
    let b = beacons(1).await;
    let c = client(&b);
    let round = c.fetch(42).await.unwrap();
    let expected = b[0].chain().sign(42).unwrap();
    assert_eq!(round.round, 42);
    assert_eq!(round.signature, *expected.signature());
    assert_eq!(&round.randomness, expected.randomness().unwrap());
    assert_eq!(c.refused(), 0);
}

#[tokio::test]
async fn a_slow_relay_times_out_and_the_retry_succeeds() {
    let b = beacons(1).await;
    b[0].set_mode(BeaconMode::Slow {
        delay: Duration::from_secs(3),
        times: 1,
    });
    let c = client(&b);
    let round = c.fetch(7).await.unwrap();
    assert_eq!(round.round, 7);
    assert_eq!(b[0].round_requests(), 2, "one timed out, one answered");
    assert_eq!(c.refused(), 0);
}

#[tokio::test]
async fn a_relay_down_is_skipped_and_all_down_ends_in_bounded_time() {
    let b = beacons(2).await;
    b[0].set_mode(BeaconMode::Down);
    let c = client(&b);
    assert_eq!(c.fetch(9).await.unwrap().round, 9);
    b[1].set_mode(BeaconMode::Down);
    let started = Instant::now();
    match c.fetch(9).await {
        Err(FetchError::Unavailable {
            passes: 3,
            refused: 0,
            last,
            ..
        }) => assert!(last.contains("503"), "{last}"),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(c.refused(), 0, "a relay down is no lie");
}

#[tokio::test]
async fn lying_relays_are_refused_counted_and_the_next_relay_asked() {
    for lie in [Lie::WrongSignature, Lie::WrongRound, Lie::WrongRandomness] {
        let b = beacons(2).await;
        b[0].set_mode(BeaconMode::Lying(lie));
        let c = client(&b);
        let round = c.fetch(11).await.unwrap();
        assert_eq!(
            round.randomness,
            *b[1].chain().sign(11).unwrap().randomness().unwrap(),
            "{lie:?}"
        );
        assert_eq!(c.refused(), 1, "{lie:?}");
        // Only liars: every pass refuses, the fetch fails, and nothing unverified comes out.
        b[1].set_mode(BeaconMode::Lying(lie));
        match c.fetch(11).await {
            Err(FetchError::Unavailable { refused: 6, .. }) => {}
            other => panic!("{lie:?}: {other:?}"),
        }
        assert_eq!(c.refused(), 7);
    }
}

#[tokio::test]
async fn a_round_not_published_yet_is_never_accepted() {
    let b = beacons(1).await;
    let c = client(&b);
    match c.fetch(1_000_000).await {
        Err(FetchError::Unavailable { last, .. }) => assert!(last.contains("425"), "{last}"),
        other => panic!("{other:?}"),
    }
}
