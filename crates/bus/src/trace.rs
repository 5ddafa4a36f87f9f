//! W3C trace context carried from the envelope to the consumer's span.
//!
//! The event store keeps the `traceparent`/`tracestate` of the request that appended an event
//! in the envelope. The relay copies them into NATS headers (for tools that look at the wire),
//! and every consumer opens its handling span as a child of that context, so one trace spans
//! the gRPC call, the append and each consumer that applies the event.

use std::collections::BTreeMap;

use fairdeal_eventstore::RecordedEvent;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// W3C header carrying trace id, parent span id and flags.
pub const TRACEPARENT: &str = "traceparent";
/// W3C header carrying vendor-specific trace state.
pub const TRACESTATE: &str = "tracestate";

/// Reads an envelope's trace-context map as an OpenTelemetry carrier.
struct EnvelopeCarrier<'a>(&'a BTreeMap<String, String>);

impl Extractor for EnvelopeCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The OpenTelemetry context recorded in `trace_context` (empty when it holds none).
pub fn extract_context(trace_context: &BTreeMap<String, String>) -> opentelemetry::Context {
    TraceContextPropagator::new().extract(&EnvelopeCarrier(trace_context))
}

/// The span a consumer handles `event` in, parented to the trace that appended the event.
///
/// Without an OpenTelemetry layer in the subscriber the parent cannot be attached; the span is
/// still a plain tracing span with the event's fields, so logs keep working.
pub(crate) fn handling_span(consumer: &str, event: &RecordedEvent) -> Span {
    let span = tracing::info_span!(
        "bus.handle",
        consumer = consumer,
        event_id = %event.event_id,
        event_type = event.event_type.as_str(),
        stream_id = event.stream_id.as_str(),
        stream_version = event.version,
        position = event.position,
    );
    if !event.trace_context.is_empty() {
        // LayerNotFound only means nobody exports traces in this process: nothing to do.
        let _ = span.set_parent(extract_context(&event.trace_context));
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    #[test]
    fn extracts_a_w3c_parent() {
        let map = BTreeMap::from([(
            TRACEPARENT.to_owned(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
        )]);
        let cx = extract_context(&map);
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_valid());
        assert!(sc.is_remote());
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
    }

    #[test]
    fn garbage_gives_no_parent() {
        let map = BTreeMap::from([(TRACEPARENT.to_owned(), "not-a-traceparent".to_owned())]);
        assert!(!extract_context(&map).span().span_context().is_valid());
        assert!(
            !extract_context(&BTreeMap::new())
                .span()
                .span_context()
                .is_valid()
        );
    }
}
