//! JetStream specifics: what the relay puts on the wire, the stream settings, and the
//! relay's and consumer's refusal to guess when the stream holds something unexpected.

use std::sync::Arc;
use std::time::Duration;

use async_nats::header::NATS_MESSAGE_ID;
use async_nats::jetstream::stream::StorageType;
use fairdeal_bus::jetstream::{
    HEADER_EVENT_ID, HEADER_EVENT_TYPE, HEADER_GLOBAL_POSITION, HEADER_STREAM_ID,
    HEADER_STREAM_VERSION, HEADER_WITHHELD,
};
use fairdeal_bus::{
    BusError, JetStreamConsumer, JetStreamConsumerConfig, check_max_payload, ensure_streams,
};
use fairdeal_eventstore::{ExpectedVersion, NewEvent, RecordedEvent};
use tokio_util::sync::CancellationToken;

use crate::support::{
    Harness, JetStreamHarness, Recorder, append_round_robin, assert_exactly_once_in_order, event,
    log_events, log_ids, platform_relay_config, quick_retry, run_with, stream, wait_applied,
    wait_for,
};

async fn published_at_least(h: &JetStreamHarness, count: u64) {
    wait_for(Duration::from_secs(30), || async {
        (h.published().await.unwrap_or(0) >= count).then_some(())
    })
    .await
    .expect("relay publishes in time");
}

/// The global position up to which the relay (named `relay`) has checkpointed.
async fn relay_checkpoint(h: &JetStreamHarness) -> u64 {
    let position = h.db().relay_checkpoint("relay").await.unwrap();
    u64::try_from(position).unwrap()
}

/// Publishes `garbage` on the table's events subject, as no relay would: a foreign message.
async fn publish_garbage(h: &JetStreamHarness) {
    let subject = format!("{}.events.table", h.streams().prefix());
    let ack = h.js().publish(subject, "garbage".into()).await.unwrap();
    ack.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_messages_carry_id_trace_type_and_envelope() {
    run_with(JetStreamHarness::create, |h| async move {
        let store = h.store();
        let s = stream("table");
        let mut traced = event(1);
        traced
            .trace_context
            .insert("tracestate".to_owned(), "fd=1".to_owned());
        store
            .append(&s, ExpectedVersion::NoStream, vec![event(0), traced])
            .await
            .unwrap();
        let recorded = log_events(&*store, 2).await;
        assert_eq!(recorded.len(), 2);

        let relay = h.start_relay();
        published_at_least(&h, 2).await;
        relay.stop().await;

        let js_stream = h.js().get_stream(h.streams().stream_name()).await.unwrap();
        for (sequence, event) in (1u64..).zip(&recorded) {
            let message = js_stream.get_raw_message(sequence).await.unwrap();
            assert_eq!(
                message.subject.as_str(),
                format!("{}.events.table", h.streams().prefix())
            );
            let header = |name: &str| {
                message
                    .headers
                    .get(name)
                    .map(|v| v.as_str().to_owned())
                    .unwrap_or_default()
            };
            assert_eq!(header(NATS_MESSAGE_ID.as_ref()), event.event_id.to_string());
            assert_eq!(header(HEADER_EVENT_TYPE), "fairdeal.test.v1.Happened");
            assert_eq!(header(HEADER_STREAM_ID), s.as_str());
            assert_eq!(header(HEADER_STREAM_VERSION), sequence.to_string());
            assert_eq!(header(HEADER_GLOBAL_POSITION), event.position.to_string());
            assert_eq!(header(HEADER_EVENT_ID), event.event_id.to_string());
            // The relay's publish span: the appending trace, one hop further.
            let traceparent = header("traceparent");
            assert!(
                traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
                    && traceparent.ends_with("-01")
                    && !traceparent.contains("00f067aa0ba902b7"),
                "{traceparent}"
            );
            assert_eq!(
                header("tracestate"),
                event
                    .trace_context
                    .get("tracestate")
                    .cloned()
                    .unwrap_or_default()
            );
            let decoded = RecordedEvent::decode_envelope(event.position, &message.payload).unwrap();
            assert_eq!(&decoded, event, "payload is the verified envelope");
        }

        let info = h
            .js()
            .get_stream(h.streams().stream_name())
            .await
            .unwrap()
            .get_info()
            .await
            .unwrap();
        assert_eq!(info.config.storage, StorageType::File);
        assert!(info.config.deny_delete && info.config.deny_purge);
        assert_eq!(info.config.max_age, Duration::ZERO, "kept forever");
        assert_eq!(info.config.num_replicas, 1);
        assert_eq!(relay_checkpoint(&h).await, recorded[1].position);
    })
    .await;
}

/// An append committed while an older transaction of the cluster is still open is hidden from
/// the relay's gated read when its wake-up comes; once that transaction ends the event is
/// published within moments, without another append or the 5 s safety poll (seen as a quiet
/// service's event reaching JetStream seconds late under load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_hidden_by_an_older_transaction_is_relayed_as_soon_as_it_shows() {
    run_with(JetStreamHarness::create, |h| async move {
        let relay = h.start_relay_with(platform_relay_config());
        let store = h.store();
        let s = stream("quiet");
        store
            .append(&s, ExpectedVersion::NoStream, vec![event(0)])
            .await
            .unwrap();
        published_at_least(&h, 1).await;
        // An older transaction holding a transaction id, then the append it hides.
        let mut older = h.db().pool().begin().await.unwrap();
        sqlx::query("SELECT pg_current_xact_id()")
            .execute(&mut *older)
            .await
            .unwrap();
        let appended = std::time::Instant::now();
        store
            .append(&s, ExpectedVersion::Exact(1), vec![event(1)])
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            h.published().await,
            Some(1),
            "hidden while the older one runs"
        );
        older.commit().await.unwrap();
        published_at_least(&h, 2).await;
        let took = appended.elapsed();
        assert!(
            took < Duration::from_millis(1_500),
            "published {took:?} after the append (the safety poll is 5 s)"
        );
        relay.stop().await;
    })
    .await;
}

/// With its checkpoint lost and the deduplication window long past, a restarted relay still
/// publishes nothing twice: it resumes from the stream's tail, not from the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_resumes_from_the_stream_tail_beyond_the_dedup_window() {
    run_with(JetStreamHarness::create, |h| async move {
        let short_window = h
            .streams()
            .clone()
            .with_duplicate_window(Duration::from_secs(1))
            .unwrap();
        ensure_streams(h.js(), &short_window).await.unwrap();
        let store = h.store();
        append_round_robin(&*store, 2, 20, 2).await;
        let relay = h.start_relay();
        published_at_least(&h, 20).await;
        relay.stop().await;

        h.rewind_relay().await;
        // The window is the NATS server's clock, which a test cannot move: wait it out.
        tokio::time::sleep(Duration::from_millis(1_200)).await;
        append_round_robin(&*store, 1, 5, 1).await;
        let relay = h.start_relay();
        published_at_least(&h, 25).await;
        // Give a wrongly restarted relay the time to republish, then check it did not.
        tokio::time::sleep(Duration::from_millis(200)).await;
        relay.stop().await;
        assert_eq!(h.published().await, Some(25));
        let expected = log_ids(&*store, 25).await;
        assert_eq!(expected.len(), 25);
        let last = log_events(&*store, 25).await[24].position;
        assert_eq!(relay_checkpoint(&h).await, last);
    })
    .await;
}

/// A message the relay did not write sits at the stream's tail: the relay stops with an
/// error instead of guessing where to resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_refuses_a_stream_with_foreign_messages() {
    run_with(JetStreamHarness::create, |h| async move {
        publish_garbage(&h).await;
        let result = tokio::time::timeout(
            Duration::from_secs(20),
            h.relay().run(CancellationToken::new()),
        )
        .await
        .expect("relay gives up at once");
        assert!(
            matches!(result, Err(BusError::StreamInconsistent { .. })),
            "{result:?}"
        );
    })
    .await;
}

/// A nats-server of the test's own on a free port, with `max_payload` bytes at most per
/// message; killed when dropped.
struct OwnNatsServer {
    url: String,
    _process: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl OwnNatsServer {
    async fn start(max_payload: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.path().join("nats.conf");
        std::fs::write(
            &config,
            format!(
                "listen: \"127.0.0.1:{port}\"\nmax_payload: {max_payload}\njetstream {{ store_dir: \"{}\" }}\n",
                dir.path().join("js").display()
            ),
        )
        .unwrap();
        let process = tokio::process::Command::new("nats-server")
            .arg("-c")
            .arg(&config)
            .kill_on_drop(true)
            .spawn()
            .expect("nats-server on PATH (cargo xtask test installs it)");
        let url = format!("nats://127.0.0.1:{port}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let client = loop {
            match async_nats::connect(&url).await {
                Ok(client) => break client,
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!(error = %e, "nats-server not up yet");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("nats-server did not start: {e}"),
            }
        };
        assert_eq!(client.server_info().max_payload, max_payload);
        Self {
            url,
            _process: process,
            _dir: dir,
        }
    }
}

/// The relay's refusal check, kept for `Bus::start`: a server below the minimum is named.
#[test]
fn a_small_max_payload_is_named() {
    match check_max_payload(65536) {
        Err(BusError::Config(message)) => {
            assert!(message.contains("max_payload is 65536"), "{message}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

/// An event NATS refuses for good gives way: the relay publishes a small placeholder in its
/// place (same id, position, stream and type, the reason in `Fairdeal-Withheld`), later
/// events of every stream flow, the consumer dead-letters the placeholder with the event's
/// id, stream and type, and the relay runs on. `big` is a payload NATS refuses.
async fn withheld_event_gives_way(h: &JetStreamHarness, big: usize) {
    let store = h.store();
    let (table, ledger) = (stream("table"), stream("ledger"));
    store
        .append(&table, ExpectedVersion::NoStream, vec![event(0)])
        .await
        .unwrap();
    let large = NewEvent::new("fairdeal.test.v1.Large", vec![7u8; big]);
    store
        .append(&ledger, ExpectedVersion::NoStream, vec![large])
        .await
        .unwrap();
    store
        .append(&table, ExpectedVersion::Exact(1), vec![event(2)])
        .await
        .unwrap();
    let recorded = log_events(&*store, 3).await;

    let relay = h.start_relay();
    let recorder = Recorder::new("projector");
    let consumer = h.start_consumer(Arc::clone(&recorder), quick_retry(2));
    let applied = wait_applied(h, "projector", 2).await;
    assert_eq!(applied, [recorded[0].event_id, recorded[2].event_id]);
    let letters = wait_for(Duration::from_secs(30), || async {
        let letters = h.tables().dead_letters("projector").await;
        (!letters.is_empty()).then_some(letters)
    })
    .await
    .expect("the placeholder is dead-lettered");
    assert_eq!(letters.len(), 1);
    let letter = &letters[0];
    assert_eq!(
        letter.position, 2,
        "the placeholder holds the event's sequence"
    );
    assert_eq!(letter.event_id, Some(recorded[1].event_id));
    assert_eq!(letter.stream_id.as_deref(), Some(ledger.as_str()));
    assert_eq!(letter.event_type.as_deref(), Some("fairdeal.test.v1.Large"));
    assert_eq!(letter.attempts, 0);
    assert!(
        letter.reason.starts_with("withheld by the relay"),
        "{}",
        letter.reason
    );
    assert_eq!(recorder.calls(recorded[1].event_id), 0);

    let js_stream = h.js().get_stream(h.streams().stream_name()).await.unwrap();
    let placeholder = js_stream.get_raw_message(2).await.unwrap();
    let header = |name: &str| {
        placeholder
            .headers
            .get(name)
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(
        header(NATS_MESSAGE_ID.as_ref()),
        recorded[1].event_id.to_string()
    );
    assert_eq!(
        header(HEADER_GLOBAL_POSITION),
        recorded[1].position.to_string()
    );
    assert_eq!(header(HEADER_STREAM_ID), ledger.as_str());
    assert_eq!(header(HEADER_STREAM_VERSION), "1");
    assert!(!header(HEADER_WITHHELD).is_empty());
    assert!(placeholder.payload.len() < 1024, "a small placeholder");

    // The relay runs on.
    store
        .append(&table, ExpectedVersion::Exact(2), vec![event(3)])
        .await
        .unwrap();
    let later = log_events(&*store, 4).await;
    let applied = wait_applied(h, "projector", 3).await;
    assert_eq!(applied[2], later[3].event_id);
    relay.stop().await;
    consumer.stop().await;
    assert_eq!(relay_checkpoint(h).await, later[3].position);
}

/// A server configured with a `max_payload` below an event's size (possible only after the
/// service started: `Bus::start` refuses such a server): the client refuses the publish.
/// Runs a nats-server of its own (64 KiB `max_payload`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_above_the_server_max_payload_is_withheld() {
    let server = OwnNatsServer::start(65536).await;
    run_with(
        || JetStreamHarness::create_on(&server.url),
        |h| async move { withheld_event_gives_way(&h, 100_000).await },
    )
    .await;
}

/// A stream whose maximum message size is below an event's: JetStream refuses the publish
/// (error 10054). Also counts the withheld event in `fairdeal.bus.relay.withheld`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_above_the_stream_max_message_size_is_withheld() {
    let metrics = crate::support::init_metrics();
    run_with(JetStreamHarness::create, |h| async move {
        let mut config = h
            .js()
            .get_stream(h.streams().stream_name())
            .await
            .unwrap()
            .get_info()
            .await
            .unwrap()
            .config;
        config.max_message_size = 8 * 1024;
        h.js().update_stream(config).await.unwrap();
        let before = metrics.sum("fairdeal.bus.relay.withheld");
        withheld_event_gives_way(&h, 20_000).await;
        assert!(
            metrics.sum("fairdeal.bus.relay.withheld") > before,
            "the withheld event is counted"
        );
    })
    .await;
}

/// A message that is not a valid envelope is dead-lettered by the consumer (attempts 0,
/// reason recorded) and the consumer carries on with the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_messages_are_dead_lettered() {
    run_with(JetStreamHarness::create, |h| async move {
        publish_garbage(&h).await;
        let recorder = Recorder::new("projector");
        let mut config = JetStreamConsumerConfig::new("projector");
        config.retry = quick_retry(2);
        let consumer = JetStreamConsumer::new(
            h.js().clone(),
            h.streams().clone(),
            h.db().clone(),
            Arc::clone(&recorder),
            config,
        )
        .unwrap();
        consumer.ensure().await.unwrap();
        consumer.ensure().await.unwrap(); // idempotent
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(consumer.run(shutdown.clone()));
        let letters = wait_for(Duration::from_secs(30), || async {
            let letters = h.tables().dead_letters("projector").await;
            (!letters.is_empty()).then_some(letters)
        })
        .await
        .expect("dead letter recorded");
        shutdown.cancel();
        task.await.unwrap().unwrap();
        assert_eq!(letters.len(), 1);
        assert_eq!(letters[0].position, 1);
        assert_eq!(letters[0].attempts, 0);
        assert_eq!(letters[0].event_id, None);
        assert!(
            letters[0].reason.starts_with("undecodable message"),
            "{}",
            letters[0].reason
        );
        assert_eq!(letters[0].payload, b"garbage");
        assert_eq!(h.db().consumer_position("projector").await.unwrap(), 1);
        assert_eq!(h.announced_dead_letters("projector").await, 1);
        assert!(h.applied("projector").await.is_empty());
    })
    .await;
}

/// One lease per name: a second session is refused while the first holds it, and gets it
/// once the first is dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_has_one_holder_at_a_time() {
    run_with(JetStreamHarness::create, |h| async move {
        let db = h.db();
        let mut first = db.try_lease("relay").await.unwrap().expect("free lease");
        assert!(db.try_lease("relay").await.unwrap().is_none());
        // Another name is another lease.
        let other = db.try_lease("other").await.unwrap();
        assert!(other.is_some());
        db.keep_lease(&mut first).await.unwrap();
        drop(first);
        let again = wait_for(Duration::from_secs(10), || async {
            db.try_lease("relay").await.unwrap()
        })
        .await;
        assert!(again.is_some(), "the lease is free once its holder is gone");
    })
    .await;
}

/// Two relays on one outbox: the second stands by while the first relays, takes over when
/// it stops, and every event is in the stream once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_relay_takes_over_when_the_holder_stops() {
    run_with(JetStreamHarness::create, |h| async move {
        let store = h.store();
        let first = h.start_relay();
        append_round_robin(&*store, 2, 10, 1).await;
        published_at_least(&h, 10).await;
        let second = h.start_relay();
        // While the first holds the lease the second cannot take it.
        assert!(h.db().try_lease("relay").await.unwrap().is_none());
        first.stop().await;
        append_round_robin(&*store, 2, 10, 1).await;
        published_at_least(&h, 20).await;
        second.stop().await;
        assert_eq!(h.published().await, Some(20));
        let last = log_events(&*store, 20).await[19].position;
        assert_eq!(relay_checkpoint(&h).await, last);
    })
    .await;
}

/// A durable consumer left by a version that acknowledged every message (AckPolicy::Explicit)
/// is made again to acknowledge per batch, delivering from the message after the consumer's
/// position: nothing settled is handed over again, nothing new is missed, and one ack per
/// batch moves the server's ack floor to the last message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_acking_each_message_is_remade_from_its_position() {
    use async_nats::jetstream::consumer;

    run_with(
        JetStreamHarness::create,
        |h: Arc<JetStreamHarness>| async move {
            let store = h.store();
            append_round_robin(&*store, 3, 60, 2).await;
            let relay = h.start_relay();
            published_at_least(&h, 60).await;
            let recorder = Recorder::new("projector");
            let running = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
            wait_applied(&*h, "projector", 60).await;
            running.stop().await;

            // The durable consumer as the earlier version made it.
            let stream = h.js().get_stream(h.streams().stream_name()).await.unwrap();
            stream.delete_consumer("projector").await.unwrap();
            stream
                .create_consumer(consumer::pull::Config {
                    durable_name: Some("projector".to_owned()),
                    deliver_policy: consumer::DeliverPolicy::All,
                    ack_policy: consumer::AckPolicy::Explicit,
                    max_deliver: -1,
                    ..Default::default()
                })
                .await
                .unwrap();

            append_round_robin(&*store, 2, 20, 3).await;
            published_at_least(&h, 80).await;
            let expected = log_ids(&*store, 80).await;
            let running = h.start_consumer(Arc::clone(&recorder), quick_retry(3));
            wait_applied(&*h, "projector", 80).await;
            let info = wait_for(Duration::from_secs(30), || async {
                let info = stream.consumer_info("projector").await.unwrap();
                (info.ack_floor.stream_sequence == 80).then_some(info)
            })
            .await
            .expect("the ack floor reaches the last message");
            running.stop().await;
            relay.stop().await;

            assert_eq!(info.config.ack_policy, consumer::AckPolicy::All);
            assert_eq!(
                info.config.deliver_policy,
                consumer::DeliverPolicy::ByStartSequence { start_sequence: 61 }
            );
            assert_eq!(info.num_ack_pending, 0);
            assert_exactly_once_in_order(&h.applied("projector").await, &expected);
            for id in &expected {
                assert_eq!(recorder.calls(*id), 1, "each event handed over once");
            }
        },
    )
    .await;
}

/// Two in-store consumers of one name on PostgreSQL (two replicas of a service projecting its
/// own events): one holds the consumer's lease and applies, the other stands by and takes
/// over from the position once the holder stops. Every event is applied once, in log order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_store_consumers_of_one_name_take_turns_on_postgres() {
    use fairdeal_bus::{EmbeddedBus, EmbeddedConsumerConfig};

    run_with(JetStreamHarness::create, |h| async move {
        let bus = EmbeddedBus::new(h.store(), h.db().clone());
        let store = bus.store();
        let recorder = Recorder::new("own");
        let start = || {
            let mut config = EmbeddedConsumerConfig::new("own");
            config.batch_size = 8;
            config.poll_interval = Duration::from_millis(100);
            config.standby_interval = Duration::from_millis(100);
            let consumer = bus.consumer(Arc::clone(&recorder), config).unwrap();
            crate::support::Running::spawn(|shutdown| consumer.run(shutdown))
        };
        let first = start();
        append_round_robin(&*store, 3, 30, 1).await;
        wait_applied(&*h, "own", 30).await;
        let second = start();
        // The first holds the lease; the second stands by.
        assert!(h.db().try_lease("consumer.own").await.unwrap().is_none());
        append_round_robin(&*store, 3, 30, 2).await;
        wait_applied(&*h, "own", 60).await;
        first.stop().await;
        append_round_robin(&*store, 3, 30, 3).await;
        wait_applied(&*h, "own", 90).await;
        assert!(h.db().try_lease("consumer.own").await.unwrap().is_none());
        second.stop().await;
        assert_exactly_once_in_order(&h.applied("own").await, &log_ids(&*store, 90).await);
        assert!(h.tables().dead_letters("own").await.is_empty());
    })
    .await;
}

/// Replicas starting together all create the same streams at once: every one of them
/// starts (a loser of the race that NATS refuses for a moment tries again and finds the
/// stream), and the stream is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_creating_the_same_streams_at_once_all_start() {
    run_with(JetStreamHarness::create, |h| async move {
        let fresh =
            fairdeal_bus::JetStreamConfig::new(fairdeal_testkit::subject_prefix("race")).unwrap();
        let starts = (0..8).map(|_| ensure_streams(h.js(), &fresh));
        for started in futures::future::join_all(starts).await {
            started.unwrap();
        }
        let info = h
            .js()
            .get_stream(fresh.stream_name())
            .await
            .unwrap()
            .info()
            .await
            .unwrap()
            .clone();
        assert_eq!(info.config.subjects, vec![fresh.events_filter()]);
        for name in [fresh.stream_name(), fresh.dead_letter_stream_name()] {
            h.js().delete_stream(name).await.unwrap();
        }
    })
    .await;
}
