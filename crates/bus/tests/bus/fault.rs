//! The fault test: 10,000 events appended by concurrent writers while the relay and the
//! consumer are killed (their tasks aborted wherever they are: mid-publish, mid-transaction,
//! between commit and ack) and restarted, several times each. Afterwards every event must
//! have been applied exactly once and in log order, and the JetStream stream must hold each
//! event exactly once.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_eventstore::{EventStore, ExpectedVersion};

use crate::support::{
    EmbeddedHarness, Harness, JetStreamHarness, Recorder, assert_exactly_once_in_order, event,
    log_ids, quick_retry, run, stream, wait_applied,
};

const WRITERS: u32 = 4;
const EVENTS_PER_WRITER: u32 = 2_500;
const EVENTS_PER_APPEND: u32 = 10;
const TOTAL: u32 = WRITERS * EVENTS_PER_WRITER;
/// Crashes of each of the relay and the consumer, at least.
const MIN_KILLS: u32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_postgres_survives_killed_relay_and_consumer() {
    run(JetStreamHarness::create, survives_killed_relay_and_consumer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_sqlite_survives_killed_consumer() {
    run(EmbeddedHarness::create, survives_killed_relay_and_consumer).await;
}

/// One writer: its own streams, appends of `EVENTS_PER_APPEND`.
async fn write(store: Arc<dyn EventStore>, writer: u32) {
    let streams = [stream("table"), stream("seat"), stream("chat")];
    for (turn, start) in (0..EVENTS_PER_WRITER)
        .step_by(EVENTS_PER_APPEND as usize)
        .enumerate()
    {
        let batch = (start..start + EVENTS_PER_APPEND)
            .map(|n| event(writer * EVENTS_PER_WRITER + n))
            .collect();
        store
            .append(&streams[turn % streams.len()], ExpectedVersion::Any, batch)
            .await
            .unwrap();
    }
}

async fn survives_killed_relay_and_consumer(h: Arc<dyn Harness>) {
    let store = h.store();
    let recorder = Recorder::new("projector");
    let mut relay = h.start_relay();
    let mut consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(5));

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| tokio::spawn(write(Arc::clone(&store), w)))
        .collect();

    // Kill one of them every 100-300 ms, alternating, while the writers run (and at least
    // MIN_KILLS times each), restarting it at once.
    let mut kills = 0u32;
    let mut pause = 100u64;
    while kills < 2 * MIN_KILLS || writers.iter().any(|w| !w.is_finished()) {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        pause = 100 + (pause * 7 + 13) % 200;
        if kills.is_multiple_of(2) {
            relay.abort().await;
            relay = h.start_relay();
        } else {
            consumer.abort().await;
            consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(5));
        }
        kills += 1;
    }
    for writer in writers {
        writer.await.unwrap();
    }

    let expected = log_ids(&*store, TOTAL as usize).await;
    assert_eq!(expected.len(), TOTAL as usize);
    wait_applied(&*h, "projector", TOTAL as usize).await;
    consumer.stop().await;
    relay.stop().await;

    let applied = h.applied("projector").await;
    assert_exactly_once_in_order(&applied, &expected);
    let processed = h.tables().processed("projector").await;
    assert_eq!(processed.len(), TOTAL as usize);
    assert_eq!(processed, expected.iter().copied().collect::<HashSet<_>>());
    if let Some(published) = h.published().await {
        assert_eq!(
            published,
            u64::from(TOTAL),
            "each event exactly once in JetStream"
        );
    }
    assert!(h.tables().dead_letters("projector").await.is_empty());
    assert!(kills >= 2 * MIN_KILLS);
}
