//! The ledger's ingest on the embedded default, against a real SQLite database: the handler
//! refuses a gap or a broken link (the event never enters the tree, the stream stays
//! halted), redelivery adds nothing, the tree is rebuilt from the archive. The ingest rate
//! is measured by `cargo bench -p fairdeal-ledger --bench ingest`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;

use fairdeal_bus::Handler;
use fairdeal_db::Db;
use fairdeal_event::{GENESIS_PREV_HASH, NewEvent, RecordedEvent, StreamId, seal};
use fairdeal_kit::CommonConfig;
use fairdeal_ledger::MIGRATIONS;
use fairdeal_ledger::ingest::{Ingest, IngestCounters};
use fairdeal_ledger::log::Log;
use fairdeal_platform::Storage;
use fairdeal_tlog::NoteSigner;
use tokio::sync::Notify;

fn signer() -> NoteSigner {
    NoteSigner::from_seed("ledger.test", &[3; 32]).unwrap()
}

async fn storage(dir: &tempfile::TempDir) -> (CommonConfig, Storage) {
    let mut common = CommonConfig::with_defaults("ledger").unwrap();
    common.listen_addr = "127.0.0.1:0".parse().unwrap();
    common.database_url = fairdeal_kit::config::SecretUrl::new(format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("ledger.db").display()
    ));
    let storage = Storage::open(&common, "ledger", &[&MIGRATIONS])
        .await
        .unwrap();
    (common, storage)
}

fn chain(stream: &str, n: u64) -> Vec<RecordedEvent> {
    let stream = StreamId::parse(stream).unwrap();
    let mut prev = GENESIS_PREV_HASH;
    (1..=n)
        .map(|v| {
            let e = seal(&stream, v, &prev, NewEvent::new("t.v1.X", vec![v as u8; 8])).unwrap();
            prev = e.hash;
            e
        })
        .collect()
}

async fn ingest(db: &Db, handler: &Ingest, event: &RecordedEvent) {
    let Db::Sqlite { pool } = db else {
        panic!("sqlite expected")
    };
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    Handler::<sqlx::Sqlite>::handle(handler, event, &mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn a_gap_or_a_broken_link_halts_the_stream_outside_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (_, storage) = storage(&dir).await;
    let db = storage.db().clone();
    let counters = Arc::new(IngestCounters::default());
    let handler = Ingest::new(Arc::new(Notify::new()), counters.clone());
    let good = chain("table-a", 3);
    let other = chain("table-b", 2);
    ingest(&db, &handler, &good[0]).await;
    ingest(&db, &handler, &other[0]).await;
    // A redelivery adds nothing.
    ingest(&db, &handler, &good[0]).await;
    // A gap: version 3 after version 1. Refused, and so is version 2 afterwards.
    ingest(&db, &handler, &good[2]).await;
    ingest(&db, &handler, &good[1]).await;
    // A broken link on the other stream: version 2 of yet another chain.
    let forged = chain("table-b", 2).pop().unwrap();
    let mut forged = forged;
    forged.prev_hash = [9; 32];
    ingest(&db, &handler, &forged).await;
    ingest(&db, &handler, &other[1]).await;

    let log = Log::open(db.clone(), signer()).await.unwrap();
    assert_eq!(log.size(), 2, "only the two first links are leaves");
    let (refused, halted): (i64, i64) = match &db {
        Db::Sqlite { pool } => {
            sqlx::query_as("SELECT COUNT(*), COUNT(DISTINCT stream_id) FROM ledger_refused")
                .fetch_one(pool)
                .await
                .unwrap()
        }
        Db::Postgres { .. } => unreachable!(),
    };
    assert_eq!((refused, halted), (4, 2));
    assert_eq!(
        counters
            .duplicates
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // The archive refuses to be rewritten.
    let Db::Sqlite { pool } = &db else {
        unreachable!()
    };
    let err = sqlx::query("DELETE FROM ledger_refused")
        .execute(pool)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    // A checkpoint signed, then the tree rebuilt: the stored checkpoint is its root.
    let signed = log.sign().await.unwrap();
    let again = Log::open(db, signer()).await.unwrap();
    assert_eq!(again.latest(), Some(signed));
}
