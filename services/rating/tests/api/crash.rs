//! A real crash: the `fairdeal-rating` binary is killed with SIGKILL while it rates a
//! backlog (PostgreSQL + NATS), started again, and every game ends up rated exactly once.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fairdeal_proto::fairdeal::tables::v1 as tpb;
use fairdeal_rating_service::projection::rebuild;
use sqlx::postgres::PgListener;
use uuid::Uuid;

use crate::harness::{Db, TestApp, game};

/// The longest the test waits for the child's progress (a guard, not a pace).
const PATIENCE: Duration = Duration::from_secs(120);

fn start(app: &TestApp, url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_fairdeal-rating"))
        .arg(format!("--database-url={url}"))
        .arg(format!("--nats-url={}", fairdeal_testkit::nats_url()))
        .arg(format!("--subject-prefix={}", app.common.subject_prefix))
        .arg("--listen-addr=127.0.0.1:0")
        .arg(format!("--auth-public-keys={}", app.keys_setting()))
        .arg("--log=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Waits until at least `rows` history rows exist, woken by the store's notifications of
/// the child's commits.
async fn until_rows(app: &TestApp, listener: &mut PgListener, rows: i64) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let n = app
            .count("SELECT COUNT(*) FROM rating_history WHERE $1 <> ''", "x")
            .await;
        if n >= rows {
            return;
        }
        tokio::time::timeout_at(deadline, listener.recv())
            .await
            .unwrap_or_else(|_| panic!("{n} of {rows} history rows"))
            .unwrap();
    }
}

#[tokio::test]
async fn a_kill_9_while_rating_loses_and_repeats_nothing() {
    let app = TestApp::storage_only(Db::Postgres).await;
    let url = app.common.database_url.expose_secret().to_owned();
    let fairdeal_db::Db::Postgres { pool, .. } = app.storage.db() else {
        unreachable!()
    };
    let mut listener = PgListener::connect_with(pool).await.unwrap();
    listener.listen("fairdeal_events").await.unwrap();

    let players: Vec<Uuid> = (0..24).map(|_| Uuid::now_v7()).collect();
    let games = 400;
    for i in 0..games {
        let seated = [0, 1, 2, 3].map(|s| players[(i * 5 + s * 7) % players.len()]);
        app.finish(&game(seated, (i % 2) as u32, tpb::Deck::Dix))
            .await;
    }
    eprintln!("backlog of {games} games appended");
    let mut child = start(&app, &url);
    until_rows(&app, &mut listener, 4 * 60).await;
    // SIGKILL: no drain, no last ack.
    child.kill().unwrap();
    child.wait().unwrap();
    let at_kill = app
        .count("SELECT COUNT(*) FROM rating_history WHERE $1 <> ''", "x")
        .await;
    assert!(
        at_kill < 4 * games as i64,
        "killed too late to prove anything"
    );

    let mut child = start(&app, &url);
    until_rows(&app, &mut listener, 4 * games as i64).await;
    child.kill().unwrap();
    child.wait().unwrap();

    // Exactly four changes per game, and every change follows the previous one of its
    // player (the rebuild recomputes each and checks the chain): nothing lost, nothing twice.
    let rows = app
        .count("SELECT COUNT(*) FROM rating_history WHERE $1 <> ''", "x")
        .await;
    assert_eq!(rows, 4 * games as i64);
    let tables = app
        .count(
            "SELECT COUNT(*) FROM (SELECT table_id FROM rating_history GROUP BY table_id \
             HAVING COUNT(*) = 4) AS t WHERE $1 <> ''",
            "x",
        )
        .await;
    assert_eq!(tables, games as i64);
    let report = rebuild(&app.storage).await.unwrap();
    assert_eq!(report.changes, 4 * games as u64);
    assert!(app.parked_reasons().await.is_empty());
    eprintln!("killed at {at_kill} of {} history rows", 4 * games);
    // The listener's connection would keep the database from being dropped.
    drop(listener);
    app.close().await;
}
