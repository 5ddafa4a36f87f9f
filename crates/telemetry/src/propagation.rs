//! W3C trace-context propagation across process boundaries.
//!
//! One trace must span a gRPC call, the event it appends and the consumer that handles the
//! event. Three carriers cross those boundaries, and each has a pair of functions here:
//!
//! | carrier                                   | write                        | read                     |
//! |-------------------------------------------|------------------------------|--------------------------|
//! | event envelopes, NATS headers (a map)     | [`inject_current`]           | [`extract`], [`set_parent`] |
//! | outgoing gRPC metadata (client side)      | `TraceContextInterceptor`    | —                        |
//! | incoming gRPC HTTP/2 headers (server side)| —                            | `grpc_server_span`       |
//!
//! The gRPC pair lives in `fairdeal_kit::propagation` (which re-exports this module), so the
//! bus, which only carries maps, links no gRPC server.
//!
//! The format is always W3C Trace Context (`traceparent`, `tracestate`), written by
//! [`TraceContextPropagator`] directly rather than through the OpenTelemetry global
//! propagator: the global one is a no-op until someone installs it, and a missed install
//! would silently cut every trace in two. Keys are the lowercase header names, so a map
//! filled here can be copied verbatim into NATS headers or HTTP headers.
//!
//! Without the OpenTelemetry layer installed (see `fairdeal_kit::telemetry`) spans carry no
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
}
