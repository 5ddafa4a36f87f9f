//! PostgreSQL specifics beyond the shared suite: per-service schemas, the store's own
//! migrations table, and opening by URL.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers fail the test loudly.

use fairdeal_eventstore::conformance::{PgBackend, with_backend};
use fairdeal_eventstore::{
    AnyEventStore, EventStore, ExpectedVersion, NewEvent, PgEventStore, StreamId,
};
use std::sync::Arc;

#[tokio::test]
async fn each_schema_is_its_own_log_with_its_own_migrations_table() {
    with_backend(PgBackend::create, |backend: Arc<PgBackend>| async move {
        let pool = backend.pg_store().pool().clone();
        let other = PgEventStore::new(pool.clone(), "other_service").unwrap();
        other.migrate().await.unwrap();

        let s = StreamId::parse("user-1").unwrap();
        backend
            .pg_store()
            .append(
                &s,
                ExpectedVersion::NoStream,
                vec![NewEvent::new("t.v1.A", vec![1])],
            )
            .await
            .unwrap();
        // The same stream id starts afresh in the other schema.
        other
            .append(
                &s,
                ExpectedVersion::NoStream,
                vec![NewEvent::new("t.v1.B", vec![2])],
            )
            .await
            .unwrap();
        assert_eq!(other.read_stream(&s, 1, 10).await.unwrap()[0].payload, [2]);
        assert_eq!(
            backend.pg_store().read_stream(&s, 1, 10).await.unwrap()[0].payload,
            [1]
        );

        // The store's migrations are tracked per schema, never in sqlx's default table, so
        // a service's own migrator in the same database starts from a clean slate.
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables \
             WHERE table_name LIKE '%migrations' ORDER BY 1",
        )
        .fetch_all(&pool)
        .await
        .unwrap();
        assert_eq!(
            tables,
            [
                "eventstore._fairdeal_eventstore_migrations",
                "other_service._fairdeal_eventstore_migrations"
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn opens_postgres_by_url() {
    with_backend(PgBackend::create, |backend: Arc<PgBackend>| async move {
        let options = backend.connect_options();
        let url = format!(
            "postgres://postgres@{}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap()
        );
        let url: fairdeal_db::DatabaseUrl = url.parse().unwrap();
        let db = fairdeal_db::Db::open(&url, &fairdeal_db::Schema::new("by_url").unwrap())
            .await
            .unwrap();
        let store = AnyEventStore::open(&db).await.unwrap();
        assert!(matches!(&store, AnyEventStore::Postgres(pg) if pg.schema() == "by_url"));
        let s = StreamId::parse("table-1").unwrap();
        store
            .append(
                &s,
                ExpectedVersion::NoStream,
                vec![NewEvent::new("t.v1.A", vec![])],
            )
            .await
            .unwrap();
        assert_eq!(store.stream_version(&s).await.unwrap(), 1);
        if let AnyEventStore::Postgres(pg) = store {
            pg.pool().close().await;
        }
    })
    .await;
}

/// A pooled connection left inside a transaction (as sqlx 0.9 leaves one when a future is
/// cancelled inside `pool.begin()`) must not swallow the next standalone append: the append
/// commits and is visible to everyone else. The pool's release guard
/// (`fairdeal_db::postgres_pool_options`, which every store's pool is built with) is what
/// sees to it.
#[tokio::test]
async fn append_on_a_connection_left_in_a_transaction_still_commits() {
    with_backend(PgBackend::create, |backend: Arc<PgBackend>| async move {
        let pool = fairdeal_db::postgres_pool_options()
            .max_connections(1)
            .connect_with(backend.connect_options())
            .await
            .unwrap();
        let store = PgEventStore::new(pool.clone(), "eventstore").unwrap();
        let s = StreamId::parse("table-stale").unwrap();
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
            store
                .append(
                    &s,
                    ExpectedVersion::Any,
                    vec![NewEvent::new("t.v1.A", vec![1])],
                )
                .await
                .unwrap();
        }
        // Seen from another connection: both appends committed.
        let other = PgEventStore::new(backend.pg_store().pool().clone(), "eventstore").unwrap();
        assert_eq!(other.read_stream(&s, 1, 10).await.unwrap().len(), 2);
        pool.close().await;
    })
    .await;
}

/// A listener on the store's notification channel.
async fn listen(store: &PgEventStore) -> sqlx::postgres::PgListener {
    let mut listener = sqlx::postgres::PgListener::connect_with(store.pool())
        .await
        .unwrap();
    listener
        .listen(fairdeal_eventstore::postgres::NOTIFY_CHANNEL)
        .await
        .unwrap();
    listener
}

/// The next notification's payload, within 10 s.
async fn next_notification(listener: &mut sqlx::postgres::PgListener) -> String {
    tokio::time::timeout(std::time::Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap()
        .payload()
        .to_owned()
}

/// Every appending path announces its streams at commit with their new last versions (a
/// group commit all of its streams in one notification), and a rolled-back append announces
/// nothing.
#[tokio::test]
async fn appends_announce_each_stream_at_commit_and_rollbacks_nothing() {
    use fairdeal_eventstore::AppendRequest;
    use std::time::Duration;

    with_backend(PgBackend::create, |backend: Arc<PgBackend>| async move {
        let store = backend.pg_store();
        let mut listener = listen(store).await;
        let event = |n: u8| NewEvent::new("t.v1.A", vec![n]);
        let (a, b, c, d) = (
            StreamId::parse("table-a").unwrap(),
            StreamId::parse("table-b").unwrap(),
            StreamId::parse("table-c").unwrap(),
            StreamId::parse("table-d").unwrap(),
        );
        // Alone (two events: one notification with the last version).
        store
            .append(&a, ExpectedVersion::NoStream, vec![event(1), event(2)])
            .await
            .unwrap();
        // A group commit of two streams.
        let results = store
            .append_batch(vec![
                AppendRequest {
                    stream_id: b.clone(),
                    expected: ExpectedVersion::NoStream,
                    events: vec![event(3)],
                    fence: None,
                },
                AppendRequest {
                    stream_id: a.clone(),
                    expected: ExpectedVersion::Exact(2),
                    events: vec![event(4)],
                    fence: None,
                },
            ])
            .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        // Inside a transaction that rolls back: nothing.
        let mut tx = store.begin().await.unwrap();
        store
            .append_in_tx(&mut tx, &d, ExpectedVersion::NoStream, vec![event(5)])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        // Inside a transaction that commits.
        let mut tx = store.begin().await.unwrap();
        store
            .append_in_tx(&mut tx, &c, ExpectedVersion::NoStream, vec![event(6)])
            .await
            .unwrap();
        tx.commit().await.unwrap();

        let mut got = Vec::new();
        while got.len() < 3 {
            got.push(next_notification(&mut listener).await);
        }
        // Nothing more: the rolled-back append sent nothing.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), listener.recv())
                .await
                .is_err()
        );
        assert_eq!(
            got,
            [
                "eventstore table-a 2",
                "eventstore table-a 3 table-b 1",
                "eventstore table-c 1"
            ]
        );
    })
    .await;
}

/// A group commit of many streams announces them in notifications of at most 48 streams
/// each (PostgreSQL refuses payloads of 8,000 bytes or more), every stream exactly once.
#[tokio::test]
async fn a_large_group_commit_is_announced_in_parts() {
    use fairdeal_eventstore::AppendRequest;
    use std::collections::BTreeSet;

    with_backend(PgBackend::create, |backend: Arc<PgBackend>| async move {
        let store = backend.pg_store();
        let mut listener = listen(store).await;
        // The longest stream ids there are (128 bytes), to test the payload bound.
        let streams: Vec<StreamId> = (0..100)
            .map(|i| StreamId::parse(format!("table-{i:0>122}")).unwrap())
            .collect();
        let requests = streams
            .iter()
            .map(|s| AppendRequest {
                stream_id: s.clone(),
                expected: ExpectedVersion::NoStream,
                events: vec![NewEvent::new("t.v1.A", vec![1])],
                fence: None,
            })
            .collect();
        let results = store.append_batch(requests).await;
        assert!(results.iter().all(Result::is_ok));

        let mut announced = BTreeSet::new();
        let mut parts = 0;
        while announced.len() < streams.len() {
            let payload = next_notification(&mut listener).await;
            parts += 1;
            let mut words = payload.split(' ');
            assert_eq!(words.next(), Some("eventstore"));
            let words: Vec<&str> = words.collect();
            assert!(
                words.len() <= 2 * 48,
                "{} streams in one part",
                words.len() / 2
            );
            for pair in words.chunks(2) {
                assert_eq!(pair[1], "1");
                assert!(announced.insert(pair[0].to_owned()), "{} twice", pair[0]);
            }
        }
        assert_eq!(parts, 3);
        let expected: BTreeSet<String> = streams.iter().map(|s| s.as_str().to_owned()).collect();
        assert_eq!(announced, expected);
    })
    .await;
}
