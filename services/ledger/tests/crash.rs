//! A real crash of the ledger (PostgreSQL + NATS): the `fairdeal-ledger` binary is killed
//! with SIGKILL three times while it ingests a backlog relayed through JetStream, in batches
//! of up to `INGEST_BATCH` events a transaction, started again each time, and the archive
//! ends with every event exactly once, dense leaf indexes, every stream's versions in order
//! and its head on its last version, nothing refused, every leaf a format 2 entry that its
//! stored content and salts open, and a tree whose stored checkpoints are its roots. And
//! (ignored, run by hand in a release build) the binary's ingest rate on PostgreSQL + NATS.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    clippy::print_stdout
)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fairdeal_db::Db;
use fairdeal_event::{NewEvent, RecordedEvent, StreamId};
use fairdeal_eventstore::ExpectedVersion;
use fairdeal_harness::common;
use fairdeal_kit::Shutdown;
use fairdeal_ledger::MIGRATIONS;
use fairdeal_ledger::log::Log;
use fairdeal_platform::{Bus, Storage};
use fairdeal_tlog::{Entry, NoteSigner};

/// Streams of the backlog, and events in each.
const STREAMS: u64 = 120;
const PER_STREAM: u64 = 100;
const EVENTS: u64 = STREAMS * PER_STREAM;

/// The longest the test waits for the child's progress (a guard, not a pace).
const PATIENCE: Duration = Duration::from_secs(180);

fn signer() -> NoteSigner {
    NoteSigner::from_seed("ledger.crash.test", &[5; 32]).unwrap()
}

fn start(url: &str, prefix: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_fairdeal-ledger"))
        .arg(format!("--database-url={url}"))
        .arg(format!("--nats-url={}", fairdeal_testkit::nats_url()))
        .arg(format!("--subject-prefix={prefix}"))
        .arg("--listen-addr=127.0.0.1:0")
        .arg(format!(
            "--signing-key={}",
            signer().to_key_string().as_str()
        ))
        .arg("--sources=tables")
        .arg("--checkpoint-interval-ms=100")
        .arg("--checkpoint-leaves=250")
        .arg("--log=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn pool(db: &Db) -> &sqlx::PgPool {
    let Db::Postgres { pool, .. } = db else {
        unreachable!("PostgreSQL expected")
    };
    pool
}

async fn scalar(db: &Db, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool(db)).await.unwrap()
}

/// Waits until the archive holds at least `leaves` leaves (polled: the ledger appends no
/// events of its own, so nothing notifies its commits).
async fn until_leaves(db: &Db, leaves: i64) -> i64 {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let n = scalar(db, "SELECT COUNT(*) FROM ledger_leaves").await;
        if n >= leaves {
            return n;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} of {leaves} leaves"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A test database holding a "tables" log of `streams` x [`PER_STREAM`] events, relayed to
/// JetStream by a relay running until the returned shutdown, and the ledger's (migrated)
/// schema.
struct Backlog {
    database: fairdeal_testkit::TestDatabase,
    url: String,
    prefix: String,
    tables: Storage,
    ledger: Storage,
    relay: Shutdown,
    bus: Bus,
}

impl Backlog {
    async fn create(streams: u64) -> Self {
        let database = fairdeal_testkit::TestDatabase::create().await.unwrap();
        let url = database.url().to_owned();
        let prefix = fairdeal_testkit::subject_prefix("ledgercrash");
        let tables_common = common("tables", &url, Some(&prefix));
        let tables = Storage::open(&tables_common, "tables", &[]).await.unwrap();
        let relay = Shutdown::new();
        let bus = Bus::start(&tables_common, &tables, "tables", &relay)
            .await
            .unwrap();
        for s in 0..streams {
            let stream = StreamId::of("table", s).unwrap();
            let batch = (0..PER_STREAM)
                .map(|i| NewEvent::new("fairdeal.test.v1.Moved", vec![i as u8; 120]))
                .collect();
            tables
                .events()
                .append(&stream, ExpectedVersion::NoStream, batch)
                .await
                .unwrap();
        }
        let ledger = Storage::open(
            &common("ledger", &url, Some(&prefix)),
            "ledger",
            &[&MIGRATIONS],
        )
        .await
        .unwrap();
        Self {
            database,
            url,
            prefix,
            tables,
            ledger,
            relay,
            bus,
        }
    }

    /// Stops the relay, deletes the JetStream streams, drops the database.
    async fn close(self) {
        self.relay.trigger();
        self.relay.wait_for_tasks().await;
        if let Some(js) = self.bus.jetstream() {
            let c = fairdeal_bus::JetStreamConfig::new(format!("{}.tables", self.prefix)).unwrap();
            let _ = js.delete_stream(c.stream_name()).await;
            let _ = js.delete_stream(c.dead_letter_stream_name()).await;
        }
        self.ledger.db().close().await;
        self.tables.db().close().await;
        self.database.drop().await.unwrap();
    }
}

#[tokio::test]
async fn a_kill_9_while_ingesting_loses_and_repeats_nothing() {
    let backlog = Backlog::create(STREAMS).await;
    let (url, prefix) = (backlog.url.clone(), backlog.prefix.clone());
    // The archive, read by the test in the ledger's schema.
    let db = backlog.ledger.db().clone();

    // Three kills at growing points of the backlog: no drain, no last acknowledgement, a
    // batch transaction cut wherever it was.
    let mut kills = Vec::new();
    for at in [300, EVENTS as i64 / 3, 2 * EVENTS as i64 / 3] {
        let mut child = start(&url, &prefix);
        until_leaves(&db, at).await;
        child.kill().unwrap();
        child.wait().unwrap();
        kills.push(scalar(&db, "SELECT COUNT(*) FROM ledger_leaves").await);
    }
    let at_kill = *kills.last().unwrap();
    assert!(at_kill < EVENTS as i64, "killed too late to prove anything");

    let mut child = start(&url, &prefix);
    until_leaves(&db, EVENTS as i64).await;
    // No wait for stragglers: a redelivered event can never become a second leaf
    // (`ledger_leaves.event_id` is UNIQUE), so the count below is final.
    child.kill().unwrap();
    child.wait().unwrap();

    // Every event once, leaf indexes dense, every stream's versions 1..=PER_STREAM in leaf
    // order, nothing refused.
    assert_eq!(
        scalar(&db, "SELECT COUNT(*) FROM ledger_leaves").await,
        EVENTS as i64
    );
    assert_eq!(
        scalar(&db, "SELECT COUNT(DISTINCT event_id) FROM ledger_leaves").await,
        EVENTS as i64
    );
    assert_eq!(
        scalar(&db, "SELECT MAX(leaf_index) FROM ledger_leaves").await,
        EVENTS as i64 - 1
    );
    assert_eq!(
        scalar(
            &db,
            "SELECT COUNT(*) FROM (SELECT stream_id FROM ledger_leaves GROUP BY stream_id \
             HAVING COUNT(*) = MAX(stream_version) AND MIN(stream_version) = 1) AS s"
        )
        .await,
        STREAMS as i64
    );
    assert_eq!(
        scalar(
            &db,
            "SELECT COUNT(*) FROM ledger_leaves a JOIN ledger_leaves b \
             ON a.stream_id = b.stream_id AND a.stream_version < b.stream_version \
             AND a.leaf_index > b.leaf_index"
        )
        .await,
        0,
        "a stream's versions out of leaf order"
    );
    assert_eq!(scalar(&db, "SELECT COUNT(*) FROM ledger_refused").await, 0);
    // Every stream's head is its last archived event.
    assert_eq!(
        scalar(
            &db,
            "SELECT COUNT(*) FROM ledger_heads h JOIN ledger_leaves l \
             ON l.stream_id = h.stream_id AND l.stream_version = h.stream_version \
             AND l.hash = h.hash AND h.stream_version = \
             (SELECT MAX(m.stream_version) FROM ledger_leaves m WHERE m.stream_id = h.stream_id) \
             WHERE h.halted = 0"
        )
        .await,
        STREAMS as i64
    );
    // Every leaf is a format 2 entry its stored content and salts open.
    type Stored = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);
    let rows: Vec<Stored> = sqlx::query_as(
        "SELECT leaf, envelope, body_salt, chain_salt FROM ledger_leaves ORDER BY leaf_index",
    )
    .fetch_all(pool(&db))
    .await
    .unwrap();
    assert_eq!(rows.len() as u64, EVENTS);
    for (leaf, envelope, body_salt, chain_salt) in rows {
        let event = RecordedEvent::decode_envelope(0, &envelope).unwrap();
        let expected = Entry::commit(
            &body_salt.try_into().unwrap(),
            &fairdeal_event::body_bytes(&event.to_envelope()),
            &chain_salt.try_into().unwrap(),
            &event.prev_hash,
            &event.hash,
        );
        assert_eq!(leaf, expected.to_bytes().to_vec());
    }
    // The tree rebuilt from the archive: every stored checkpoint (some signed before the
    // kill) is the root of the leaves at its size.
    let log = Log::open(db.clone(), signer()).await.unwrap();
    assert_eq!(log.size(), EVENTS);
    let checkpoints: Vec<(i64, Vec<u8>)> =
        sqlx::query_as("SELECT tree_size, root_hash FROM ledger_checkpoints")
            .fetch_all(pool(&db))
            .await
            .unwrap();
    assert!(checkpoints.len() >= 2, "{} checkpoints", checkpoints.len());
    for (size, root) in &checkpoints {
        let ours = log.with_tree(|t| t.root_at(*size as u64)).unwrap();
        assert_eq!(
            ours.as_slice(),
            root.as_slice(),
            "checkpoint of size {size}"
        );
    }
    eprintln!(
        "killed at {kills:?} of {EVENTS} leaves; {} checkpoints",
        checkpoints.len()
    );

    drop(log);
    backlog.close().await;
}
