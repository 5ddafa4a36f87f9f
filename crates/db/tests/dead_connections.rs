//! Dead connections after the server ends every session (a restart, or an operator's
//! `pg_terminate_backend`): the first request to meet a dead connection may fail, but its
//! idle siblings are dropped before anyone is handed one, and a session that saw the break
//! first (the notification listener) spares even that request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_db::{health, postgres_pool_options, postgres_reader_pool_options};
use fairdeal_testkit::TestDatabase;
use sqlx::Connection as _;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// Connections each pool holds idle when the server ends them.
const IDLE: u32 = 6;

/// `IDLE` connections opened and returned idle to `pool`.
async fn warm(pool: &PgPool) {
    let mut held = Vec::new();
    for _ in 0..IDLE {
        held.push(pool.acquire().await.unwrap());
    }
    for conn in &mut held {
        sqlx::query("SELECT 1").execute(&mut **conn).await.unwrap();
    }
    drop(held);
    // Connections go back to the pool on a task of their own (after the release check).
    for _ in 0..100 {
        if pool.num_idle() == IDLE as usize {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{} connections idle, not {IDLE}", pool.num_idle());
}

/// Ends every session on `database` but the caller's own, as a restart does.
async fn terminate_all(database: &TestDatabase) {
    let mut admin = sqlx::PgConnection::connect(database.url()).await.unwrap();
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = $1 AND pid <> pg_backend_pid()",
    )
    .bind(&name)
    .execute(&mut admin)
    .await
    .unwrap();
    // The server ends them asynchronously: wait until it lists none but ours.
    for _ in 0..500 {
        let left: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(&name)
        .fetch_one(&mut admin)
        .await
        .unwrap();
        if left == 0 {
            admin.close().await.unwrap();
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the terminated sessions never ended");
}

/// A pool of `builder` on `database` holding `IDLE` connections, all of them then ended by
/// the server.
async fn broken(builder: PgPoolOptions, database: &TestDatabase) -> PgPool {
    let pool = builder
        .max_connections(IDLE)
        .connect_with(options(database))
        .await
        .unwrap();
    warm(&pool).await;
    terminate_all(database).await;
    pool
}

/// Requests that fail out of `2 * IDLE` in a row on `pool`; with `note`, each failure is
/// noted as the event store notes its own (its error type does, on conversion), without it
/// the pool must notice by itself.
async fn failures(pool: &PgPool, note: bool) -> usize {
    let mut failed = 0;
    for _ in 0..2 * IDLE {
        if let Err(error) = sqlx::query("SELECT 1").execute(pool).await {
            if note {
                health::note_if_lost(&error);
            }
            failed += 1;
        }
        // Requests one after another, as they come to a service: sqlx returns a connection
        // to its pool (and runs the release check that notes a dead one) on a task of its
        // own, so a request sent before that task ran could meet a dead one too. The next
        // request waits until the connection is back, or dropped (a machine under load may
        // run that task many milliseconds later).
        settled(pool).await;
    }
    failed
}

/// Waits until no connection of `pool` is on its way back (every one it holds is idle:
/// nothing else uses it).
async fn settled(pool: &PgPool) {
    for _ in 0..1000 {
        if pool.num_idle() == pool.size() as usize {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("a connection never came back to the pool");
}

fn options(database: &TestDatabase) -> PgConnectOptions {
    database.url().parse().unwrap()
}

#[tokio::test]
async fn a_broken_connection_takes_its_idle_siblings_with_it() {
    let database = TestDatabase::create().await.unwrap();
    // The shared pool notices by itself (its release check meets the dead session); the
    // readers' pool has no release check, and its one user, the event store, notes.
    for (name, builder, note) in [
        ("shared", postgres_pool_options(), false),
        ("readers", postgres_reader_pool_options(), true),
    ] {
        let pool = broken(builder, &database).await;
        // Before: each of the six idle connections failed one request. Now at most the
        // first (which notes the break) fails; the others are pinged, found dead, dropped.
        let failed = failures(&pool, note).await;
        assert!(
            failed <= 1,
            "{name}: {failed} requests failed after the break"
        );
        pool.close().await;
    }
    database.drop().await.unwrap();
}

#[tokio::test]
async fn a_break_someone_else_saw_first_fails_no_request() {
    let database = TestDatabase::create().await.unwrap();
    let pool = broken(postgres_pool_options(), &database).await;
    // The notification listener (always reading) is the first session to see a restart,
    // and notes it.
    health::note_lost_connection();
    assert_eq!(failures(&pool, false).await, 0);
    pool.close().await;
    database.drop().await.unwrap();
}

#[tokio::test]
async fn without_the_check_every_idle_connection_fails_once() {
    // What the pools did before (and what this test file guards against): sqlx's pool
    // with no test before acquire hands out each dead connection once.
    let database = TestDatabase::create().await.unwrap();
    let pool = broken(PgPoolOptions::new().test_before_acquire(false), &database).await;
    assert!(failures(&pool, true).await >= 2);
    pool.close().await;
    database.drop().await.unwrap();
}
