//! The aggregate runner against a real store: commands to one stream queue in a process,
//! a write from another process is caught up and the command retried, a refusal on a stale
//! cache is re-checked, and contention past the attempt limit is reported with the version.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use fairdeal_eventstore::{
    Appended, EventStore, ExpectedVersion, Fence, SqliteEventStore, StoreError,
};
use fairdeal_platform::{Aggregate, Decision, RunError, RunnerSettings, Streams};

/// A counter that may not go below zero.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Counter {
    value: i64,
}

const ADDED: &str = "test.v1.Added";

/// A stored delta that is not one.
#[derive(Debug, thiserror::Error)]
#[error("payload is not 8 bytes")]
struct NotADelta;

/// A delta that takes the counter below zero.
#[derive(Debug, thiserror::Error)]
#[error("counter below zero ({0})")]
struct BelowZero(i64);

impl Aggregate for Counter {
    const CATEGORY: &'static str = "counter";
    type Id = String;
    type Event = i64;
    type DecodeError = NotADelta;
    type FoldError = BelowZero;

    fn encode(id: &String, delta: &i64) -> NewEvent {
        NewEvent::new(ADDED, delta.to_be_bytes().to_vec()).with_correlation_id(id.clone())
    }

    fn decode(event: &RecordedEvent) -> Result<i64, NotADelta> {
        let bytes: [u8; 8] = event.payload.as_slice().try_into().map_err(|_| NotADelta)?;
        Ok(i64::from_be_bytes(bytes))
    }

    fn apply(state: Option<Self>, delta: &i64) -> Result<Self, BelowZero> {
        let value = state.map_or(0, |s| s.value) + delta;
        if value < 0 {
            return Err(BelowZero(value));
        }
        Ok(Counter { value })
    }
}

/// Why the counter refused a command.
#[derive(Debug, PartialEq, Eq)]
struct WouldGoNegative;

/// Adds `delta` unless the counter would go below zero.
async fn add(
    streams: &Streams<Counter>,
    id: &str,
    delta: i64,
) -> Result<(u64, i64), RunError<WouldGoNegative>> {
    let done = streams
        .execute(&id.to_owned(), |snapshot| {
            let value = snapshot.state.as_ref().map_or(0, |s| s.value);
            if value + delta < 0 {
                return Err(WouldGoNegative);
            }
            Ok(Decision::new(vec![delta], value + delta))
        })
        .await?;
    Ok((done.after.version, done.reply))
}

async fn store() -> (tempfile::TempDir, Arc<dyn EventStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteEventStore::open(dir.path().join("events.db"))
        .await
        .unwrap();
    (dir, Arc::new(store))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_to_one_stream_queue_instead_of_conflicting() {
    let (_dir, store) = store().await;
    let streams = Streams::<Counter>::new(store);
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let streams = streams.clone();
            tokio::spawn(async move { add(&streams, "a", 1).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let snapshot = streams.load(&"a".to_owned()).await.unwrap();
    assert_eq!(snapshot.version, 50);
    assert_eq!(snapshot.state, Some(Counter { value: 50 }));
}

#[tokio::test]
async fn a_write_from_another_process_is_caught_up_and_the_command_retried() {
    let (_dir, store) = store().await;
    // Two runners over one store: two replicas of a service.
    let here = Streams::<Counter>::new(Arc::clone(&store));
    let there = Streams::<Counter>::new(store);
    assert_eq!(add(&here, "b", 1).await.unwrap(), (1, 1));
    assert_eq!(add(&there, "b", 10).await.unwrap(), (2, 11));
    // `here` still caches version 1: its append conflicts, it catches up, decides again.
    assert_eq!(add(&here, "b", 100).await.unwrap(), (3, 111));
}

#[tokio::test]
async fn a_refusal_on_a_stale_cache_is_checked_against_the_store() {
    let (_dir, store) = store().await;
    let here = Streams::<Counter>::new(Arc::clone(&store));
    let there = Streams::<Counter>::new(store);
    assert_eq!(add(&here, "c", 1).await.unwrap(), (1, 1));
    assert_eq!(add(&there, "c", 10).await.unwrap(), (2, 11));
    // On its cache (1) `here` would refuse -5; the store says 11: accepted.
    assert_eq!(add(&here, "c", -5).await.unwrap(), (3, 6));
    // A real refusal stays one, and changes nothing.
    assert!(matches!(
        add(&here, "c", -100).await,
        Err(RunError::Rejected(WouldGoNegative))
    ));
    assert_eq!(here.load(&"c".to_owned()).await.unwrap().version, 3);
}

/// The store a runner sees in these tests: counts its reads (stream reads and version
/// queries) and, when `racing`, lets another writer always get in first (before each append
/// of the runner, an event of its own to the same stream).
#[derive(Debug)]
struct Probe {
    inner: Arc<dyn EventStore>,
    racing: bool,
    reads: std::sync::atomic::AtomicUsize,
    /// The fences appended behind.
    fences: std::sync::Mutex<Vec<Fence>>,
}

impl Probe {
    fn new(inner: Arc<dyn EventStore>, racing: bool) -> Self {
        Self {
            inner,
            racing,
            reads: std::sync::atomic::AtomicUsize::new(0),
            fences: std::sync::Mutex::new(Vec::new()),
        }
    }
    fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn read(&self) {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait]
impl EventStore for Probe {
    async fn append(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        if self.racing {
            self.inner
                .append(
                    stream_id,
                    ExpectedVersion::Any,
                    vec![NewEvent::new(ADDED, 1i64.to_be_bytes().to_vec())],
                )
                .await?;
        }
        self.inner.append(stream_id, expected, events).await
    }
    /// Records the fence, then appends (the embedded store keeps no leases).
    async fn append_fenced(
        &self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        fence: &Fence,
    ) -> Result<Appended, StoreError> {
        self.fences.lock().unwrap().push(fence.clone());
        self.append(stream_id, expected, events).await
    }
    async fn read_stream(
        &self,
        stream_id: &StreamId,
        from_version: u64,
        limit: usize,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        self.read();
        self.inner.read_stream(stream_id, from_version, limit).await
    }
    async fn read_all(&self, from: u64, limit: usize) -> Result<Vec<RecordedEvent>, StoreError> {
        self.inner.read_all(from, limit).await
    }
    async fn head_position(&self) -> Result<u64, StoreError> {
        self.inner.head_position().await
    }
    async fn committed_position(&self) -> Result<u64, StoreError> {
        self.inner.committed_position().await
    }
    async fn stream_version(&self, stream_id: &StreamId) -> Result<u64, StoreError> {
        self.read();
        self.inner.stream_version(stream_id).await
    }
}

#[tokio::test]
async fn contention_past_the_attempt_limit_is_reported_with_the_current_version() {
    let (_dir, store) = store().await;
    let racing: Arc<dyn EventStore> = Arc::new(Probe::new(Arc::clone(&store), true));
    let settings = RunnerSettings {
        max_attempts: 3,
        ..RunnerSettings::default()
    };
    let streams = Streams::<Counter>::with_settings(racing, settings);
    match add(&streams, "d", 5).await {
        Err(RunError::Contended { stream, version }) => {
            assert_eq!(stream.as_str(), "counter-d");
            // Three tries, each beaten by one racing event.
            assert_eq!(version, 3);
            assert_eq!(store.stream_version(&stream).await.unwrap(), 3);
        }
        other => panic!("expected contention, got {other:?}"),
    }
}

#[tokio::test]
async fn owners_past_the_cache_capacity_are_dropped_and_reloaded() {
    let (_dir, store) = store().await;
    let settings = RunnerSettings {
        cache_capacity: 2,
        ..RunnerSettings::default()
    };
    let streams = Streams::<Counter>::with_settings(store, settings);
    for round in 1..=3 {
        for id in ["e", "f", "g", "h"] {
            assert_eq!(
                add(&streams, id, 2).await.unwrap(),
                (round, 2 * round as i64)
            );
        }
    }
    assert_eq!(
        streams.events(&"g".to_owned()).await.unwrap(),
        vec![2, 2, 2]
    );
}

#[tokio::test]
async fn a_notified_stream_is_read_only_when_a_later_version_was_notified() {
    let (_dir, store) = store().await;
    let signal = fairdeal_bus::AppendSignal::new();
    let counting = Arc::new(Probe::new(
        Arc::new(fairdeal_bus::NotifyingEventStore::new(
            Arc::clone(&store),
            signal.clone(),
        )),
        false,
    ));
    let here = Streams::<Counter>::notified(counting.clone(), signal.clone());
    let id = "n".to_owned();
    assert_eq!(add(&here, "n", 1).await.unwrap(), (1, 1));
    let first = counting.reads();
    assert_eq!(first, 1, "the first command reads the stream once");
    // Its own appends and loads, and a no-op decision, read nothing more.
    assert_eq!(add(&here, "n", 2).await.unwrap(), (2, 3));
    assert_eq!(here.load(&id).await.unwrap().version, 2);
    let noop = here
        .execute(&id, |s| {
            Ok::<_, WouldGoNegative>(Decision::<i64, u64>::nothing(s.version))
        })
        .await
        .unwrap();
    assert_eq!(noop.reply, 2);
    assert_eq!(counting.reads(), first);
    // A refusal is still checked against the store.
    assert!(add(&here, "n", -100).await.is_err());
    assert_eq!(counting.reads(), first + 1);

    // Another process appends (not through this process's store) and its commit is
    // notified: the next load reads it.
    let stream = StreamId::of("counter", "n").unwrap();
    store
        .append(
            &stream,
            ExpectedVersion::Exact(2),
            vec![NewEvent::new(ADDED, 10i64.to_be_bytes().to_vec())],
        )
        .await
        .unwrap();
    signal.notify_stream(stream.as_str(), 3);
    let loaded = here.load(&id).await.unwrap();
    assert_eq!(
        (loaded.version, loaded.state),
        (3, Some(Counter { value: 13 }))
    );
    assert_eq!(counting.reads(), first + 2);
    // A command after a notified write decides on the read state: no conflict, no retry.
    store
        .append(
            &stream,
            ExpectedVersion::Exact(3),
            vec![NewEvent::new(ADDED, 100i64.to_be_bytes().to_vec())],
        )
        .await
        .unwrap();
    signal.notify_stream(stream.as_str(), 4);
    assert_eq!(add(&here, "n", 1).await.unwrap(), (5, 114));
    assert_eq!(counting.reads(), first + 3);
    // "Anything may have changed" (a listener reconnected): read once.
    signal.notify_all_streams();
    assert_eq!(here.load(&id).await.unwrap().version, 5);
    assert_eq!(here.load(&id).await.unwrap().version, 5);
    assert_eq!(counting.reads(), first + 4);
}

/// A fenced runner: an instance whose partition this process does not hold is refused
/// before anything is read or written; one it holds is appended behind its lease's fence.
#[tokio::test]
async fn a_fenced_runner_decides_only_for_what_it_holds_and_appends_behind_the_lease() {
    let (_dir, store) = store().await;
    let probe = Arc::new(Probe::new(Arc::clone(&store), false));
    let fencing: fairdeal_platform::Fencing<String> = Arc::new(|id: &String| match id.as_str() {
        "mine" => Ok(Fence {
            partition: 3,
            owner: "replica-a".into(),
            epoch: 7,
        }),
        _ => Err(5),
    });
    let streams =
        Streams::<Counter>::new(Arc::clone(&probe) as Arc<dyn EventStore>).fenced(fencing);

    match add(&streams, "theirs", 1).await {
        Err(RunError::Store(StoreError::Fenced {
            stream_id,
            partition,
        })) => {
            assert_eq!(stream_id.as_str(), "counter-theirs");
            assert_eq!(partition, 5);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(probe.reads(), 0, "nothing read for another's instance");
    let theirs = StreamId::of("counter", "theirs").unwrap();
    assert_eq!(store.stream_version(&theirs).await.unwrap(), 0);

    assert_eq!(add(&streams, "mine", 2).await.unwrap(), (1, 2));
    assert_eq!(
        *probe.fences.lock().unwrap(),
        [Fence {
            partition: 3,
            owner: "replica-a".into(),
            epoch: 7
        }]
    );
}
