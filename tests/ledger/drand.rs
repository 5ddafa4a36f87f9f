//! Issue 35's evidence that a drand table audits offline: the commitment service runs with
//! drand on, its relay a local test beacon (a test chain with its own key over drand's HTTP
//! API: **not drand**). A table created without a delayed source of its own gets a round of
//! that chain at commit; the service fetches, verifies and binds it; the game is played to
//! its end, exported from the ledger and `fairdeal audit` (the `fairdeal_cli` library the
//! binary runs) passes it against the chain given by its info JSON, as `--drand-chain` reads
//! it. Against quicknet (the default) the same export fails: the key is the auditor's, never
//! the log's. A changed round, signature or randomness in the export fails the named check.

use std::sync::Arc;
use std::time::Duration;

use fairdeal_cli::audit::{audit, audit_with_chain};
use fairdeal_commitment::drand::Drand;
use fairdeal_drand_client::{BeaconClient, FetchPolicy, Relay};
use fairdeal_e2e::platform::{Backend, GameStack};
use fairdeal_harness::drand::{TestBeacon, test_chain};
use fairdeal_ledger::{MIGRATIONS, SCHEMA};
use fairdeal_proto::fairdeal::commitment::v1 as cpb;
use fairdeal_tlog::NoteVerifier;

use crate::{client, export_when_ingested, signer, start_ledger, start_rating, tampered, text};

/// The commitment service's drand over the test beacon: a round one period after the first
/// round at or after the commit (the beacon's chain has 1 s rounds), fallback 3 rounds later.
fn drand(beacon: &TestBeacon) -> Drand {
    let chain = Arc::new(beacon.chain().chain().unwrap());
    let policy = FetchPolicy {
        request_timeout: Duration::from_secs(2),
        passes: 3,
        backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
    };
    Drand {
        client: BeaconClient::new(chain, vec![Relay::parse(&beacon.url()).unwrap()], policy)
            .unwrap(),
        margin_rounds: 1,
        fallback_rounds: 3,
        stall_after: Duration::from_secs(30),
        deal_wait: Duration::from_secs(20),
    }
}

/// The first event line of `event_type` (1-based) and its message.
fn first<M: prost::Message + Default>(lines: &[String], event_type: &str) -> (usize, M) {
    use fairdeal_tlog::export::{Line, decode_bytes};
    lines
        .iter()
        .enumerate()
        .find_map(|(i, l)| match serde_json::from_str::<Line>(l).unwrap() {
            Line::Event(e) if e.event_type == event_type => {
                let bytes = decode_bytes(e.envelope.as_deref()?).unwrap();
                let envelope =
                    <fairdeal_event::Envelope as prost::Message>::decode(bytes.as_slice()).unwrap();
                Some((i + 1, M::decode(envelope.payload.as_slice()).unwrap()))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {event_type} disclosed in full"))
}

async fn a_drand_table_exports_and_audits(backend: Backend) {
    let beacon = TestBeacon::start(test_chain(35, 1, 50)).await;
    let mut stack = GameStack::start_with_drand(backend, drand(&beacon))
        .await
        .unwrap();
    let storage = stack.storage(SCHEMA, &[&MIGRATIONS]).await.unwrap();
    let port = start_ledger(&mut stack, storage).await;
    start_rating(&mut stack).await;
    let mut ledger = client(port);
    let key: NoteVerifier = signer().verifier();

    let (_players, view) = stack.play_bot_table().await.unwrap();
    let lines = export_when_ingested(&mut ledger, &view.table_id, 4).await;

    // The round fixed at commit is the one bound, and it is the test chain's.
    let published = "fairdeal.commitment.v1.TableCommitmentPublished";
    let bound = "fairdeal.commitment.v1.DelayedValueBound";
    let (published_line, commitment) = first::<cpb::TableCommitmentPublished>(&lines, published);
    let (bound_line, binding) = first::<cpb::DelayedValueBound>(&lines, bound);
    assert_ne!(commitment.drand_round, 0, "{commitment:?}");
    assert_eq!(binding.drand_round, commitment.drand_round, "{binding:?}");
    assert_eq!(
        commitment.drand_chain_hash,
        hex::encode(beacon.chain().info().chain_hash())
    );

    // The auditor's chain: the beacon's info JSON, read as `--drand-chain FILE` reads it.
    let chain = fairdeal_cli::drand_chain::parse(&beacon.info_json()).unwrap();
    let report = audit_with_chain(&text(&lines), &key, None, &chain);
    assert!(report.failures.is_empty(), "{:#?}", report.failures);
    for check in [
        "commitment",
        "client_seed",
        "deal",
        "replay",
        "rating",
        "drand_chain",
        "drand_round",
        "drand_signature",
        "drand_randomness",
    ] {
        assert!(report.checks[check].checked > 0, "{check} was not checked");
    }
    assert_eq!(report.checks["drand_fallback"].checked, 0, "no stall");

    // Quicknet, the default: the test chain's round is not quicknet's.
    let report = audit(&text(&lines), &key, None);
    let failed = |report: &fairdeal_cli::audit::Report, check: &str, line: usize| {
        report
            .failures
            .iter()
            .any(|f| f.check == check && f.line == line)
    };
    assert!(
        failed(&report, "drand_chain", published_line),
        "{report:#?}"
    );
    assert!(
        failed(&report, "drand_signature", bound_line),
        "{report:#?}"
    );

    // A changed round, signature or randomness in the export: the named check fails there.
    let round = binding.drand_round;
    let (changed, at) =
        tampered::<cpb::DelayedValueBound>(&lines, bound, |m| m.drand_round = round + 1);
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(failed(&report, "drand_round", at), "{:#?}", report.failures);
    assert!(
        failed(&report, "drand_signature", at),
        "{:#?}",
        report.failures
    );
    let other = beacon.chain().sign(round + 1).unwrap().signature().to_hex();
    let (changed, at) = tampered::<cpb::DelayedValueBound>(&lines, bound, |m| {
        m.drand_signature = other.clone();
    });
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_signature", at),
        "{:#?}",
        report.failures
    );
    let (changed, at) = tampered::<cpb::DelayedValueBound>(&lines, bound, |m| {
        m.drand_randomness = "ab".repeat(32);
    });
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_randomness", at),
        "{:#?}",
        report.failures
    );
    let (changed, at) = tampered::<cpb::TableCommitmentPublished>(&lines, published, |m| {
        m.drand_round -= 1;
    });
    let report = audit_with_chain(&text(&changed), &key, None, &chain);
    assert!(
        failed(&report, "drand_round", bound_line),
        "{:#?}",
        report.failures
    );
    assert_eq!(at, published_line);
    stack.stop().await.unwrap();
}

#[tokio::test]
async fn a_drand_table_exports_and_audits_embedded() {
    a_drand_table_exports_and_audits(Backend::Embedded).await;
}

#[tokio::test]
async fn a_drand_table_exports_and_audits_postgres_nats() {
    a_drand_table_exports_and_audits(Backend::PostgresNats).await;
}
