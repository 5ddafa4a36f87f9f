//! W3C trace-context propagation across process boundaries.
//!
//! One trace must span a gRPC call, the event it appends and the consumer that handles the
//! event. Three carriers cross those boundaries, and each has a pair of functions here:
//!
//! | carrier                                   | write                        | read                     |
//! |-------------------------------------------|------------------------------|--------------------------|
//! | event envelopes, NATS headers (a map)     | [`inject_current`]           | [`extract`], [`set_parent`] |
//! | outgoing gRPC metadata (client side)      | [`TraceContextInterceptor`]  | —                        |
//! | incoming gRPC HTTP/2 headers (server side)| —                            | [`grpc_server_span`]     |
//!
//! The format is always W3C Trace Context (`traceparent`, `tracestate`), written by
//! [`TraceContextPropagator`] directly rather than through the OpenTelemetry global
//! propagator: the global one is a no-op until someone installs it, and a missed install
//! would silently cut every trace in two. Keys are the lowercase header names, so a map
//! filled here can be copied verbatim into NATS headers or HTTP headers.
//!
//! Without the OpenTelemetry layer installed (see [`crate::telemetry`]) spans carry no
//! OpenTelemetry context: injecting writes nothing and extracting yields an empty context.
//! That makes every function here safe to call unconditionally.

use std::collections::BTreeMap;

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C header carrying trace id, parent span id and sampling flag.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header carrying vendor-specific trace state.
pub const TRACESTATE: &str = "tracestate";

/// The carrier type used by event envelopes and message headers.
pub type TraceCarrier = BTreeMap<String, String>;

/// Writes the context of the current `tracing` span into `carrier` (`traceparent`, and
/// `tracestate` when not empty). Existing unrelated keys are left alone.
pub fn inject_current(carrier: &mut BTreeMap<String, String>) {
    inject_context(&Span::current().context(), carrier);
}

/// Writes the context of `span` into `carrier` (e.g. a message's headers, so its consumer
/// continues from `span`).
pub fn inject_span(span: &Span, carrier: &mut BTreeMap<String, String>) {
    inject_context(&span.context(), carrier);
}

/// Writes `cx` into `carrier`. Writes nothing when `cx` holds no valid span.
pub fn inject_context(cx: &Context, carrier: &mut BTreeMap<String, String>) {
    TraceContextPropagator::new().inject_context(cx, &mut MapCarrier(carrier));
}

/// Reads a remote parent context from `carrier`. Missing or malformed entries give an empty
/// context (check with [`has_remote_parent`]); this never fails, because a broken trace
/// header must not break the request or event that carries it.
pub fn extract(carrier: &BTreeMap<String, String>) -> Context {
    TraceContextPropagator::new().extract(&MapReader(carrier))
}

/// Whether `cx` carries a valid remote span to parent on.
pub fn has_remote_parent(cx: &Context) -> bool {
    cx.span().span_context().is_valid()
}

/// Makes `span` a child of the context found in `carrier` (e.g. a consumer's span becomes a
/// child of the span that appended the event). Call it before the span is first entered.
///
/// Returns whether a parent was attached. When the carrier has no valid context the span
/// is left untouched (it keeps its local parent rather than being cut loose as a root).
pub fn set_parent(span: &Span, carrier: &BTreeMap<String, String>) -> bool {
    set_parent_context(span, extract(carrier))
}

/// Like [`set_parent`], with an already extracted context.
pub fn set_parent_context(span: &Span, cx: Context) -> bool {
    if !has_remote_parent(&cx) {
        return false;
    }
    match span.set_parent(cx) {
        Ok(()) => true,
        Err(error) => {
            // Not fatal: the work goes on, only the trace link is lost. Typically the
            // OpenTelemetry layer is not installed (tests, tools) or the span was entered.
            tracing::debug!(%error, "could not attach remote trace parent");
            false
        }
    }
}

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

/// Adapts a string map to OpenTelemetry's writer trait. Hand-written because
/// opentelemetry ships adapters for `HashMap` only, and envelopes use an ordered map so
/// their canonical encoding is deterministic.
struct MapCarrier<'a>(&'a mut BTreeMap<String, String>);

impl Injector for MapCarrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

/// Read side of [`MapCarrier`].
struct MapReader<'a>(&'a BTreeMap<String, String>);

impl Extractor for MapReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
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
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

    fn remote_context() -> Context {
        let span_context = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::from_key_value([("vendor", "value")]).unwrap(),
        );
        Context::new().with_remote_span_context(span_context)
    }

    #[test]
    fn map_round_trip_keeps_trace_and_span_ids() {
        let cx = remote_context();
        let mut carrier = BTreeMap::new();
        carrier.insert("unrelated".to_owned(), "kept".to_owned());
        inject_context(&cx, &mut carrier);
        assert_eq!(
            carrier.get(TRACEPARENT).map(String::as_str),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        assert_eq!(
            carrier.get(TRACESTATE).map(String::as_str),
            Some("vendor=value")
        );
        assert_eq!(carrier.get("unrelated").map(String::as_str), Some("kept"));

        let back = extract(&carrier);
        assert!(has_remote_parent(&back));
        assert_eq!(back.span().span_context(), cx.span().span_context());
    }

    #[test]
    fn empty_or_malformed_carrier_gives_no_parent() {
        assert!(!has_remote_parent(&extract(&BTreeMap::new())));
        let mut carrier = BTreeMap::new();
        carrier.insert(TRACEPARENT.to_owned(), "00-not-a-trace-01".to_owned());
        assert!(!has_remote_parent(&extract(&carrier)));
    }

    #[test]
    fn empty_context_injects_nothing() {
        let mut carrier = BTreeMap::new();
        inject_context(&Context::new(), &mut carrier);
        assert!(carrier.is_empty());
        // No subscriber, no OpenTelemetry layer: the current span has no context.
        inject_current(&mut carrier);
        assert!(carrier.is_empty());
    }

    #[test]
    fn metadata_round_trip() {
        let cx = remote_context();
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
