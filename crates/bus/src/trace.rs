//! W3C trace context carried from the envelope to the consumer's span.
//!
//! The event store keeps the `traceparent`/`tracestate` of the request that appended an event
//! in the envelope. The relay publishes each traced event in a `bus.relay.publish` span, child
//! of that context, and writes the span's own context into the NATS headers; a JetStream
//! consumer opens its handling span as a child of the headers' context (the relay's hop), an
//! in-process consumer as a child of the envelope's. So one trace spans the gRPC call, the
//! append, the relay and each consumer that applies the event. Extraction itself is
//! the kit's [`fairdeal_telemetry::propagation`], the one place that reads W3C context.

use fairdeal_eventstore::RecordedEvent;
use tracing::Span;

pub use fairdeal_telemetry::propagation::{
    TRACEPARENT, TRACESTATE, TraceCarrier, extract as extract_context,
};

/// The span a consumer handles `event` in, parented to `transport` (the relay's publish
/// span, from the JetStream message's headers) when it holds a trace context, else to the
/// trace that appended the event (the envelope's).
///
/// Without an OpenTelemetry layer in the subscriber the parent cannot be attached; the span is
/// still a plain tracing span with the event's fields, so logs keep working.
pub(crate) fn handling_span(
    consumer: &str,
    event: &RecordedEvent,
    transport: Option<&TraceCarrier>,
) -> Span {
    let span = tracing::info_span!(
        "bus.handle",
        consumer = consumer,
        event_id = %event.event_id,
        event_type = event.event_type.as_str(),
        stream_id = event.stream_id.as_str(),
        stream_version = event.version,
        position = event.position,
    );
    let parent = transport
        .filter(|carrier| carrier.contains_key(TRACEPARENT))
        .unwrap_or(&event.trace_context);
    fairdeal_telemetry::propagation::set_parent(&span, parent);
    span
}
