//! PostgreSQL specifics beyond the shared suite: per-service schemas, the store's own
//! migrations table, and opening by URL.

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
        let store = AnyEventStore::connect(&url, "by_url").await.unwrap();
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
