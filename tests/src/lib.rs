//! fairdeal-e2e: end-to-end tests of the platform against the real servers (PostgreSQL, NATS
//! with JetStream; `cargo xtask test` starts throwaway ones), and the one helper only they
//! need.
//!
//! Layout:
//! - this library: the process's subscriber, logging the services' warnings to the test's
//!   output ([`test_logs`]), and a trace recorder with an in-memory exporter
//!   ([`trace_recorder`]) to assert that one trace spans several hops. It stays here rather
//!   than in `fairdeal-testkit` because it is built on the platform kit's OpenTelemetry layer,
//!   which the testkit (usable by every crate, the kit's dependencies included) must not
//!   depend on;
//! - `platform/`: the platform-kit proof (issue 3) — a small real gRPC service built on the
//!   kit, the event store and the bus, run over PostgreSQL + JetStream and over SQLite + the
//!   in-process bus;
//! - `services/`: the auth, commitment and dealing services wired as in production.
//! - [`platform`]: the game stack (commitment, dealing, tables) in one process, either
//!   backend; [`services`]: the chat and auth services on it, and their clients' calls.
//!
//! Databases, subject prefixes and the servers' URLs come from `fairdeal-testkit`.
#![forbid(unsafe_code)]

pub mod platform;
pub mod services;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TraceId;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

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

/// Whether spans are recorded: from the first [`trace_recorder`] call on.
static RECORDING: AtomicBool = AtomicBool::new(false);

/// Records every span in memory from now on, the way `fairdeal_kit::telemetry::init` would
/// export it, through the process's subscriber ([`test_logs`]). Global rather than
/// per-thread because services spread their work over tasks on every worker thread.
pub fn trace_recorder() -> &'static TraceRecorder {
    let recorder = subscriber();
    RECORDING.store(true, Ordering::Relaxed);
    recorder
}

/// Installs (once per process) the global subscriber: the services' logs to the test's
/// output at `RUST_LOG` (default `warn`), which the harness shows when the test fails, and
/// the span recording [`trace_recorder`] turns on. A test that starts services calls it
/// (`GameStack` does), so a failure shows what they warned of.
pub fn test_logs() {
    subscriber();
}

fn subscriber() -> &'static TraceRecorder {
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
        // Spans are kept in memory only where a test asks for them: a binary of long games
        // would hold every move's.
        let spans = fairdeal_kit::telemetry::otel_layer(&provider)
            .with_filter(filter_fn(|_| RECORDING.load(Ordering::Relaxed)));
        // Another test harness may have installed one already; then spans go there and the
        // trace assertions fail loudly rather than silently.
        let _ = tracing_subscriber::registry()
            .with(logs)
            .with(spans)
            .try_init();
        TraceRecorder { exporter, provider }
    })
}

/// A service's settings as its binary would load them from `args` (flags only: no file, no
/// environment).
///
/// # Panics
/// If the settings do not load: a test's own arguments are wrong.
#[allow(clippy::panic)]
pub fn settings<S: fairdeal_kit::config::Section>(
    name: &str,
    args: &[String],
) -> fairdeal_kit::config::Config<S> {
    use fairdeal_kit::config::{Config, Loaded};
    let mut all = vec![name.to_owned()];
    all.extend(args.iter().cloned());
    match Config::<S>::load_from(name, all, []) {
        Ok(Loaded::Run(config)) => config,
        Ok(Loaded::DumpConfig(_)) => panic!("{name}: no --dump-config given"),
        Err(e) => panic!("{name}: {e}"),
    }
}

/// `args` as owned strings.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// An entry of the auth service's `--service-credentials`: `name:<hex SHA-256 of secret>`.
pub fn service_credential(name: &str, secret: &str) -> String {
    use sha2::Digest as _;
    format!(
        "{name}:{}",
        hex::encode(sha2::Sha256::digest(secret.as_bytes()))
    )
}
