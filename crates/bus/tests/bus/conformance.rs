//! The bus half of the conformance suite: each case is written once against [`Harness`] and
//! runs on PostgreSQL + JetStream and on SQLite + the in-process bus.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use fairdeal_eventstore::RecordedEvent;
use uuid::Uuid;

use crate::support::{
    EmbeddedHarness, Harness, JetStreamHarness, Recorder, append_round_robin,
    assert_exactly_once_in_order, log_ids, quick_retry, run, wait_applied, wait_for,
};

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod jetstream_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run(super::JetStreamHarness::create, super::$case).await;
                }
            )*
        }
        mod embedded_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run(super::EmbeddedHarness::create, super::$case).await;
                }
            )*
        }
    };
}

/// Consumers whose handler settles by position (on the embedded bus).
mod embedded_sqlite_by_position {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_instances_at_once_apply_each_event_once() {
        super::run(
            super::EmbeddedHarness::create,
            super::two_instances_at_once_apply_each_event_once,
        )
        .await;
    }
}

/// Two instances of one consumer whose handler settles by position run at once (on SQLite
/// its lease is always granted, as when a holder has not yet noticed it lost its lease):
/// both read the same batches, one moves the position on, the other's transaction finds it
/// moved and is rolled back. Every event is applied once, in order, and no id is recorded.
async fn two_instances_at_once_apply_each_event_once(h: Arc<dyn Harness>) {
    let store = h.store();
    let recorder = Recorder::by_position("projector");
    let first = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    let second = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    for round in 0..10 {
        append_round_robin(&*store, 3, 30, round % 3 + 1).await;
    }
    let expected = log_ids(&*store, 300).await;
    wait_applied(&*h, "projector", 300).await;
    first.stop().await;
    second.stop().await;
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);
    assert!(
        h.tables().processed("projector").await.is_empty(),
        "settled by position: no ids recorded"
    );
}

conformance!(
    delivers_every_event_in_order_exactly_once,
    redelivered_events_are_not_applied_again,
    relay_restart_mid_stream_loses_and_duplicates_nothing,
    consumer_restart_mid_stream_applies_each_event_once,
    poison_events_are_dead_lettered_after_bounded_retries,
    processed_ids_are_pruned_past_their_retention,
    dead_letters_are_re_driven_once_on_request,
    batch_handlers_get_whole_batches_and_failures_are_isolated,
);

/// A handler that takes whole batches gets many events per call, each applied exactly once
/// and in order. When a batch fails, it is applied again one event at a time: a transient
/// failure is then simply applied, a permanent one is dead-lettered alone (one attempt), and
/// every other event of its batch is applied once.
async fn batch_handlers_get_whole_batches_and_failures_are_isolated(h: Arc<dyn Harness>) {
    let store = h.store();
    append_round_robin(&*store, 4, 200, 5).await;
    let expected = log_ids(&*store, 200).await;
    let (flaky, broken) = (expected[50], expected[120]);
    let recorder = Recorder::batched("projector");
    recorder.fail_transiently(flaky, 1);
    recorder.fail_permanently(broken);

    let relay = h.start_relay();
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "projector", 199).await;
    let letters = wait_for(Duration::from_secs(30), || async {
        let letters = h.tables().dead_letters("projector").await;
        (!letters.is_empty()).then_some(letters)
    })
    .await
    .expect("a dead letter");
    consumer.stop().await;
    relay.stop().await;

    let healthy: Vec<Uuid> = expected
        .iter()
        .copied()
        .filter(|id| *id != broken)
        .collect();
    assert_exactly_once_in_order(&h.applied("projector").await, &healthy);
    assert!(
        recorder.batch_sizes().iter().any(|&n| n > 1),
        "batches were handed over whole: {:?}",
        recorder.batch_sizes()
    );
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].event_id, Some(broken));
    assert_eq!(
        letters[0].attempts, 1,
        "permanent: dead-lettered at its first attempt"
    );
    let processed = h.tables().processed("projector").await;
    assert_eq!(processed, expected.iter().copied().collect());
}

/// An operator fixes what made an event poison and re-drives its dead letter: the consumer
/// applies it once, stamps it done, and a second request is refused.
async fn dead_letters_are_re_driven_once_on_request(h: Arc<dyn Harness>) {
    let (store, tables) = (h.store(), h.tables());
    append_round_robin(&*store, 2, 10, 1).await;
    let expected = log_ids(&*store, 10).await;
    let broken = expected[4];
    let recorder = Recorder::new("redriven");
    recorder.fail_permanently(broken);
    let relay = h.start_relay();
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "redriven", 9).await;
    let letters = wait_for(Duration::from_secs(30), || async {
        let letters = tables.stored_dead_letters("redriven").await;
        (!letters.is_empty()).then_some(letters)
    })
    .await
    .expect("a dead letter");
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].letter.event_id, Some(broken));
    assert_eq!(letters[0].redrive, fairdeal_bus::Redrive::NotRequested);

    recorder.heal(broken);
    assert!(tables.request_redrive(letters[0].id).await);
    wait_applied(&*h, "redriven", 10).await;
    let done = wait_for(Duration::from_secs(30), || async {
        let letters = tables.stored_dead_letters("redriven").await;
        matches!(letters[0].redrive, fairdeal_bus::Redrive::Done(_)).then_some(letters)
    })
    .await
    .expect("the re-drive is stamped done");
    assert_eq!(done.len(), 1);
    assert!(!tables.request_redrive(letters[0].id).await, "done once");
    assert!(!tables.request_redrive(i64::MAX).await, "no such letter");
    consumer.stop().await;
    relay.stop().await;
    let applied = h.applied("redriven").await;
    assert_eq!(applied.len(), 10);
    assert_eq!(applied.iter().filter(|id| **id == broken).count(), 1);
}

/// Processed ids older than the retention are forgotten (the table stays bounded); recent
/// ones still turn a redelivery into a no-op.
async fn processed_ids_are_pruned_past_their_retention(h: Arc<dyn Harness>) {
    let (store, tables) = (h.store(), h.tables());
    append_round_robin(&*store, 2, 20, 1).await;
    let relay = h.start_relay();
    let recorder = Recorder::new("pruned");
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "pruned", 20).await;
    // The first 20 were recorded two hours ago; 5 more arrive now.
    h.age_processed("pruned", 2 * 3600).await;
    append_round_robin(&*store, 1, 5, 1).await;
    wait_applied(&*h, "pruned", 25).await;
    consumer.stop().await;

    let pruned = tables
        .prune_processed("pruned", Duration::from_secs(3600))
        .await;
    assert_eq!(pruned, 20);
    let expected = log_ids(&*store, 25).await;
    let kept = tables.processed("pruned").await;
    assert_eq!(kept, expected[20..].iter().copied().collect::<HashSet<_>>());
    // Pruning again finds nothing older.
    assert_eq!(
        tables
            .prune_processed("pruned", Duration::from_secs(3600))
            .await,
        0
    );
    relay.stop().await;
    assert_exactly_once_in_order(&h.applied("pruned").await, &expected);
}

/// Two independent durable consumers each apply every event once, in log order; a consumer
/// restarted later picks up exactly where it stopped.
async fn delivers_every_event_in_order_exactly_once(h: Arc<dyn Harness>) {
    let store = h.store();
    append_round_robin(&*store, 3, 60, 2).await;
    let expected = log_ids(&*store, 60).await;

    let relay = h.start_relay();
    let first = Recorder::new("projector");
    let second = Recorder::new("auditor");
    let c1 = h.start_consumer(Arc::clone(&first), quick_retry(3));
    let c2 = h.start_consumer(Arc::clone(&second), quick_retry(3));
    wait_applied(&*h, "projector", 60).await;
    wait_applied(&*h, "auditor", 60).await;
    c1.stop().await;
    c2.stop().await;
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);
    assert_exactly_once_in_order(&h.applied("auditor").await, &expected);
    let processed = h.tables().processed("projector").await;
    assert_eq!(processed, expected.iter().copied().collect());
    if let Some(published) = h.published().await {
        assert_eq!(published, 60, "one JetStream message per event");
    }

    // Later events reach the restarted consumer; nothing before them is applied again.
    append_round_robin(&*store, 2, 10, 3).await;
    let expected = log_ids(&*store, 70).await;
    let c1 = h.start_consumer(first, quick_retry(3));
    wait_applied(&*h, "projector", 70).await;
    c1.stop().await;
    relay.stop().await;
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);
    assert!(h.tables().dead_letters("projector").await.is_empty());
}

/// A transient failure is retried and then applied once; after every ack is lost (position
/// forgotten, and on JetStream the durable consumer deleted so the server redelivers from the
/// start), the redeliveries are acknowledged without calling the handler again.
async fn redelivered_events_are_not_applied_again(h: Arc<dyn Harness>) {
    let store = h.store();
    append_round_robin(&*store, 2, 30, 1).await;
    let expected = log_ids(&*store, 30).await;
    let recorder = Recorder::new("projector");
    recorder.fail_transiently(expected[5], 1);

    let relay = h.start_relay();
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "projector", 30).await;
    consumer.stop().await;
    assert_eq!(recorder.calls(expected[5]), 2, "failed once, then applied");
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);

    let calls_before: Vec<u32> = expected.iter().map(|id| recorder.calls(*id)).collect();
    h.rewind_consumer("projector").await;
    append_round_robin(&*store, 1, 5, 1).await;
    let expected = log_ids(&*store, 35).await;
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "projector", 35).await;
    consumer.stop().await;
    relay.stop().await;
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);
    let calls_after: Vec<u32> = expected[..30]
        .iter()
        .map(|id| recorder.calls(*id))
        .collect();
    assert_eq!(
        calls_before, calls_after,
        "redeliveries are acknowledged without calling the handler"
    );
}

/// The relay is killed mid-stream several times, once with its checkpoint lost as well (a
/// crash between publish and checkpoint): the stream still holds each event once, in order.
async fn relay_restart_mid_stream_loses_and_duplicates_nothing(h: Arc<dyn Harness>) {
    let store = h.store();
    append_round_robin(&*store, 4, 600, 5).await;
    let expected = log_ids(&*store, 600).await;
    let consumer = h.start_consumer(Recorder::new("projector"), quick_retry(3));

    for round in 0..4u32 {
        let relay = h.start_relay();
        // Let it publish a little, then crash it.
        tokio::time::sleep(Duration::from_millis(5 + 10 * u64::from(round))).await;
        relay.abort().await;
        if round == 2 {
            h.rewind_relay().await;
        }
    }
    let relay = h.start_relay();
    wait_applied(&*h, "projector", 600).await;
    relay.stop().await;
    consumer.stop().await;
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);
    if let Some(published) = h.published().await {
        assert_eq!(published, 600, "the stream holds each event exactly once");
    }
}

/// While events keep arriving, the consumer is stopped gracefully once and killed once
/// mid-batch; after restarts every event is applied exactly once, in order.
async fn consumer_restart_mid_stream_applies_each_event_once(h: Arc<dyn Harness>) {
    let store = h.store();
    let relay = h.start_relay();
    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { append_round_robin(&*store, 3, 400, 4).await })
    };
    let recorder = Recorder::new("projector");

    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "projector", 40).await;
    consumer.stop().await;

    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    let seen = h.applied("projector").await.len();
    wait_applied(&*h, "projector", seen + 40).await;
    consumer.abort().await;

    writer.await.unwrap();
    let expected = log_ids(&*store, 400).await;
    let consumer = h.start_consumer(recorder, quick_retry(3));
    wait_applied(&*h, "projector", 400).await;
    consumer.stop().await;
    relay.stop().await;
    assert_exactly_once_in_order(&h.applied("projector").await, &expected);
}

/// A permanent failure is dead-lettered at once, a persistent transient failure after the
/// last attempt; both are recorded with their reason and announced, and every other event is
/// still applied in order.
async fn poison_events_are_dead_lettered_after_bounded_retries(h: Arc<dyn Harness>) {
    let store = h.store();
    append_round_robin(&*store, 2, 20, 1).await;
    let expected = log_ids(&*store, 20).await;
    let (broken, flaky) = (expected[3], expected[7]);
    let recorder = Recorder::new("projector");
    recorder.fail_permanently(broken);
    recorder.fail_transiently(flaky, u32::MAX);

    let relay = h.start_relay();
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
    wait_applied(&*h, "projector", 18).await;
    let letters = wait_for(Duration::from_secs(30), || async {
        let letters = h.tables().dead_letters("projector").await;
        (letters.len() >= 2).then_some(letters)
    })
    .await
    .expect("two dead letters");
    consumer.stop().await;
    relay.stop().await;

    let healthy: Vec<Uuid> = expected
        .iter()
        .copied()
        .filter(|id| *id != broken && *id != flaky)
        .collect();
    assert_exactly_once_in_order(&h.applied("projector").await, &healthy);
    assert_eq!(letters.len(), 2);
    assert_eq!(letters[0].event_id, Some(broken));
    assert_eq!(letters[0].attempts, 1);
    assert!(letters[0].reason.contains("injected permanent failure"));
    assert_eq!(letters[1].event_id, Some(flaky));
    assert_eq!(letters[1].attempts, 3, "bounded by max_attempts");
    assert!(letters[1].reason.contains("injected transient failure"));
    assert_eq!(recorder.calls(broken), 1, "permanent: never retried");
    assert_eq!(recorder.calls(flaky), 3, "bounded by max_attempts");
    for letter in &letters {
        assert_eq!(
            letter.event_type.as_deref(),
            Some("fairdeal.test.v1.Happened")
        );
        let event = RecordedEvent::decode_envelope(0, &letter.payload).unwrap();
        assert_eq!(
            Some(event.event_id),
            letter.event_id,
            "payload is the envelope"
        );
    }
    assert_eq!(h.announced_dead_letters("projector").await, 2);
    let processed = h.tables().processed("projector").await;
    assert!(
        processed.contains(&broken) && processed.contains(&flaky),
        "settled"
    );
}
