//! Issue 3's proof: one small real service on the platform kit — gRPC server from the kit,
//! events appended to the store, relayed, consumed with exactly-once effects — run over
//! PostgreSQL + JetStream and over SQLite + the in-process bus, with one trace from the
//! client's call through the relay (on JetStream) to the consumer's handling of the event.
//!
//! The scenario ([`prove`]) is the same for both backends; only the `CommonConfig` differs,
//! exactly as between a production deployment and the embedded default.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod tally;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_e2e::trace_recorder;
use fairdeal_kit::config::{CommonConfig, SecretUrl};
use fairdeal_testkit::{TestDatabase, nats_url, subject_prefix};
use futures::FutureExt as _;
use opentelemetry::trace::TraceContextExt as _;
use tokio::sync::watch;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::tally::{Tally, TallyDb, TallyProjection};

/// Safety net for waits on the consumer: never reached when things work (the wait ends on
/// the projection's signal), it turns a hang into a failure.
const PATIENCE: Duration = Duration::from_secs(120);

fn config(database_url: &str, nats: Option<String>, prefix: &str) -> CommonConfig {
    let mut common = CommonConfig::with_defaults("tally").unwrap();
    common.listen_addr = "127.0.0.1:0".parse().unwrap();
    common.database_url = SecretUrl::new(database_url);
    common.nats_url = nats.map(SecretUrl::new);
    common.subject_prefix = prefix.to_owned();
    common.shutdown_grace = Duration::from_secs(30);
    common.validate().unwrap();
    common
}

/// What one life of the service leaves for the checks.
struct Life {
    /// The database.
    db: TallyDb,
    /// The trace of the first call.
    trace_id: opentelemetry::trace::TraceId,
    /// First-attempt handler failures injected during this life.
    injected_failures: u64,
}

/// One life of the service: start it, run `calls` (tally, amount) through gRPC, wait until
/// the projection applied them all, stop it gracefully. Events of amount `fail_once` fail
/// their first handling.
async fn run_service(common: &CommonConfig, calls: &[(&str, i64)], fail_once: Option<i64>) -> Life {
    let (applied_tx, mut applied) = watch::channel(0u64);
    let projection = Arc::new(TallyProjection::new(applied_tx));
    if let Some(amount) = fail_once {
        projection.fail_once(amount);
    }
    let Tally { app, db } = tally::start(common, Arc::clone(&projection)).await.unwrap();
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", app.local_addr()))
        .unwrap()
        .connect_lazy();
    let shutdown = app.shutdown();
    let server = tokio::spawn(app.run_until_stopped());

    // The first call runs under a client span: its trace must reach the consumer.
    let client_span = tracing::info_span!("e2e.client");
    let trace_id = client_span.context().span().span_context().trace_id();
    for (index, (tally_id, amount)) in calls.iter().enumerate() {
        let call = tally::record(channel.clone(), tally_id, *amount);
        let reply = if index == 0 {
            call.instrument(client_span.clone()).await
        } else {
            call.await
        };
        reply.unwrap();
    }
    drop(client_span);

    let expected = u64::try_from(calls.len()).unwrap();
    tokio::time::timeout(PATIENCE, applied.wait_for(|n| *n >= expected))
        .await
        .expect("the consumer applies every event")
        .unwrap();
    shutdown.trigger();
    server
        .await
        .unwrap()
        .expect("graceful shutdown within the grace period");
    Life {
        db,
        trace_id,
        injected_failures: projection.injected_failures(),
    }
}

/// The scenario, on whichever backends `common` names.
async fn prove(common: CommonConfig) {
    let recorder = trace_recorder();

    // Life 1: 12 events over 3 tallies.
    let calls: Vec<(&str, i64)> = (0..12)
        .map(|i| {
            (
                ["alpha", "beta", "gamma"][i % 3],
                i64::try_from(i).unwrap() + 1,
            )
        })
        .collect();
    let Life { db, trace_id, .. } = run_service(&common, &calls, None).await;
    assert_eq!(
        db.totals().await.unwrap(),
        vec![
            ("alpha".to_owned(), 1 + 4 + 7 + 10, 4),
            ("beta".to_owned(), 2 + 5 + 8 + 11, 4),
            ("gamma".to_owned(), 3 + 6 + 9 + 12, 4),
        ]
    );

    // One trace: client call -> server span -> append span -> consumer span.
    let spans = recorder.spans_of(trace_id).unwrap();
    let by_name = |name: &str| {
        spans
            .iter()
            .filter(|span| span.name == name)
            .collect::<Vec<_>>()
    };
    let client = by_name("e2e.client");
    let server = by_name(tally::RECORD_PATH.trim_start_matches('/'));
    let append = by_name("tally.append");
    let handle = by_name("bus.handle");
    assert_eq!(
        (client.len(), server.len(), append.len(), handle.len()),
        (1, 1, 1, 1),
        "one of each hop in the trace: {spans:#?}"
    );
    assert_eq!(server[0].parent_span_id, client[0].span_context.span_id());
    assert_eq!(append[0].parent_span_id, server[0].span_context.span_id());
    // The projection of the service's own events tails its store, NATS or not: the
    // consumer continues the append directly. On JetStream the relay publishes the event
    // too, in a span of its own under the append (other services' consumers follow it).
    assert_eq!(handle[0].parent_span_id, append[0].span_context.span_id());
    let publish = by_name("bus.relay.publish");
    if common.nats_url.is_some() {
        assert_eq!(publish.len(), 1, "one relay hop: {spans:#?}");
        assert_eq!(publish[0].parent_span_id, append[0].span_context.span_id());
    } else {
        assert!(publish.is_empty(), "no relay in process");
    }

    // Life 2, a restart: the consumer resumes where it stopped (nothing from life 1 is
    // applied again), and an event whose first handling fails is applied exactly once.
    let life = run_service(&common, &[("alpha", 100)], Some(100)).await;
    let totals = life.db.totals().await.unwrap();
    assert_eq!(totals[0], ("alpha".to_owned(), 22 + 100, 5));
    let processed = life.db.processed().await.unwrap();
    assert_eq!(processed.len(), 13);
    assert_eq!(processed.iter().collect::<HashSet<_>>().len(), 13);
    assert_eq!(life.db.dead_letters().await.unwrap(), 0);
    assert_eq!(life.injected_failures, 1, "the retry path was taken");
}

/// Runs `scenario` and cleans up whether or not it panicked, then re-raises its panic.
async fn with_cleanup(scenario: impl Future<Output = ()>, cleanup: impl Future<Output = ()>) {
    let outcome = std::panic::AssertUnwindSafe(scenario).catch_unwind().await;
    cleanup.await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_with_the_in_process_bus() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("tally.db").display()
    );
    prove(config(&url, None, &subject_prefix("sqlite"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_with_jetstream() {
    let database = TestDatabase::create().await.unwrap();
    let prefix = subject_prefix("pg");
    let common = config(database.url(), Some(nats_url()), &prefix);
    with_cleanup(prove(common), async move {
        let streams =
            fairdeal_bus::JetStreamConfig::new(format!("{prefix}.{}", tally::SERVICE_NAME))
                .unwrap();
        let js = async_nats::jetstream::new(async_nats::connect(nats_url()).await.unwrap());
        for name in [streams.stream_name(), streams.dead_letter_stream_name()] {
            // Absent when the scenario failed before creating them.
            let _ = js.delete_stream(name).await;
        }
        database.drop().await.unwrap();
    })
    .await;
}
