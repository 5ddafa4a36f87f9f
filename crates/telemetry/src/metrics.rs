//! Metrics: OpenTelemetry instruments, exported over OTLP/gRPC beside the traces.
//!
//! `fairdeal_kit::telemetry::init` installs a meter provider process-wide when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the same switch as traces; the interval is
//! `OTEL_METRIC_EXPORT_INTERVAL`, 60 s by default). Without it the global provider is
//! OpenTelemetry's no-op one, and every instrument here costs a virtual call that does
//! nothing.
//!
//! Instruments come from [`meter`], the one meter every fairdeal crate records through, and
//! are bound to the provider installed *when they are created*: create them after
//! `telemetry::init` (in `Application::build`, a consumer's or relay's constructor), never in
//! a `static`. Creating the same instrument twice is cheap and both handles feed one series.
//!
//! What the platform records by itself (docs/operations.md lists every metric):
//! - the kit's server: [`RPC_DURATION`] for every call (rate, latency, status);
//! - the event store wrapper of `fairdeal-bus`: appends and their latency;
//! - the relay: published and withheld events, its lag; consumers: their lag and dead
//!   letters.
//!
//! A service adds its own levels with [`level`] (connected chat users), samples with
//! [`gauge`] (active tables) and counts with [`counter`]:
//!
//! ```
//! let connected = fairdeal_telemetry::metrics::level(
//!     "fairdeal.chat.connected_users",
//!     "Open chat subscriptions on this replica",
//!     "{subscription}",
//! );
//! connected.add(1);
//! {
//!     let _subscribed = connected.hold(); // +1 now, -1 when dropped
//! }
//! connected.add(-1);
//! ```

use std::borrow::Cow;
use std::sync::Arc;

pub use opentelemetry::KeyValue;
pub use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter, UpDownCounter};

/// Name of the instrumentation scope of every fairdeal instrument.
pub const METER_NAME: &str = "fairdeal";

/// Histogram of server-side gRPC call durations (seconds), by `rpc.service`, `rpc.method`
/// and `rpc.grpc.status_code` (OpenTelemetry's RPC semantic conventions). Its count is the
/// call rate.
pub const RPC_DURATION: &str = "rpc.server.call.duration";

/// Bucket boundaries (seconds) of the latency histograms: 0.5 ms to 10 s. OpenTelemetry's
/// default boundaries are meant for milliseconds and would put every call in the first one.
pub const LATENCY_BOUNDARIES: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The meter of the process-wide provider (a no-op one until telemetry installs one).
pub fn meter() -> Meter {
    opentelemetry::global::meter(METER_NAME)
}

/// A monotonic count (events, mails, errors).
pub fn counter(
    name: impl Into<Cow<'static, str>>,
    description: impl Into<Cow<'static, str>>,
    unit: impl Into<Cow<'static, str>>,
) -> Counter<u64> {
    meter()
        .u64_counter(name)
        .with_description(description)
        .with_unit(unit)
        .build()
}

/// A latency histogram in seconds, with [`LATENCY_BOUNDARIES`].
pub fn latency(
    name: impl Into<Cow<'static, str>>,
    description: impl Into<Cow<'static, str>>,
) -> Histogram<f64> {
    meter()
        .f64_histogram(name)
        .with_description(description)
        .with_unit("s")
        .with_boundaries(LATENCY_BOUNDARIES.to_vec())
        .build()
}

/// A value sampled when it changes (a lag, a queue length): the last recording per set of
/// attributes is exported.
pub fn gauge(
    name: impl Into<Cow<'static, str>>,
    description: impl Into<Cow<'static, str>>,
    unit: impl Into<Cow<'static, str>>,
) -> Gauge<u64> {
    meter()
        .u64_gauge(name)
        .with_description(description)
        .with_unit(unit)
        .build()
}

/// A level that goes up and down (active tables, connected users), as an OpenTelemetry
/// up-down counter: each process adds its own part, the backend sums the replicas.
pub fn level(
    name: impl Into<Cow<'static, str>>,
    description: impl Into<Cow<'static, str>>,
    unit: impl Into<Cow<'static, str>>,
) -> Level {
    Level {
        counter: meter()
            .i64_up_down_counter(name)
            .with_description(description)
            .with_unit(unit)
            .build(),
        attributes: Arc::from(Vec::new()),
    }
}

/// See [`level`]. Cheap to clone; clones feed the same series.
#[derive(Debug, Clone)]
pub struct Level {
    /// The instrument.
    counter: UpDownCounter<i64>,
    /// Attributes of this series (none unless [`Level::with_attributes`]).
    attributes: Arc<[KeyValue]>,
}

impl Level {
    /// The same level, recorded under `attributes` (e.g. the game variant). Keep the set of
    /// values small: every combination is a series of its own.
    #[must_use]
    pub fn with_attributes(&self, attributes: impl IntoIterator<Item = KeyValue>) -> Self {
        Self {
            counter: self.counter.clone(),
            attributes: attributes.into_iter().collect(),
        }
    }

    /// Moves the level by `delta`.
    pub fn add(&self, delta: i64) {
        self.counter.add(delta, &self.attributes);
    }

    /// Raises the level by one until the returned guard is dropped (a connection, a running
    /// table): the level cannot drift on an early return or a panic.
    pub fn hold(&self) -> LevelGuard {
        self.add(1);
        LevelGuard {
            level: self.clone(),
        }
    }
}

/// Lowers its [`Level`] by one when dropped.
#[derive(Debug)]
pub struct LevelGuard {
    /// The level raised.
    level: Level,
}

impl Drop for LevelGuard {
    fn drop(&mut self) {
        self.level.add(-1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruments_without_a_provider_are_no_ops() {
        let level = level("test.level", "a level", "{item}");
        let guard = level.hold();
        level.with_attributes([KeyValue::new("kind", "x")]).add(3);
        drop(guard);
        counter("test.count", "a count", "{item}").add(1, &[]);
        latency("test.latency", "a latency").record(0.01, &[]);
        gauge("test.gauge", "a gauge", "{item}").record(4, &[]);
    }
}
