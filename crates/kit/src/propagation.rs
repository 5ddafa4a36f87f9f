//! W3C trace-context propagation over gRPC: the client interceptor and the server span, on
//! top of `fairdeal_telemetry::propagation` (the map carriers of event envelopes and NATS
//! headers, re-exported here whole), which the bus uses without linking this kit. See that
//! module for the carriers and the format.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub use fairdeal_telemetry::propagation::*;

/// Writes the context of the current span into gRPC request metadata.
pub fn inject_metadata(cx: &Context, metadata: &mut tonic::metadata::MetadataMap) {
    TraceContextPropagator::new().inject_context(cx, &mut HeaderCarrier(metadata.as_mut()));
}

/// Reads a remote parent context from HTTP/2 headers (incoming gRPC requests).
pub fn extract_headers(headers: &http::HeaderMap) -> Context {
    TraceContextPropagator::new().extract(&HeaderReader(headers))
}

/// Reads a remote parent context from gRPC metadata.
pub fn extract_metadata(metadata: &tonic::metadata::MetadataMap) -> Context {
    extract_headers(metadata.as_ref())
}

/// Client-side interceptor: copies the current span's trace context into every outgoing
/// request's metadata.
///
/// ```ignore
/// let channel = tonic::transport::Endpoint::from_static("http://[::1]:50051").connect().await?;
/// let client = FooClient::with_interceptor(channel, TraceContextInterceptor);
/// ```
///
/// Interceptors run when the call is made, inside the caller's span, so the server span
/// becomes a child of whatever span issued the call.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceContextInterceptor;

impl tonic::service::Interceptor for TraceContextInterceptor {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        inject_metadata(&Span::current().context(), request.metadata_mut());
        Ok(request)
    }
}

/// A channel whose every call carries the current trace context: wrap once, then build any
/// generated client on it (`TablesClient::new(traced(channel))`).
pub fn traced(
    channel: tonic::transport::Channel,
) -> tonic::service::interceptor::InterceptedService<
    tonic::transport::Channel,
    TraceContextInterceptor,
> {
    tonic::service::interceptor::InterceptedService::new(channel, TraceContextInterceptor)
}

/// Server-side request span, for `tonic::transport::Server::trace_fn` (the kit's server
/// installs it). Named `package.Service/Method` with OpenTelemetry RPC attributes, and a
/// child of the caller's span when the request carries `traceparent`. Health and
/// reflection calls get `debug` spans, everything else `info`.
pub fn grpc_server_span(request: &http::Request<()>) -> Span {
    let path = request.uri().path();
    let name = path.trim_start_matches('/');
    let (service, method) = name.split_once('/').unwrap_or((name, ""));
    // Probes and tooling call health and reflection every few seconds; at `debug` their
    // spans stay out of traces (the kit's tracer takes `info` and above) and logs.
    let span = if service.starts_with("grpc.health.") || service.starts_with("grpc.reflection.") {
        tracing::debug_span!(
            "grpc.request",
            otel.name = name,
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = service,
            rpc.method = method,
            trace_id = tracing::field::Empty,
        )
    } else {
        tracing::info_span!(
            "grpc.request",
            otel.name = name,
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = service,
            rpc.method = method,
            trace_id = tracing::field::Empty,
        )
    };
    set_parent_context(&span, extract_headers(request.headers()));
    // The trace id as a plain field, so every log line of the request (JSON logs list the
    // span stack) can be joined with its trace.
    let cx = span.context();
    let span_ref = cx.span();
    let span_context = span_ref.span_context();
    if span_context.is_valid() {
        span.record("trace_id", tracing::field::display(span_context.trace_id()));
    }
    span
}

/// Adapts HTTP headers to OpenTelemetry's writer trait. Hand-written (a dozen lines)
/// rather than pulling `opentelemetry-http`, whose `http` version must track ours.
struct HeaderCarrier<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderCarrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        // The propagator only writes `traceparent`/`tracestate` with ASCII values; anything
        // that is not a valid header is dropped rather than failing the request.
        if let (Ok(name), Ok(value)) = (
            http::header::HeaderName::from_bytes(key.as_bytes()),
            http::header::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Read side of [`HeaderCarrier`].
struct HeaderReader<'a>(&'a http::HeaderMap);

impl Extractor for HeaderReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trip() {
        // A remote parent as an envelope carries it (the map half, fairdeal-telemetry's).
        let carrier = TraceCarrier::from([
            (
                TRACEPARENT.to_owned(),
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
            ),
            (TRACESTATE.to_owned(), "vendor=value".to_owned()),
        ]);
        let cx = extract(&carrier);
        assert!(has_remote_parent(&cx));
        let mut metadata = tonic::metadata::MetadataMap::new();
        inject_metadata(&cx, &mut metadata);
        let back = extract_metadata(&metadata);
        assert_eq!(back.span().span_context(), cx.span().span_context());
    }

    #[test]
    fn server_span_without_parent_is_left_alone() {
        let request = http::Request::builder()
            .uri("/fairdeal.test.v1.Echo/Say")
            .body(())
            .unwrap();
        let span = grpc_server_span(&request);
        // Without a subscriber the span is disabled; the point is it does not panic and
        // does not try to parent on garbage.
        assert!(!has_remote_parent(&extract_headers(request.headers())));
        drop(span);
    }
}
