//! Nothing acknowledged is lost when the writing process dies mid-stream.
//!
//! The test re-runs its own binary as a child process (the ignored test `crash_child`, told
//! where to write by environment variables). The child appends concurrently from many tasks,
//! each to its own stream, appends of 1 to 3 events, and prints every acknowledged append
//! to stdout. The parent SIGKILLs it while appends are in flight, then, from a fresh
//! connection, checks:
//!
//! - every acknowledged append is stored with exactly the versions, ids and positions it
//!   was acknowledged with;
//! - every stored append is whole (each payload names its append and the append's size, and
//!   all of an append's events are there), versions are gap-free and each stream's hash
//!   chain verifies (`read_stream` checks it);
//! - no group commit is partial: positions within a transaction are contiguous (PostgreSQL:
//!   `(xid << 20) + 0, 1, ...` per transaction; SQLite: 1, 2, ... over the whole log), so a
//!   batch cut short would leave a hole.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use fairdeal_eventstore::{
    EventStore, ExpectedVersion, NewEvent, PgEventStore, RecordedEvent, SqliteEventStore, StreamId,
};
use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use uuid::Uuid;

const CHILD_BACKEND: &str = "FAIRDEAL_CRASH_CHILD_BACKEND";
const CHILD_TARGET: &str = "FAIRDEAL_CRASH_CHILD_TARGET";
/// Concurrent appenders in the child.
const WRITERS: u64 = 48;
/// Acknowledgements the parent waits for before the kill.
const ACKS_BEFORE_KILL: usize = 600;

/// One acknowledged append as the child printed it.
#[derive(Debug)]
struct Ack {
    stream: String,
    /// (version, event id, position) of each event.
    events: Vec<(u64, Uuid, u64)>,
}

fn payload(writer: u64, append: u64, part: u64, size: u64) -> Vec<u8> {
    format!("{writer}:{append}:{part}:{size}").into_bytes()
}

fn parse_payload(bytes: &[u8]) -> (u64, u64, u64, u64) {
    let text = std::str::from_utf8(bytes).unwrap();
    let parts: Vec<u64> = text.split(':').map(|p| p.parse().unwrap()).collect();
    (parts[0], parts[1], parts[2], parts[3])
}

/// The child: appends until killed, printing one line per acknowledged append.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of the crash tests, run by them"]
async fn crash_child() {
    let backend = std::env::var(CHILD_BACKEND).expect("run by the crash tests only");
    let target = std::env::var(CHILD_TARGET).unwrap();
    let store: Arc<dyn EventStore> = match backend.as_str() {
        "postgres" => {
            let pool = fairdeal_db::postgres_pool_options()
                .max_connections(8)
                .connect(&target)
                .await
                .unwrap();
            let store = PgEventStore::new(pool, "eventstore").unwrap();
            store.migrate().await.unwrap();
            Arc::new(store)
        }
        _ => Arc::new(SqliteEventStore::open(&target).await.unwrap()),
    };
    let tasks: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = store.clone();
            tokio::spawn(async move {
                let stream = StreamId::of("crash", Uuid::now_v7()).unwrap();
                let mut version = 0;
                for append in 0.. {
                    let size = 1 + (writer + append) % 3;
                    let events: Vec<NewEvent> = (0..size)
                        .map(|part| {
                            NewEvent::new(
                                "fairdeal.test.v1.Crashed",
                                payload(writer, append, part, size),
                            )
                        })
                        .collect();
                    let appended = store
                        .append(&stream, ExpectedVersion::Exact(version), events)
                        .await
                        .unwrap();
                    version = appended.version;
                    let events: Vec<String> = appended
                        .events
                        .iter()
                        .map(|e| format!("{}/{}/{}", e.version, e.event_id, e.position))
                        .collect();
                    // One write per line: stdout is line-buffered, so a line is out whole
                    // before the next append starts.
                    println!("ack {stream} {}", events.join(","));
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// Runs the child against `backend`/`target`, kills it after enough acknowledgements, and
/// returns every acknowledgement it printed.
async fn run_and_kill(backend: &str, target: &str) -> Vec<Ack> {
    let exe = std::env::current_exe().unwrap();
    let mut child = tokio::process::Command::new(exe)
        .args(["--ignored", "--exact", "crash_child", "--nocapture"])
        .env(CHILD_BACKEND, backend)
        .env(CHILD_TARGET, target)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acks = Vec::new();
    let mut killed = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .expect("the child stopped acknowledging appends");
        let Some(line) = line.unwrap() else { break };
        let Some(rest) = line.strip_prefix("ack ") else {
            continue;
        };
        let (stream, events) = rest.split_once(' ').unwrap();
        let events = events
            .split(',')
            .map(|e| {
                let mut f = e.split('/');
                (
                    f.next().unwrap().parse().unwrap(),
                    f.next().unwrap().parse().unwrap(),
                    f.next().unwrap().parse().unwrap(),
                )
            })
            .collect();
        acks.push(Ack {
            stream: stream.to_owned(),
            events,
        });
        if !killed && acks.len() >= ACKS_BEFORE_KILL {
            // SIGKILL, with appends of every writer in flight.
            child.start_kill().unwrap();
            killed = true;
        }
    }
    let status = child.wait().await.unwrap();
    assert!(killed, "the child exited before the kill: {status}");
    assert!(!status.success(), "{status}");
    acks
}

/// The checks of the module documentation, on the store reopened after the kill.
async fn verify(store: &dyn EventStore, acks: &[Ack], tx_shift: Option<u32>) {
    let mut by_stream: BTreeMap<&str, Vec<&Ack>> = BTreeMap::new();
    for ack in acks {
        by_stream.entry(ack.stream.as_str()).or_default().push(ack);
    }
    let mut stored_total = 0;
    for (stream, acks) in &by_stream {
        let stream_id = StreamId::parse(*stream).unwrap();
        // read_stream verifies every hash and the chain, and fails on a missing version.
        let stored = store.read_stream(&stream_id, 1, usize::MAX).await.unwrap();
        stored_total += stored.len();
        let by_version: HashMap<u64, &RecordedEvent> =
            stored.iter().map(|e| (e.version, e)).collect();
        for ack in acks {
            for (version, id, position) in &ack.events {
                let e = by_version
                    .get(version)
                    .unwrap_or_else(|| panic!("acknowledged {stream} v{version} is lost"));
                assert_eq!(e.event_id, *id);
                assert_eq!(e.position, *position);
            }
        }
        for (i, e) in stored.iter().enumerate() {
            assert_eq!(e.version, i as u64 + 1, "{stream}: versions have a gap");
        }
        // Whole appends only: group the events by the append their payload names.
        let mut appends: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
        for e in &stored {
            let (_, append, part, size) = parse_payload(&e.payload);
            appends.entry(append).or_default().push((part, size));
        }
        let count = appends.len() as u64;
        for (append, parts) in appends {
            assert!(
                append < count,
                "{stream}: append {append} stored after a missing one"
            );
            let size = parts[0].1;
            let got: Vec<u64> = parts.iter().map(|(p, _)| *p).collect();
            assert_eq!(
                got,
                (0..size).collect::<Vec<_>>(),
                "{stream}: append {append} is partial"
            );
        }
    }
    // No partial transaction: positions without holes inside each transaction.
    let all = store.read_all(0, usize::MAX).await.unwrap();
    assert_eq!(
        all.len(),
        stored_total,
        "events outside the child's streams"
    );
    let mut groups: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in &all {
        let group = tx_shift.map_or(0, |shift| e.position >> shift);
        groups.entry(group).or_default().push(e.position);
    }
    for (group, positions) in groups {
        let base = tx_shift.map_or(1, |shift| group << shift);
        let expected: Vec<u64> = (base..base + positions.len() as u64).collect();
        assert_eq!(positions, expected, "transaction {group} has a hole");
    }
    assert!(all.len() >= acks.iter().map(|a| a.events.len()).sum::<usize>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_acknowledged_appends_survive_a_killed_writer() {
    let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
    let acks = run_and_kill("postgres", database.url()).await;
    let pool = fairdeal_db::postgres_pool_options()
        .connect(database.url())
        .await
        .unwrap();
    let store = PgEventStore::new(pool.clone(), "eventstore").unwrap();
    verify(&store, &acks, Some(20)).await;
    // Appending goes on after the crash.
    let next = &acks[0];
    let stream = StreamId::parse(next.stream.clone()).unwrap();
    let version = store.stream_version(&stream).await.unwrap();
    store
        .append(
            &stream,
            ExpectedVersion::Exact(version),
            vec![NewEvent::new("fairdeal.test.v1.After", vec![])],
        )
        .await
        .unwrap();
    pool.close().await;
    database.drop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_acknowledged_appends_survive_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.db");
    let acks = run_and_kill("sqlite", path.to_str().unwrap()).await;
    let store = SqliteEventStore::open(&path).await.unwrap();
    verify(&store, &acks, None).await;
}
