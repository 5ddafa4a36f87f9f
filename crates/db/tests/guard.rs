//! The pool's stale-transaction guard on a real PostgreSQL: a connection handed back inside a
//! transaction sqlx does not know about (as after a request cancelled in `pool.begin()`) is
//! closed on release, so the next autocommit write of any service query really commits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_db::{Schema, in_schema, postgres_pool_options};
use fairdeal_testkit::TestDatabase;
use sqlx::Connection;
use sqlx::postgres::PgConnectOptions;

#[tokio::test]
async fn a_write_after_a_stale_transaction_commits() {
    let database = TestDatabase::create().await.unwrap();
    let options: PgConnectOptions = database.url().parse().unwrap();
    let schema = Schema::new("guarded").unwrap();
    let mut admin = sqlx::PgConnection::connect(database.url()).await.unwrap();
    sqlx::raw_sql("CREATE SCHEMA guarded; CREATE TABLE guarded.notes (body TEXT NOT NULL)")
        .execute(&mut admin)
        .await
        .unwrap();
    // One connection, so a stale one would be the one every query gets.
    let pool = postgres_pool_options()
        .max_connections(1)
        .connect_with(in_schema(options, &schema))
        .await
        .unwrap();
    for (round, aborted) in [(1, false), (2, true)] {
        {
            // BEGIN behind sqlx's back, as a cancelled begin() leaves it.
            let mut conn = pool.acquire().await.unwrap();
            sqlx::raw_sql("BEGIN").execute(&mut *conn).await.unwrap();
            if aborted {
                let _ = sqlx::raw_sql("SELECT 1/0").execute(&mut *conn).await;
            }
        }
        sqlx::query("INSERT INTO notes (body) VALUES ($1)")
            .bind(format!("note {round}"))
            .execute(&pool)
            .await
            .unwrap();
        // Seen from another session: committed.
        let committed: i64 = sqlx::query_scalar("SELECT count(*) FROM guarded.notes")
            .fetch_one(&mut admin)
            .await
            .unwrap();
        assert_eq!(committed, round);
    }
    pool.close().await;
    admin.close().await.unwrap();
    database.drop().await.unwrap();
}

#[tokio::test]
async fn a_plain_connection_is_not_taken_for_a_stale_one() {
    let database = TestDatabase::create().await.unwrap();
    let mut conn = sqlx::PgConnection::connect(database.url()).await.unwrap();
    // Prepared statements first, as every service query is.
    for _ in 0..3 {
        sqlx::query("SELECT 1").execute(&mut conn).await.unwrap();
        assert!(!fairdeal_db::in_stale_transaction(&mut conn).await.unwrap());
    }
    sqlx::raw_sql("BEGIN").execute(&mut conn).await.unwrap();
    assert!(fairdeal_db::in_stale_transaction(&mut conn).await.unwrap());
    sqlx::raw_sql("ROLLBACK").execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();

    // Through the pool: released connections are kept and reused, not closed.
    let options: PgConnectOptions = database.url().parse().unwrap();
    let pool = postgres_pool_options()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    let backend_pid = |pool: sqlx::PgPool| async move {
        sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    let first = backend_pid(pool.clone()).await;
    for _ in 0..5 {
        assert_eq!(
            backend_pid(pool.clone()).await,
            first,
            "the connection was closed"
        );
    }
    pool.close().await;
    database.drop().await.unwrap();
}
