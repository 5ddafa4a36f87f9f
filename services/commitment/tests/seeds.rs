//! Sealed seeds are committed even after a pooled PostgreSQL connection was left inside a
//! transaction (as sqlx leaves one after a request cancelled in `pool.begin()`): the
//! commitment event that follows on another connection must never point at a seed row that
//! was not committed. The platform's pool guard (fairdeal-db) closes such a connection when
//! it comes back, so the service's own queries never run inside a stale transaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_commitment::seeds::{MIGRATIONS, seed_store};
use fairdeal_commitment::vault::SealedSeed;
use fairdeal_db::{Db, Schema, in_schema, postgres_pool_options};
use fairdeal_testkit::TestDatabase;
use sqlx::Connection;
use sqlx::postgres::PgConnectOptions;
use uuid::Uuid;

#[tokio::test]
async fn a_sealed_seed_commits_on_a_connection_left_in_a_transaction() {
    let database = TestDatabase::create().await.unwrap();
    let schema = format!("seeds_{}", Uuid::now_v7().simple());
    let mut admin = sqlx::PgConnection::connect(database.url()).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
        .execute(&mut admin)
        .await
        .unwrap();
    // The service's pool settings, with one connection, so the stale one is the one the
    // store would get.
    let options: PgConnectOptions = database.url().parse().unwrap();
    let schema_name = Schema::new(&schema).unwrap();
    let pool = postgres_pool_options()
        .max_connections(1)
        .connect_with(in_schema(options, &schema_name))
        .await
        .unwrap();
    let db = Db::Postgres {
        pool: pool.clone(),
        schema: schema_name,
    };
    db.migrate(&MIGRATIONS).await.unwrap();
    let seeds = seed_store(&db);
    let mut ids = Vec::new();
    for aborted in [false, true] {
        {
            // BEGIN behind sqlx's back: the pool does not know the connection is in a
            // transaction, exactly as after a cancelled begin().
            let mut conn = pool.acquire().await.unwrap();
            sqlx::raw_sql("BEGIN").execute(&mut *conn).await.unwrap();
            if aborted {
                let _ = sqlx::raw_sql("SELECT 1/0").execute(&mut *conn).await;
            }
        }
        let sealed = SealedSeed {
            seed_id: Uuid::now_v7(),
            key_id: "k1".into(),
            nonce: vec![1; 24],
            ciphertext: vec![2; 48],
        };
        seeds.insert(&sealed).await.unwrap();
        ids.push(sealed.seed_id);
    }
    // Seen from another connection: both rows are committed.
    let committed: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM \"{schema}\".sealed_seeds WHERE seed_id = ANY($1)"
    )))
    .bind(&ids)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(committed, 2);
    pool.close().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    admin.close().await.unwrap();
    database.drop().await.unwrap();
}
