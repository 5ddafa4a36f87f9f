//! W3C trace context carried from the envelope to the consumer's span.
//!
//! The event store keeps the `traceparent`/`tracestate` of the request that appended an event
//! in the envelope. The relay copies them into NATS headers (for tools that look at the wire),
//! and every consumer opens its handling span as a child of that context, so one trace spans
//! the gRPC call, the append and each consumer that applies the event. Extraction itself is
//! the kit's [`fairdeal_kit::propagation`], the one place that reads W3C context.

use fairdeal_eventstore::RecordedEvent;
use tracing::Span;

pub use fairdeal_kit::propagation::{TRACEPARENT, TRACESTATE, extract as extract_context};

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
    fairdeal_kit::propagation::set_parent(&span, &event.trace_context);
    span
}
