//! The event-store half of the conformance suite, written once and run against every backend
//! (feature `conformance`).
//!
//! A [`Backend`] gives the suite a fresh, empty store plus the few things only the backend
//! can do: open a transaction that appends without committing yet, corrupt a row behind the
//! store's back, and try raw UPDATE/DELETE. [`PgBackend`] (a fresh database per test) and
//! [`SqliteBackend`] (a fresh temp file per test) are provided; [`crate::conformance_tests!`]
//! expands to one `#[tokio::test]` per case:
//!
//! ```ignore
//! fairdeal_eventstore::conformance_tests!(fairdeal_eventstore::conformance::SqliteBackend::create);
//! ```
//!
//! Every case is a plain `async fn(Arc<dyn Backend>)` below, so another crate (the bus) can
//! call them directly against its own wiring. Cases panic on failure: this is test support.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::{
    AppendRequest, Appended, EventStore, ExpectedVersion, PgEventStore, SqliteEventStore,
    StoreError,
};
use async_trait::async_trait;
use fairdeal_event::{ChainVerifier, GENESIS_PREV_HASH, Hash, NewEvent, RecordedEvent, StreamId};
use futures::FutureExt;
use sqlx::postgres::PgConnectOptions;
use sqlx::{AssertSqlSafe, Postgres, Sqlite, Transaction};
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// What the suite needs from a backend beyond the [`EventStore`] trait.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The store under test; empty when the backend is created.
    fn store(&self) -> Arc<dyn EventStore>;
    /// A second store on the same database with writers and caches of its own, as another
    /// process (a second replica) would have.
    fn other_process_store(&self) -> Arc<dyn EventStore>;
    /// Opens a transaction through the backend's `append_in_tx`.
    async fn begin(&self) -> Box<dyn OpenTx>;
    /// Writes `requests` as one group commit (the backend's `append_batch`): one
    /// transaction, each request's own result in order.
    async fn append_batch(&self, requests: Vec<AppendRequest>)
    -> Vec<Result<Appended, StoreError>>;
    /// Overwrites the payload and hash of `(stream_id, version)` directly in the database,
    /// bypassing the append-only guard (simulates an attacker with database access).
    async fn tamper(&self, stream_id: &StreamId, version: u64, payload: &[u8], hash: &Hash);
    /// Attempts raw mutations of the events table (UPDATE, DELETE, and TRUNCATE where the
    /// database has it) and returns each attempt's name with its error message, or `None`
    /// if the database allowed it.
    async fn try_mutations(&self) -> Vec<(&'static str, Option<String>)>;
    /// Releases the backend's resources (drops the test database, deletes the file).
    async fn cleanup(&self);
}

/// A transaction appending through the backend's `append_in_tx`, not yet committed.
#[async_trait]
pub trait OpenTx: Send {
    /// Appends inside the transaction.
    async fn append(
        &mut self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError>;
    /// Commits.
    async fn commit(self: Box<Self>);
    /// Rolls back.
    async fn rollback(self: Box<Self>);
}

/// Creates a backend with `create`, runs `case` on it and cleans up, even when the case
/// panics (the panic is then resumed, failing the test).
pub async fn run<B, C, CF, F, Fut>(create: C, case: F)
where
    B: Backend,
    C: FnOnce() -> CF,
    CF: Future<Output = B>,
    F: FnOnce(Arc<dyn Backend>) -> Fut,
    Fut: Future<Output = ()>,
{
    with_backend(create, |backend: Arc<B>| case(backend)).await;
}

/// Like [`run`], but the case gets the concrete backend (for backend-specific tests that
/// still want the cleanup guarantee).
pub async fn with_backend<B, C, CF, F, Fut>(create: C, case: F)
where
    B: Backend,
    C: FnOnce() -> CF,
    CF: Future<Output = B>,
    F: FnOnce(Arc<B>) -> Fut,
    Fut: Future<Output = ()>,
{
    let backend = Arc::new(create().await);
    let outcome = AssertUnwindSafe(case(backend.clone())).catch_unwind().await;
    backend.cleanup().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Expands to one `#[tokio::test]` per conformance case, each on a fresh backend made by
/// `$create` (an async fn or closure returning a [`Backend`]).
#[macro_export]
macro_rules! conformance_tests {
    ($create:expr) => {
        $crate::conformance_tests!(@cases $create;
            appends_and_reads_back,
            expected_version_is_enforced,
            concurrent_appends_have_one_winner_per_version,
            concurrent_any_appends_all_land_in_order,
            read_all_orders_across_streams,
            hash_chain_links_every_stream,
            replays_from_any_version_and_position,
            tampering_is_detected_on_read,
            late_commit_is_never_skipped,
            rolled_back_appends_leave_no_trace,
            appends_in_one_transaction_share_its_fate,
            append_only_is_enforced_by_the_database,
            duplicate_event_ids_are_rejected,
            invalid_events_are_rejected,
            large_batches_append_atomically,
            conflicts_inside_one_batch_fail_alone,
            concurrent_appends_share_commits_and_keep_their_own_results,
            writes_of_another_process_are_never_overlooked
        );
    };
    (@cases $create:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $crate::conformance::run($create, $crate::conformance::$case).await;
            }
        )*
    };
}

// ---------------------------------------------------------------------------------------
// Helpers.

/// A fresh stream id of `category`.
fn stream(category: &str) -> StreamId {
    StreamId::of(category, Uuid::now_v7()).unwrap()
}

/// A test event numbered `n`, with every optional field set.
fn event(kind: &str, n: u32) -> NewEvent {
    NewEvent::new(format!("fairdeal.test.v1.{kind}"), n.to_be_bytes().to_vec())
        .with_correlation_id("table-42")
        .with_causation_id(format!("cmd-{n}"))
        .with_trace_context(BTreeMap::from([
            (
                "traceparent".to_owned(),
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
            ),
            ("tracestate".to_owned(), format!("fd={n}")),
        ]))
}

fn events(kind: &str, range: std::ops::Range<u32>) -> Vec<NewEvent> {
    range.map(|n| event(kind, n)).collect()
}

/// Reads everything from `from` once at least `at_least` events are visible.
///
/// PostgreSQL's read horizon is the cluster-wide oldest open writing transaction, so another
/// test's transaction can delay (never hide) visibility for a moment: poll, bounded.
async fn read_all_when(store: &dyn EventStore, from: u64, at_least: usize) -> Vec<RecordedEvent> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = store.read_all(from, usize::MAX).await.unwrap();
        if got.len() >= at_least {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {at_least} events became visible to read_all",
            got.len()
        );
        // Other tests' transactions signal nothing when they end: poll.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn assert_same_event(stored: &RecordedEvent, sent: &NewEvent) {
    assert_eq!(stored.event_id, sent.event_id);
    assert_eq!(stored.event_type, sent.event_type);
    assert_eq!(stored.payload, sent.payload);
    assert_eq!(stored.correlation_id, sent.correlation_id);
    assert_eq!(stored.causation_id, sent.causation_id);
    assert_eq!(stored.trace_context, sent.trace_context);
    let drift = sent
        .occurred_at
        .duration_since(stored.occurred_at)
        .expect("stored time is the sent time truncated");
    assert!(drift < Duration::from_micros(1));
}

fn assert_strictly_increasing(events: &[RecordedEvent]) {
    for pair in events.windows(2) {
        assert!(
            pair[0].position < pair[1].position,
            "positions {} then {}",
            pair[0].position,
            pair[1].position
        );
    }
}

// ---------------------------------------------------------------------------------------
// Cases.

/// Appended events come back from `read_stream` and `read_all` exactly as sent, versioned
/// 1, 2, ... and positioned in increasing order.
pub async fn appends_and_reads_back(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("table");
    assert_eq!(store.stream_version(&s).await.unwrap(), 0);
    assert!(store.read_stream(&s, 1, 10).await.unwrap().is_empty());

    let sent = events("Dealt", 0..3);
    let appended = store
        .append(&s, ExpectedVersion::NoStream, sent.clone())
        .await
        .unwrap();
    assert_eq!(appended.version, 3);
    assert_eq!(
        appended
            .events
            .iter()
            .map(|e| e.version)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_strictly_increasing(&appended.events);

    let read = store.read_stream(&s, 1, 100).await.unwrap();
    assert_eq!(read, appended.events);
    for (stored, sent) in read.iter().zip(&sent) {
        assert_same_event(stored, sent);
        assert_eq!(stored.stream_id, s);
    }
    assert_eq!(store.stream_version(&s).await.unwrap(), 3);

    let all = read_all_when(store.as_ref(), 0, 3).await;
    assert_eq!(all, appended.events);
    assert_eq!(
        store.head_position().await.unwrap(),
        appended.events[2].position
    );

    // An empty append checks the expectation and changes nothing.
    let empty = store
        .append(&s, ExpectedVersion::Exact(3), vec![])
        .await
        .unwrap();
    assert_eq!(empty.version, 3);
    assert!(empty.events.is_empty());
}

/// `NoStream`, `Exact` and `Any` are enforced; a conflict writes nothing and reports the
/// actual version.
pub async fn expected_version_is_enforced(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("table");

    let err = store
        .append(&s, ExpectedVersion::Exact(1), vec![event("A", 0)])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                expected: ExpectedVersion::Exact(1),
                actual: 0,
                ..
            }
        ),
        "{err}"
    );
    store
        .append(&s, ExpectedVersion::Exact(0), vec![event("A", 1)])
        .await
        .unwrap();
    let err = store
        .append(&s, ExpectedVersion::NoStream, vec![event("A", 2)])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict { stream_id, expected: ExpectedVersion::NoStream, actual: 1 } if *stream_id == s),
        "{err}"
    );
    let err = store
        .append(&s, ExpectedVersion::Exact(5), vec![event("A", 3)])
        .await
        .unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(store.stream_version(&s).await.unwrap(), 1);

    store
        .append(&s, ExpectedVersion::Exact(1), vec![event("A", 4)])
        .await
        .unwrap();
    let any = store
        .append(&s, ExpectedVersion::Any, vec![event("A", 5), event("A", 6)])
        .await
        .unwrap();
    assert_eq!(any.version, 4);
    let versions: Vec<u64> = store
        .read_stream(&s, 1, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.version)
        .collect();
    assert_eq!(versions, [1, 2, 3, 4]);
}

/// Many writers race with the same expected version: exactly one wins each round, every
/// loser gets a typed conflict naming the winner's version, and the chain stays intact.
pub async fn concurrent_appends_have_one_winner_per_version(backend: Arc<dyn Backend>) {
    const WRITERS: u32 = 8;
    const ROUNDS: u64 = 5;
    let store = backend.store();
    let s = stream("table");
    for round in 0..ROUNDS {
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = store.clone();
                let s = s.clone();
                tokio::spawn(async move {
                    let batch = vec![event("Bid", w), event("Bid", w + 100)];
                    store
                        .append(&s, ExpectedVersion::Exact(round * 2), batch)
                        .await
                })
            })
            .collect();
        let mut winners = 0;
        for result in futures::future::join_all(tasks).await {
            match result.unwrap() {
                Ok(appended) => {
                    winners += 1;
                    assert_eq!(appended.version, round * 2 + 2);
                }
                Err(StoreError::Conflict {
                    expected, actual, ..
                }) => {
                    assert_eq!(expected, ExpectedVersion::Exact(round * 2));
                    assert_eq!(actual, round * 2 + 2);
                }
                Err(other) => panic!("unexpected error: {other}"),
            }
        }
        assert_eq!(winners, 1, "round {round}");
    }
    let read = store.read_stream(&s, 1, 1000).await.unwrap();
    assert_eq!(read.len() as u64, ROUNDS * 2);
    let mut chain = ChainVerifier::new(s);
    for e in &read {
        chain.check(e).unwrap();
    }
}

/// Concurrent `Any` appends all succeed, landing as one gap-free version sequence with each
/// batch kept contiguous.
pub async fn concurrent_any_appends_all_land_in_order(backend: Arc<dyn Backend>) {
    const WRITERS: u32 = 6;
    const BATCHES: u32 = 4;
    let store = backend.store();
    let s = stream("chat");
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            let s = s.clone();
            tokio::spawn(async move {
                for b in 0..BATCHES {
                    let base = w * 1000 + b * 10;
                    store
                        .append(&s, ExpectedVersion::Any, events("Said", base..base + 3))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in futures::future::join_all(tasks).await {
        task.unwrap();
    }
    let read = store.read_stream(&s, 1, 10_000).await.unwrap();
    assert_eq!(read.len() as u32, WRITERS * BATCHES * 3);
    for (i, e) in read.iter().enumerate() {
        assert_eq!(e.version, i as u64 + 1);
    }
    // Each batch of three is contiguous: payload numbers n, n+1, n+2 in a row.
    for batch in read.chunks(3) {
        let n: Vec<u32> = batch
            .iter()
            .map(|e| u32::from_be_bytes(e.payload.as_slice().try_into().unwrap()))
            .collect();
        assert_eq!(n, [n[0], n[0] + 1, n[0] + 2]);
    }
    let all = read_all_when(store.as_ref(), 0, read.len()).await;
    assert_strictly_increasing(&all);
}

/// `read_all` returns the events of all streams in commit order with strictly increasing
/// positions, and each stream's events in version order.
pub async fn read_all_orders_across_streams(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let streams = [stream("table"), stream("user"), stream("table")];
    let mut expected_ids = Vec::new();
    for round in 0..4 {
        for (i, s) in streams.iter().enumerate() {
            let batch = events("Step", (round * 10 + i as u32)..(round * 10 + i as u32 + 2));
            expected_ids.extend(batch.iter().map(|e| e.event_id));
            store.append(s, ExpectedVersion::Any, batch).await.unwrap();
        }
    }
    let all = read_all_when(store.as_ref(), 0, expected_ids.len()).await;
    assert_eq!(
        all.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        expected_ids
    );
    assert_strictly_increasing(&all);
    for s in &streams {
        let versions: Vec<u64> = all
            .iter()
            .filter(|e| &e.stream_id == s)
            .map(|e| e.version)
            .collect();
        assert_eq!(versions, (1..=8).collect::<Vec<_>>());
    }
}

/// Every stream is a hash chain: version 1 links to 32 zero bytes, each later event to its
/// predecessor's hash, each hash verifies, and the wire envelope round-trips.
pub async fn hash_chain_links_every_stream(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("commitment");
    store
        .append(&s, ExpectedVersion::NoStream, events("Committed", 0..2))
        .await
        .unwrap();
    store
        .append(&s, ExpectedVersion::Exact(2), events("Revealed", 2..5))
        .await
        .unwrap();
    let read = store.read_stream(&s, 1, 100).await.unwrap();
    assert_eq!(read.len(), 5);
    assert_eq!(read[0].prev_hash, GENESIS_PREV_HASH);
    for pair in read.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
    let mut chain = ChainVerifier::new(s);
    for e in &read {
        e.verify_hash().unwrap();
        chain.check(e).unwrap();
        let wire = RecordedEvent::decode_envelope(e.position, &e.encode_envelope()).unwrap();
        assert_eq!(&wire, e);
    }
}

/// Replay works from every stream version and every global position, with any page size.
pub async fn replays_from_any_version_and_position(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let a = stream("table");
    let b = stream("table");
    for i in 0..6 {
        store
            .append(&a, ExpectedVersion::Any, vec![event("A", i)])
            .await
            .unwrap();
        store
            .append(&b, ExpectedVersion::Any, vec![event("B", i)])
            .await
            .unwrap();
    }
    let full = store.read_stream(&a, 1, 100).await.unwrap();
    assert_eq!(full.len(), 6);
    for v in 1..=7u64 {
        let from = store.read_stream(&a, v, 100).await.unwrap();
        assert_eq!(from, full[(v as usize - 1).min(6)..], "from version {v}");
        let page = store.read_stream(&a, v, 2).await.unwrap();
        assert_eq!(page, full[(v as usize - 1).min(6)..(v as usize + 1).min(6)]);
    }
    assert_eq!(store.read_stream(&a, 0, 100).await.unwrap(), full);

    let all = read_all_when(store.as_ref(), 0, 12).await;
    assert_eq!(all.len(), 12);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(store.read_all(e.position, 100).await.unwrap(), all[i..]);
        // Between two positions (a gap, on PostgreSQL) is the same as the next position.
        assert_eq!(
            store.read_all(e.position + 1, 100).await.unwrap(),
            all[i + 1..]
        );
    }
    // Paging with `last.position + 1` visits every event exactly once.
    let mut paged = Vec::new();
    let mut next = 0;
    loop {
        let page = store.read_all(next, 5).await.unwrap();
        let Some(last) = page.last() else { break };
        next = last.position + 1;
        paged.extend(page);
    }
    assert_eq!(paged, all);
    assert_eq!(store.head_position().await.unwrap(), all[11].position);
    assert_eq!(store.committed_position().await.unwrap(), all[11].position);
}

/// Altering a stored event is detected on every read path, also when the attacker fixes the
/// altered event's own hash (the next event's link then breaks).
pub async fn tampering_is_detected_on_read(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("table");
    let appended = store
        .append(&s, ExpectedVersion::NoStream, events("Dealt", 0..3))
        .await
        .unwrap();
    read_all_when(store.as_ref(), 0, 3).await;

    // 1. Payload changed, hash left alone: the event's own hash no longer verifies.
    let original = &appended.events[1];
    backend.tamper(&s, 2, b"forged", &original.hash).await;
    let integrity = |r: Result<Vec<RecordedEvent>, StoreError>| match r {
        Err(StoreError::Integrity { position, .. }) => position,
        other => panic!("expected an integrity error, got {other:?}"),
    };
    assert_eq!(
        integrity(store.read_stream(&s, 1, 10).await),
        original.position
    );
    assert_eq!(
        integrity(store.read_stream(&s, 2, 10).await),
        original.position
    );
    // Reading from version 3 fetches version 2 to check the link, so it fails too.
    assert_eq!(
        integrity(store.read_stream(&s, 3, 10).await),
        original.position
    );
    assert_eq!(integrity(store.read_all(0, 10).await), original.position);
    // Events before the altered one still read fine.
    assert_eq!(
        store.read_stream(&s, 1, 1).await.unwrap(),
        appended.events[..1]
    );

    // 2. Payload changed and its hash recomputed: version 3 no longer links to version 2.
    let forged = fairdeal_event::seal(
        &s,
        2,
        &original.prev_hash,
        NewEvent {
            payload: b"forged".to_vec(),
            ..event("Dealt", 1)
        }
        .with_event_id(original.event_id)
        .with_occurred_at(original.occurred_at),
    )
    .unwrap();
    backend.tamper(&s, 2, b"forged", &forged.hash).await;
    let third = appended.events[2].position;
    assert_eq!(integrity(store.read_stream(&s, 1, 10).await), third);
    assert_eq!(integrity(store.read_stream(&s, 3, 10).await), third);
}

/// The classic gap: a transaction with a lower position commits after a later one. A
/// tailing reader must not move past the open transaction's position, and must see both, in
/// position order, once it commits.
pub async fn late_commit_is_never_skipped(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let first = stream("table");
    let early = stream("table");
    let late = stream("user");
    store
        .append(&first, ExpectedVersion::NoStream, vec![event("Opened", 0)])
        .await
        .unwrap();
    let seen = read_all_when(store.as_ref(), 0, 1).await;
    let next = seen[0].position + 1;

    // The early transaction takes its position first and stays open...
    let mut held = backend.begin().await;
    let early_appended = held
        .append(&early, ExpectedVersion::NoStream, vec![event("Early", 1)])
        .await
        .unwrap();
    // ...while a later writer commits (on SQLite it waits for the write lock instead).
    let writer = {
        let store = store.clone();
        let late = late.clone();
        tokio::spawn(async move {
            store
                .append(&late, ExpectedVersion::NoStream, vec![event("Late", 2)])
                .await
        })
    };
    // Let the later writer get as far as it can: done (PostgreSQL) or blocked (SQLite).
    let deadline = Instant::now() + Duration::from_millis(300);
    while !writer.is_finished() && Instant::now() < deadline {
        // A writer blocked on SQLite's lock never finishes: wait for either, bounded.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Whatever the later writer managed, the reader must not return anything past the open
    // transaction: returning the later event now would skip the early one forever.
    let during = store.read_all(next, 100).await.unwrap();
    assert!(
        during.is_empty(),
        "read_all returned {during:?} while an earlier position was still open"
    );
    assert!(store.head_position().await.unwrap() < early_appended.events[0].position);
    // What was committed is known even while the reader may not see it yet.
    if writer.is_finished() {
        let committed = store.committed_position().await.unwrap();
        assert!(committed > early_appended.events[0].position, "{committed}");
    }

    held.commit().await;
    let late_appended = writer.await.unwrap().unwrap();
    let after = read_all_when(store.as_ref(), next, 2).await;
    assert_eq!(
        after.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        [
            early_appended.events[0].event_id,
            late_appended.events[0].event_id
        ]
    );
    assert_strictly_increasing(&after);
    assert_eq!(after[0].position, early_appended.events[0].position);
    assert_eq!(after[1].position, late_appended.events[0].position);
}

/// For backends with concurrent writers (PostgreSQL): transaction B starts writing first,
/// A starts after it, B appends again after A's append and commits while A stays open. With
/// positions in insert order (a sequence), B's second event would sort above A's and a
/// reader gating only on transaction ids would return it and skip A forever. A tailing
/// reader must see B's events, then A's, each exactly once.
pub async fn interleaved_writers_never_skip(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let (x, y, z) = (stream("table"), stream("table"), stream("table"));
    let mut b = backend.begin().await;
    let b1 = b
        .append(&x, ExpectedVersion::NoStream, vec![event("B", 1)])
        .await
        .unwrap();
    let mut a = backend.begin().await;
    let a1 = a
        .append(&y, ExpectedVersion::NoStream, vec![event("A", 2)])
        .await
        .unwrap();
    let b2 = b
        .append(&z, ExpectedVersion::NoStream, vec![event("B", 3)])
        .await
        .unwrap();
    b.commit().await;

    let first = read_all_when(store.as_ref(), 0, 2).await;
    assert_eq!(
        first.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        [b1.events[0].event_id, b2.events[0].event_id]
    );
    let next = first[1].position + 1;
    assert!(store.read_all(next, 10).await.unwrap().is_empty());
    a.commit().await;
    let later = read_all_when(store.as_ref(), next, 1).await;
    assert_eq!(
        later.iter().map(|e| e.event_id).collect::<Vec<_>>(),
        [a1.events[0].event_id]
    );
    assert_eq!(read_all_when(store.as_ref(), 0, 3).await.len(), 3);
}

/// A rolled-back `append_in_tx` leaves nothing: no events, no version, no position.
pub async fn rolled_back_appends_leave_no_trace(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("user");
    let mut tx = backend.begin().await;
    let pending = tx
        .append(&s, ExpectedVersion::NoStream, events("Registered", 0..2))
        .await
        .unwrap();
    assert_eq!(pending.version, 2);
    tx.rollback().await;
    assert_eq!(store.stream_version(&s).await.unwrap(), 0);
    assert!(store.read_all(0, 100).await.unwrap().is_empty());
    // The ids were never stored, so they can be appended for real.
    let again: Vec<NewEvent> = events("Registered", 0..2)
        .into_iter()
        .zip(&pending.events)
        .map(|(e, p)| e.with_event_id(p.event_id))
        .collect();
    store
        .append(&s, ExpectedVersion::NoStream, again)
        .await
        .unwrap();
    assert_eq!(read_all_when(store.as_ref(), 0, 2).await.len(), 2);
}

/// Several appends in one transaction (to several streams) commit together with increasing
/// positions; a conflict inside the transaction leaves it usable.
pub async fn appends_in_one_transaction_share_its_fate(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let table = stream("table");
    let user = stream("user");
    store
        .append(
            &user,
            ExpectedVersion::NoStream,
            vec![event("Registered", 0)],
        )
        .await
        .unwrap();
    let before = read_all_when(store.as_ref(), 0, 1).await;

    let mut tx = backend.begin().await;
    let one = tx
        .append(&table, ExpectedVersion::NoStream, events("Sat", 1..3))
        .await
        .unwrap();
    // A conflict inside the transaction is typed and does not poison it.
    let err = tx
        .append(&user, ExpectedVersion::NoStream, vec![event("Joined", 3)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { actual: 1, .. }),
        "{err}"
    );
    let two = tx
        .append(&user, ExpectedVersion::Exact(1), vec![event("Joined", 4)])
        .await
        .unwrap();
    let three = tx
        .append(&table, ExpectedVersion::Exact(2), vec![event("Dealt", 5)])
        .await
        .unwrap();
    let mut in_tx: Vec<RecordedEvent> = one.events;
    in_tx.extend(two.events);
    in_tx.extend(three.events);
    assert_strictly_increasing(&in_tx);
    assert!(in_tx[0].position > before[0].position);
    tx.commit().await;

    let all = read_all_when(store.as_ref(), 0, 5).await;
    assert_eq!(all[1..], in_tx[..]);
    assert_eq!(store.stream_version(&table).await.unwrap(), 3);
    assert_eq!(store.stream_version(&user).await.unwrap(), 2);
}

/// The database itself rejects UPDATE and DELETE (and TRUNCATE on PostgreSQL).
pub async fn append_only_is_enforced_by_the_database(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("table");
    let appended = store
        .append(&s, ExpectedVersion::NoStream, events("Dealt", 0..2))
        .await
        .unwrap();
    let attempts = backend.try_mutations().await;
    assert!(attempts.len() >= 2);
    for (what, error) in attempts {
        let error = error.unwrap_or_else(|| panic!("{what} was allowed"));
        assert!(error.contains("append-only"), "{what}: {error}");
    }
    assert_eq!(store.read_stream(&s, 1, 10).await.unwrap(), appended.events);
}

/// An event id is stored once: a second append of it, in any stream or twice in one batch,
/// is a typed error and writes nothing.
pub async fn duplicate_event_ids_are_rejected(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let a = stream("table");
    let b = stream("table");
    let e = event("Dealt", 0);
    store
        .append(&a, ExpectedVersion::NoStream, vec![e.clone()])
        .await
        .unwrap();
    let err = store
        .append(
            &b,
            ExpectedVersion::NoStream,
            vec![event("Dealt", 1), e.clone()],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateEventId { event_id } if event_id == e.event_id),
        "{err}"
    );
    let twice = event("Dealt", 2);
    let err = store
        .append(&b, ExpectedVersion::Any, vec![twice.clone(), twice.clone()])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::DuplicateEventId { .. }), "{err}");
    assert_eq!(store.stream_version(&b).await.unwrap(), 0);

    let mut tx = backend.begin().await;
    let err = tx
        .append(&b, ExpectedVersion::NoStream, vec![e.clone()])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::DuplicateEventId { .. }), "{err}");
    tx.append(&b, ExpectedVersion::NoStream, vec![twice])
        .await
        .unwrap();
    tx.commit().await;
    assert_eq!(store.stream_version(&b).await.unwrap(), 1);
}

/// Events that break the envelope rules are rejected before anything is written.
pub async fn invalid_events_are_rejected(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let s = stream("table");
    let bad_type = NewEvent::new("not a type", vec![]);
    let err = store
        .append(&s, ExpectedVersion::Any, vec![event("Ok", 0), bad_type])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidEvent(_)), "{err}");
    let mut bad_trace = event("Ok", 1);
    bad_trace
        .trace_context
        .insert(String::new(), "x".to_owned());
    let err = store
        .append(&s, ExpectedVersion::Any, vec![bad_trace])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidEvent(_)), "{err}");
    assert_eq!(store.stream_version(&s).await.unwrap(), 0);
    assert!(store.read_all(0, 10).await.unwrap().is_empty());
}

/// A large batch is one atomic append (one statement on PostgreSQL, chunked statements in
/// one transaction on SQLite).
pub async fn large_batches_append_atomically(backend: Arc<dyn Backend>) {
    const N: u32 = 2_000;
    let store = backend.store();
    let s = stream("ledger");
    let appended = store
        .append(&s, ExpectedVersion::NoStream, events("Entry", 0..N))
        .await
        .unwrap();
    assert_eq!(appended.version, u64::from(N));
    let read = store.read_stream(&s, 1, usize::MAX).await.unwrap();
    assert_eq!(read, appended.events);
    // A batch that fails at its last event writes none of it.
    let mut bad = events("Entry", N..2 * N);
    bad.push(appended.events[0].clone().into_new_event());
    let err = store
        .append(&s, ExpectedVersion::Any, bad)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::DuplicateEventId { .. }), "{err}");
    assert_eq!(store.stream_version(&s).await.unwrap(), u64::from(N));
}

/// One group commit holding appends that must fail (two appends to one stream with the same
/// expected version, a duplicate event id, an invalid event, a stale expectation) beside
/// good ones: exactly one of the same-stream pair wins, each failure is its own typed error,
/// and every good neighbour is written, chained and positioned as if appended alone.
pub async fn conflicts_inside_one_batch_fail_alone(backend: Arc<dyn Backend>) {
    let store = backend.store();
    let (raced, fresh, dup, bad, stale, chained) = (
        stream("table"),
        stream("table"),
        stream("table"),
        stream("table"),
        stream("table"),
        stream("table"),
    );
    store
        .append(&stale, ExpectedVersion::NoStream, events("Seed", 0..2))
        .await
        .unwrap();
    let shared_id = event("Shared", 50);
    let request = |s: &StreamId, expected, events| AppendRequest {
        stream_id: s.clone(),
        expected,
        events,
        fence: None,
    };
    let batch = vec![
        request(&raced, ExpectedVersion::Exact(0), events("Win", 10..12)),
        request(&raced, ExpectedVersion::Exact(0), events("Lose", 20..22)),
        request(
            &fresh,
            ExpectedVersion::NoStream,
            vec![event("Ok", 30), shared_id.clone()],
        ),
        request(
            &dup,
            ExpectedVersion::NoStream,
            vec![event("Ok", 40), shared_id.clone()],
        ),
        request(
            &bad,
            ExpectedVersion::Any,
            vec![event("Ok", 60), NewEvent::new("not a type", vec![])],
        ),
        request(&stale, ExpectedVersion::Exact(1), events("Late", 70..71)),
        request(&chained, ExpectedVersion::NoStream, events("First", 80..82)),
        request(
            &chained,
            ExpectedVersion::Exact(2),
            events("Second", 90..91),
        ),
        request(&chained, ExpectedVersion::Any, events("Third", 95..96)),
        request(&stale, ExpectedVersion::Exact(2), vec![]),
    ];
    let sent: Vec<Vec<NewEvent>> = batch.iter().map(|r| r.events.clone()).collect();
    let results = backend.append_batch(batch).await;
    assert_eq!(results.len(), 10);
    let ok = |i: usize| {
        results[i]
            .as_ref()
            .unwrap_or_else(|e| panic!("request {i}: {e}"))
    };

    assert_eq!(ok(0).version, 2);
    assert!(
        matches!(
            &results[1],
            Err(StoreError::Conflict {
                expected: ExpectedVersion::Exact(0),
                actual: 2,
                ..
            })
        ),
        "{:?}",
        results[1]
    );
    assert_eq!(ok(2).version, 2);
    assert!(
        matches!(&results[3], Err(StoreError::DuplicateEventId { event_id }) if *event_id == shared_id.event_id),
        "{:?}",
        results[3]
    );
    assert!(
        matches!(&results[4], Err(StoreError::InvalidEvent(_))),
        "{:?}",
        results[4]
    );
    assert!(
        matches!(&results[5], Err(StoreError::Conflict { actual: 2, .. })),
        "{:?}",
        results[5]
    );
    assert_eq!(ok(6).version, 2);
    assert_eq!(ok(7).version, 3);
    assert_eq!(ok(8).version, 4);
    assert_eq!(ok(9).version, 2);
    assert!(ok(9).events.is_empty());

    // What each winner got back is what is stored, and only that.
    for (s, winners) in [
        (&raced, vec![0]),
        (&fresh, vec![2]),
        (&chained, vec![6, 7, 8]),
    ] {
        let read = store.read_stream(s, 1, 100).await.unwrap();
        let returned: Vec<RecordedEvent> =
            winners.iter().flat_map(|&i| ok(i).events.clone()).collect();
        assert_eq!(read, returned);
        let sent_here: Vec<&NewEvent> = winners.iter().flat_map(|&i| sent[i].iter()).collect();
        assert_eq!(read.len(), sent_here.len());
        for (stored, sent) in read.iter().zip(sent_here) {
            assert_same_event(stored, sent);
        }
        let mut chain = ChainVerifier::new(s.clone());
        for e in &read {
            chain.check(e).unwrap();
        }
    }
    assert_eq!(store.stream_version(&dup).await.unwrap(), 0);
    assert_eq!(store.stream_version(&bad).await.unwrap(), 0);
    assert_eq!(store.stream_version(&stale).await.unwrap(), 2);

    // The batch's events sit in batch order in the global log, after the seed.
    let written: Vec<_> = [0, 2, 6, 7, 8]
        .iter()
        .flat_map(|&i| ok(i).events.iter().map(|e| e.event_id))
        .collect();
    let all = read_all_when(store.as_ref(), 0, 2 + written.len()).await;
    assert_strictly_increasing(&all);
    assert_eq!(
        all.iter().skip(2).map(|e| e.event_id).collect::<Vec<_>>(),
        written
    );
}

/// Many concurrent `append` calls (gathered into shared commits by the store): on one
/// stream with one expected version exactly one wins, while every neighbour on its own
/// stream succeeds with its own result, and a neighbour's bad event fails only itself.
pub async fn concurrent_appends_share_commits_and_keep_their_own_results(
    backend: Arc<dyn Backend>,
) {
    const RACERS: u32 = 16;
    const NEIGHBOURS: u32 = 48;
    let store = backend.store();
    let contested = stream("table");
    let mut tasks = Vec::new();
    for w in 0..RACERS + NEIGHBOURS {
        let store = store.clone();
        let contested = contested.clone();
        tasks.push(tokio::spawn(async move {
            if w < RACERS {
                let r = store
                    .append(
                        &contested,
                        ExpectedVersion::NoStream,
                        vec![event("Race", w)],
                    )
                    .await;
                (w, None, r)
            } else {
                let s = stream("user");
                let mut batch = vec![event("Mine", w)];
                if w % 8 == 0 {
                    batch.push(NewEvent::new("not a type", vec![]));
                }
                let r = store.append(&s, ExpectedVersion::NoStream, batch).await;
                (w, Some(s), r)
            }
        }));
    }
    let mut winners = 0;
    let mut neighbours = Vec::new();
    for task in futures::future::join_all(tasks).await {
        let (w, s, result) = task.unwrap();
        match (s, result) {
            (None, Ok(appended)) => {
                winners += 1;
                assert_eq!(appended.version, 1);
            }
            (None, Err(StoreError::Conflict { actual, .. })) => assert_eq!(actual, 1),
            (None, Err(other)) => panic!("racer {w}: {other}"),
            (Some(_), Err(StoreError::InvalidEvent(_))) if w % 8 == 0 => {}
            (Some(s), Ok(appended)) if w % 8 != 0 => {
                assert_eq!(appended.version, 1);
                assert_eq!(appended.events[0].stream_id, s);
                neighbours.push((s, appended));
            }
            (Some(_), other) => panic!("neighbour {w}: {other:?}"),
        }
    }
    assert_eq!(winners, 1);
    assert_eq!(neighbours.len() as u32, NEIGHBOURS - NEIGHBOURS / 8);
    for (s, appended) in &neighbours {
        assert_eq!(
            &store.read_stream(s, 1, 10).await.unwrap(),
            &appended.events
        );
    }
    assert_eq!(store.read_stream(&contested, 1, 10).await.unwrap().len(), 1);
}

/// Two stores on one database (two processes) writing the same streams: each store's
/// writers remember the heads they committed, and the other's appends make those stale.
/// A stale head never decides anything: an expectation that holds against the database
/// succeeds, one that does not is a conflict naming the stored version, `Any` links after
/// the other's event, and every chain stays whole. Concurrent neighbours sharing a commit
/// with such an append keep their own results.
pub async fn writes_of_another_process_are_never_overlooked(backend: Arc<dyn Backend>) {
    let (a, b) = (backend.store(), backend.other_process_store());
    let s = stream("table");
    // A writes 1, B writes 2 and 3: A's remembered head (1) is behind.
    a.append(&s, ExpectedVersion::NoStream, events("A", 0..1))
        .await
        .unwrap();
    b.append(&s, ExpectedVersion::Exact(1), events("B", 1..3))
        .await
        .unwrap();
    // An expectation that holds against the database succeeds through A.
    let appended = a
        .append(&s, ExpectedVersion::Exact(3), events("A", 3..4))
        .await
        .unwrap();
    assert_eq!(appended.version, 4);
    // B is behind now. An expectation matching B's stale head is refused with the stored
    // version, and changes nothing.
    let refused = b
        .append(&s, ExpectedVersion::Exact(3), events("B", 4..5))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Conflict { actual: 4, .. })),
        "{refused:?}"
    );
    assert_eq!(a.stream_version(&s).await.unwrap(), 4);
    // `Any` through the stale store links after the stored head.
    let appended = b
        .append(&s, ExpectedVersion::Any, events("B", 5..6))
        .await
        .unwrap();
    assert_eq!(appended.version, 5);
    // Stale in the middle of concurrent appends to fresh streams: only the stale one fails.
    a.append(&s, ExpectedVersion::Exact(5), events("A", 6..7))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for w in 0..32u32 {
        let b = b.clone();
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            if w == 0 {
                (
                    None,
                    b.append(&s, ExpectedVersion::Exact(5), events("Late", 7..8))
                        .await,
                )
            } else {
                let own = stream("user");
                let r = b
                    .append(&own, ExpectedVersion::NoStream, vec![event("Mine", w)])
                    .await;
                (Some(own), r)
            }
        }));
    }
    for task in futures::future::join_all(tasks).await {
        match task.unwrap() {
            (None, result) => assert!(
                matches!(result, Err(StoreError::Conflict { actual: 6, .. })),
                "{result:?}"
            ),
            (Some(own), result) => {
                let appended = result.unwrap();
                assert_eq!(appended.version, 1);
                assert_eq!(b.read_stream(&own, 1, 10).await.unwrap(), appended.events);
            }
        }
    }
    // The stream holds every accepted append once, in order, its chain whole, seen alike
    // from both stores.
    let read = a.read_stream(&s, 1, 100).await.unwrap();
    let kinds: Vec<&str> = read.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "fairdeal.test.v1.A",
            "fairdeal.test.v1.B",
            "fairdeal.test.v1.B",
            "fairdeal.test.v1.A",
            "fairdeal.test.v1.B",
            "fairdeal.test.v1.A",
        ]
    );
    let mut chain = ChainVerifier::new(s.clone());
    for e in &read {
        chain.check(e).unwrap();
    }
    assert_eq!(b.read_stream(&s, 1, 100).await.unwrap(), read);
}

/// Turns a stored event back into the `NewEvent` it came from (same id).
trait IntoNewEvent {
    fn into_new_event(self) -> NewEvent;
}

impl IntoNewEvent for RecordedEvent {
    fn into_new_event(self) -> NewEvent {
        NewEvent {
            event_id: self.event_id,
            event_type: self.event_type,
            occurred_at: self.occurred_at,
            correlation_id: self.correlation_id,
            causation_id: self.causation_id,
            trace_context: self.trace_context,
            payload: self.payload,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Backends.

/// URL of the PostgreSQL server tests create their databases on:
/// `FAIRDEAL_TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`
/// (see [`fairdeal_testkit::postgres_url`]).
pub fn test_postgres_url() -> String {
    fairdeal_testkit::postgres_url()
}

/// A fresh PostgreSQL database ([`fairdeal_testkit::TestDatabase`], `fairdeal_test_<uuid>`)
/// with a migrated store in schema `eventstore` (not `public`, to exercise per-service
/// schemas). Dropped by `cleanup`.
#[derive(Debug)]
pub struct PgBackend {
    /// The test database, to connect to and drop.
    database: fairdeal_testkit::TestDatabase,
    /// The store under test.
    store: PgEventStore,
}

impl PgBackend {
    /// Creates the database and the store.
    pub async fn create() -> Self {
        let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
        let pool = fairdeal_db::postgres_pool_options()
            .max_connections(12)
            .connect(database.url())
            .await
            .unwrap();
        let store = PgEventStore::new(pool, "eventstore").unwrap();
        store.migrate().await.unwrap();
        // Migrating twice is a no-op.
        store.migrate().await.unwrap();
        Self { database, store }
    }

    /// The PostgreSQL store under test.
    pub fn pg_store(&self) -> &PgEventStore {
        &self.store
    }

    /// Connect options for the test database.
    pub fn connect_options(&self) -> PgConnectOptions {
        self.database.url().parse().unwrap()
    }
}

/// [`OpenTx`] over PostgreSQL.
struct PgOpenTx {
    store: PgEventStore,
    tx: Transaction<'static, Postgres>,
}

#[async_trait]
impl OpenTx for PgOpenTx {
    async fn append(
        &mut self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        self.store
            .append_in_tx(&mut self.tx, stream_id, expected, events)
            .await
    }
    async fn commit(self: Box<Self>) {
        self.tx.commit().await.unwrap();
    }
    async fn rollback(self: Box<Self>) {
        self.tx.rollback().await.unwrap();
    }
}

#[async_trait]
impl Backend for PgBackend {
    fn store(&self) -> Arc<dyn EventStore> {
        Arc::new(self.store.clone())
    }

    fn other_process_store(&self) -> Arc<dyn EventStore> {
        Arc::new(PgEventStore::new(self.store.pool().clone(), self.store.schema()).unwrap())
    }

    async fn append_batch(
        &self,
        requests: Vec<AppendRequest>,
    ) -> Vec<Result<Appended, StoreError>> {
        self.store.append_batch(requests).await
    }

    async fn begin(&self) -> Box<dyn OpenTx> {
        Box::new(PgOpenTx {
            store: self.store.clone(),
            tx: self.store.begin().await.unwrap(),
        })
    }

    async fn tamper(&self, stream_id: &StreamId, version: u64, payload: &[u8], hash: &Hash) {
        let mut conn = self.store.pool().acquire().await.unwrap();
        // Replica mode disables ordinary triggers, the append-only guard among them. Only a
        // superuser can do this; the test's attacker is one.
        sqlx::query("SET session_replication_role = replica")
            .execute(&mut *conn)
            .await
            .unwrap();
        let changed = sqlx::query(
            "UPDATE eventstore.events SET payload = $3, hash = $4 \
             WHERE stream_id = $1 AND version = $2",
        )
        .bind(stream_id.as_str())
        .bind(i64::try_from(version).unwrap())
        .bind(payload)
        .bind(hash.as_slice())
        .execute(&mut *conn)
        .await
        .unwrap();
        sqlx::query("SET session_replication_role = DEFAULT")
            .execute(&mut *conn)
            .await
            .unwrap();
        assert_eq!(changed.rows_affected(), 1);
    }

    async fn try_mutations(&self) -> Vec<(&'static str, Option<String>)> {
        let mut out = Vec::new();
        for (what, sql) in [
            ("UPDATE", "UPDATE eventstore.events SET payload = '\\x00'"),
            ("DELETE", "DELETE FROM eventstore.events"),
            ("TRUNCATE", "TRUNCATE eventstore.events"),
        ] {
            let result = sqlx::query(sql).execute(self.store.pool()).await;
            out.push((what, result.err().map(|e| e.to_string())));
        }
        out
    }

    async fn cleanup(&self) {
        self.store.pool().close().await;
        let _ = self.database.drop().await;
    }
}

/// A fresh SQLite store in a temporary directory, deleted by `cleanup` (or on drop).
#[derive(Debug)]
pub struct SqliteBackend {
    /// Holds the directory (and so the database file) alive until cleanup.
    dir: std::sync::Mutex<Option<tempfile::TempDir>>,
    /// The store under test.
    store: SqliteEventStore,
}

impl SqliteBackend {
    /// Creates the file and the store.
    pub async fn create() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteEventStore::open(dir.path().join("events.db"))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        Self {
            dir: std::sync::Mutex::new(Some(dir)),
            store,
        }
    }

    /// The SQLite store under test.
    pub fn sqlite_store(&self) -> &SqliteEventStore {
        &self.store
    }
}

/// [`OpenTx`] over SQLite.
struct SqliteOpenTx {
    store: SqliteEventStore,
    tx: Transaction<'static, Sqlite>,
}

#[async_trait]
impl OpenTx for SqliteOpenTx {
    async fn append(
        &mut self,
        stream_id: &StreamId,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<Appended, StoreError> {
        self.store
            .append_in_tx(&mut self.tx, stream_id, expected, events)
            .await
    }
    async fn commit(self: Box<Self>) {
        self.tx.commit().await.unwrap();
    }
    async fn rollback(self: Box<Self>) {
        self.tx.rollback().await.unwrap();
    }
}

#[async_trait]
impl Backend for SqliteBackend {
    fn store(&self) -> Arc<dyn EventStore> {
        Arc::new(self.store.clone())
    }

    fn other_process_store(&self) -> Arc<dyn EventStore> {
        Arc::new(SqliteEventStore::new(self.store.pool().clone()))
    }

    async fn append_batch(
        &self,
        requests: Vec<AppendRequest>,
    ) -> Vec<Result<Appended, StoreError>> {
        self.store.append_batch(requests).await
    }

    async fn begin(&self) -> Box<dyn OpenTx> {
        Box::new(SqliteOpenTx {
            store: self.store.clone(),
            tx: self.store.begin().await.unwrap(),
        })
    }

    async fn tamper(&self, stream_id: &StreamId, version: u64, payload: &[u8], hash: &Hash) {
        // SQLite cannot switch triggers off: drop the guard, write, and put it back, in one
        // transaction.
        let mut tx = self.store.begin().await.unwrap();
        let guard: String =
            sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE name = 'events_no_update'")
                .fetch_one(&mut *tx)
                .await
                .unwrap();
        sqlx::query("DROP TRIGGER events_no_update")
            .execute(&mut *tx)
            .await
            .unwrap();
        let changed = sqlx::query(
            "UPDATE events SET payload = ?3, hash = ?4 WHERE stream_id = ?1 AND version = ?2",
        )
        .bind(stream_id.as_str())
        .bind(i64::try_from(version).unwrap())
        .bind(payload)
        .bind(hash.as_slice())
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query(AssertSqlSafe(guard))
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(changed.rows_affected(), 1);
    }

    async fn try_mutations(&self) -> Vec<(&'static str, Option<String>)> {
        let mut out = Vec::new();
        for (what, sql) in [
            ("UPDATE", "UPDATE events SET payload = x'00'"),
            ("DELETE", "DELETE FROM events"),
        ] {
            let result = sqlx::query(sql).execute(self.store.pool()).await;
            out.push((what, result.err().map(|e| e.to_string())));
        }
        out
    }

    async fn cleanup(&self) {
        self.store.pool().close().await;
        let dir = self.dir.lock().map(|mut d| d.take()).unwrap_or(None);
        if let Some(dir) = dir {
            let _ = dir.close();
        }
    }
}
