//! Logs, traces and metrics: `tracing` with JSON (or pretty) log lines, and OpenTelemetry
//! spans and metrics ([`crate::metrics`]) exported over OTLP/gRPC when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! The OpenTelemetry layer is installed even when nothing is exported: spans then still
//! carry trace ids, so a service in the middle of a call chain forwards its caller's trace
//! to the next hop (see [`crate::propagation`]) instead of starting a new one. The exporter
//! reads the standard `OTEL_EXPORTER_OTLP_*` variables (endpoint, headers, timeout) itself.
//!
//! [`init`] installs everything process-wide and returns a [`TelemetryGuard`] that flushes
//! buffered spans and metrics when dropped (or on [`TelemetryGuard::shutdown`]); keep it alive in `main`
//! until the server has stopped. Tests build their own subscriber from [`otel_layer`] and a
//! provider with an in-memory exporter, scoped with `tracing::subscriber::set_default`.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::config::{CommonConfig, LogFormat};

/// The environment variable that switches OTLP export on.
pub const OTLP_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// Name of the instrumentation scope of every span the kit's layer creates.
const TRACER_NAME: &str = "fairdeal";

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The log filter (`--log`, `RUST_LOG`) does not parse.
    #[error("invalid log filter: {0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    /// The OTLP exporter could not be built (bad endpoint, no Tokio runtime).
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global subscriber is already installed (`init` called twice).
    #[error("a global tracing subscriber is already installed: {0}")]
    AlreadyInstalled(#[from] tracing_subscriber::util::TryInitError),
    /// Flushing or shutting down the exporter failed.
    #[error("cannot flush traces: {0}")]
    Flush(#[from] opentelemetry_sdk::error::OTelSdkError),
}

/// Keeps the tracer and meter providers alive and flushes them at the end.
#[derive(Debug)]
pub struct TelemetryGuard {
    /// The provider whose batch exporter holds spans not yet sent.
    provider: Option<SdkTracerProvider>,
    /// The meter provider, when metrics are exported.
    meters: Option<SdkMeterProvider>,
}

impl TelemetryGuard {
    /// Flushes buffered spans and metrics and stops the exporters, reporting failure (drop
    /// does the same silently).
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        let meters = self.meters.take().map(|meters| meters.shutdown());
        if let Some(provider) = self.provider.take() {
            provider.shutdown()?;
        }
        meters.transpose()?;
        Ok(())
    }

    /// The tracer provider (e.g. to force a flush in a test).
    pub fn provider(&self) -> Option<&SdkTracerProvider> {
        self.provider.as_ref()
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        // Best effort at exit: there is nowhere left to report a failure to.
        if let Some(meters) = self.meters.take() {
            let _ = meters.shutdown();
        }
        if let Some(provider) = self.provider.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Installs logging and tracing for the whole process. Call once, early in `main`, from
/// inside the Tokio runtime (the OTLP/gRPC exporter needs it).
///
/// The log filter is `--log` / `FAIRDEAL_LOG`, else `RUST_LOG`, else `info`; it governs log
/// lines only. Spans at `info` and above always reach the tracer.
pub fn init(common: &CommonConfig) -> Result<TelemetryGuard, TelemetryError> {
    let filter = log_filter(common.log.as_deref())?;
    let export = exporter_requested();
    let provider = tracer_provider(&common.service_name, export)?;
    // Without export the global meter provider stays OpenTelemetry's no-op one, so
    // instruments cost next to nothing.
    let meters = if export {
        let meters = meter_provider(&common.service_name, true)?;
        opentelemetry::global::set_meter_provider(meters.clone());
        Some(meters)
    } else {
        None
    };

    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    opentelemetry::global::set_tracer_provider(provider.clone());

    let fmt = match common.log_format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            // The whole span stack, so fields of outer spans (the request's `trace_id`,
            // `rpc.method`) are on every line.
            .with_span_list(true)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().pretty().boxed(),
    };
    // The log filter applies to log lines only: spans go to the tracer at `info` and above
    // whatever the log level, so quieting logs (`--log warn`) never cuts traces.
    Registry::default()
        .with(fmt.with_filter(filter))
        .with(otel_layer(&provider).with_filter(LevelFilter::INFO))
        .try_init()?;
    Ok(TelemetryGuard {
        provider: Some(provider),
        meters,
    })
}

/// The `tracing` layer that turns spans into OpenTelemetry spans of `provider`.
pub fn otel_layer<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer(TRACER_NAME))
}

/// Builds the filter from an explicit directive, `RUST_LOG`, or `info`.
pub fn log_filter(directive: Option<&str>) -> Result<EnvFilter, TelemetryError> {
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|value| !value.is_empty());
    let directive = directive.map(str::to_owned).or(from_env);
    Ok(EnvFilter::try_new(directive.as_deref().unwrap_or("info"))?)
}

/// Whether `OTEL_EXPORTER_OTLP_ENDPOINT` asks for export.
pub fn exporter_requested() -> bool {
    std::env::var(OTLP_ENDPOINT_ENV).is_ok_and(|value| !value.trim().is_empty())
}

/// A provider named `service_name`, exporting over OTLP/gRPC in batches when `export`.
pub fn tracer_provider(
    service_name: &str,
    export: bool,
) -> Result<SdkTracerProvider, TelemetryError> {
    let resource = Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    let builder = SdkTracerProvider::builder().with_resource(resource);
    let builder = if export {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()?;
        builder.with_batch_exporter(exporter)
    } else {
        builder
    };
    Ok(builder.build())
}

/// A meter provider named `service_name`, exporting over OTLP/gRPC every
/// `OTEL_METRIC_EXPORT_INTERVAL` (60 s by default) when `export`.
pub fn meter_provider(
    service_name: &str,
    export: bool,
) -> Result<SdkMeterProvider, TelemetryError> {
    let resource = Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    let builder = SdkMeterProvider::builder().with_resource(resource);
    let builder = if export {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .build()?;
        builder.with_periodic_exporter(exporter)
    } else {
        builder
    };
    Ok(builder.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_accepts_directives_and_rejects_garbage() {
        assert!(log_filter(Some("info,fairdeal_kit=debug")).is_ok());
        assert!(matches!(
            log_filter(Some("=[")),
            Err(TelemetryError::Filter(_))
        ));
    }

    #[test]
    fn provider_without_export_builds_and_shuts_down() {
        let provider = tracer_provider("test", false).unwrap();
        let guard = TelemetryGuard {
            provider: Some(provider),
            meters: Some(meter_provider("test", false).unwrap()),
        };
        guard.shutdown().unwrap();
    }
}
