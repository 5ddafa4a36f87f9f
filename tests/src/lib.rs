//! fairdeal-e2e: end-to-end tests of the platform against the real servers on this machine
//! (PostgreSQL on 127.0.0.1:5432, NATS with JetStream on 127.0.0.1:4222), and the helpers
//! they share.
//!
//! Layout:
//! - this library: a uniquely named PostgreSQL database per test ([`TestDatabase`]), a
//!   unique NATS subject prefix per test ([`unique_prefix`]), and a process-wide trace
//!   recorder with an in-memory exporter ([`trace_recorder`]) to assert that one trace spans
//!   several hops;
//! - `platform/`: the platform-kit proof (issue 3) — a small real gRPC service built on the
//!   kit, the event store and the bus, run over PostgreSQL + JetStream and over SQLite + the
//!   in-process bus.
//!
//! The servers' addresses can be overridden with `FAIRDEAL_TEST_POSTGRES_URL` and
//! `FAIRDEAL_TEST_NATS_URL`.
#![forbid(unsafe_code)]

use std::sync::OnceLock;

use anyhow::Context as _;
use opentelemetry::trace::TraceId;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use sqlx::{AssertSqlSafe, Connection as _, PgConnection};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// The PostgreSQL server tests create their databases on.
pub fn postgres_url() -> String {
    std::env::var("FAIRDEAL_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// The NATS server (with JetStream) tests publish to.
pub fn nats_url() -> String {
    std::env::var("FAIRDEAL_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// A subject prefix no other test uses: `e2e.<tag>.<uuid>`.
pub fn unique_prefix(tag: &str) -> String {
    format!("e2e.{tag}.{}", uuid::Uuid::now_v7().simple())
}

/// A fresh PostgreSQL database, `fairdeal_e2e_<uuid>`, dropped by [`TestDatabase::drop`].
#[derive(Debug)]
pub struct TestDatabase {
    /// URL of the server's maintenance database (to create and drop).
    admin_url: String,
    /// The database's name.
    name: String,
    /// URL of the new database.
    url: String,
}

impl TestDatabase {
    /// Creates the database.
    pub async fn create() -> anyhow::Result<Self> {
        let admin_url = postgres_url();
        let name = format!("fairdeal_e2e_{}", uuid::Uuid::now_v7().simple());
        let mut conn = PgConnection::connect(&admin_url)
            .await
            .context("PostgreSQL on 127.0.0.1:5432 (see DEVELOPERS.md)")?;
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        let url = url_with_database(&admin_url, &name)?;
        Ok(Self {
            admin_url,
            name,
            url,
        })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Drops the database, closing any connection still open to it.
    pub async fn drop(self) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect(&self.admin_url).await?;
        sqlx::query(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )))
        .execute(&mut conn)
        .await?;
        conn.close().await?;
        Ok(())
    }
}

/// `base` with its database path replaced by `/name` (query string kept).
fn url_with_database(base: &str, name: &str) -> anyhow::Result<String> {
    let (without_query, query) = match base.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (base, None),
    };
    let authority_end = without_query
        .find("://")
        .map(|scheme_end| scheme_end + 3)
        .and_then(|start| {
            without_query[start..]
                .find('/')
                .map(|slash| start + slash)
                .or(Some(without_query.len()))
        })
        .context("PostgreSQL URL without scheme")?;
    let mut url = format!("{}/{name}", &without_query[..authority_end]);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    Ok(url)
}

/// Spans of every test in this process, exported in memory as they end.
#[derive(Debug)]
pub struct TraceRecorder {
    /// Holds finished spans.
    exporter: InMemorySpanExporter,
    /// The provider the global subscriber's OpenTelemetry layer feeds.
    provider: SdkTracerProvider,
}

impl TraceRecorder {
    /// The finished spans of trace `trace_id`.
    pub fn spans_of(&self, trace_id: TraceId) -> anyhow::Result<Vec<SpanData>> {
        self.provider.force_flush()?;
        Ok(self
            .exporter
            .get_finished_spans()?
            .into_iter()
            .filter(|span| span.span_context.trace_id() == trace_id)
            .collect())
    }
}

/// Installs (once per process) a global subscriber that records every span in memory, the
/// way `fairdeal_kit::telemetry::init` would export it, and logs to the test output at
/// `RUST_LOG` (default `warn`). Global rather than per-thread because services spread their
/// work over tasks on every worker thread.
pub fn trace_recorder() -> &'static TraceRecorder {
    static RECORDER: OnceLock<TraceRecorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let logs = tracing_subscriber::fmt::layer()
            .with_test_writer()
            .with_filter(
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
            );
        // Another test harness may have installed one already; then spans go there and the
        // trace assertions fail loudly rather than silently.
        let _ = tracing_subscriber::registry()
            .with(logs)
            .with(fairdeal_kit::telemetry::otel_layer(&provider))
            .try_init();
        TraceRecorder { exporter, provider }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls_swap_only_the_path() {
        assert_eq!(
            url_with_database("postgres://postgres@127.0.0.1:5432/postgres", "x").unwrap(),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            url_with_database("postgres://u:p@h/postgres?sslmode=disable", "x").unwrap(),
            "postgres://u:p@h/x?sslmode=disable"
        );
        assert_eq!(
            url_with_database("postgres://h", "x").unwrap(),
            "postgres://h/x"
        );
    }
}
