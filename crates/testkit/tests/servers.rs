//! The helpers against real servers: PostgreSQL at `FAIRDEAL_TEST_POSTGRES_URL` (as
//! `cargo xtask test` sets it) and an in-process gRPC health server on port 0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use fairdeal_testkit::TestDatabase;
use sqlx::{Connection as _, PgConnection};

#[tokio::test]
async fn a_test_database_exists_until_dropped() {
    let db = TestDatabase::create().await.unwrap();
    assert!(db.name().starts_with("fairdeal_test_"), "{}", db.name());
    assert!(
        db.url().ends_with(&format!("/{}", db.name())),
        "{}",
        db.url()
    );
    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    let current: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(current, db.name());
    // Dropping closes the connection still open, and can be repeated.
    db.drop().await.unwrap();
    db.drop().await.unwrap();
    assert!(PgConnection::connect(db.url()).await.is_err());
}

#[cfg(feature = "grpc")]
mod grpc {
    use std::time::Duration;

    use fairdeal_testkit::wait_until_serving;
    use tonic::transport::server::TcpIncoming;
    use tonic_health::ServingStatus;

    /// A health server on port 0 whose status for "tally" starts NOT_SERVING.
    async fn health_server() -> (String, tonic_health::server::HealthReporter) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (reporter, service) = tonic_health::server::health_reporter();
        reporter
            .set_service_status("tally", ServingStatus::NotServing)
            .await;
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(TcpIncoming::from(listener)),
        );
        (url, reporter)
    }

    #[tokio::test]
    async fn waits_for_serving_and_no_longer() {
        let (url, reporter) = health_server().await;
        // A negative check needs a bound: 200 ms for a wrong helper to return early.
        let early = tokio::time::timeout(
            Duration::from_millis(200),
            wait_until_serving(&url, "tally"),
        )
        .await;
        assert!(early.is_err(), "returned while NOT_SERVING: {early:?}");
        // Waiting ends when the stream says SERVING.
        let waiting = tokio::spawn({
            let url = url.clone();
            async move { wait_until_serving(&url, "tally").await }
        });
        reporter
            .set_service_status("tally", ServingStatus::Serving)
            .await;
        waiting.await.unwrap().unwrap();
        // The whole server ("") is SERVING from the start.
        wait_until_serving(&url, "").await.unwrap();
    }
}
