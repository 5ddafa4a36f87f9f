//! Trace context crosses the wire: a client call and its server span share one trace, and
//! a map carried in an event envelope parents the consumer's span on the producer's.
//!
//! Each test installs its own subscriber for its thread (`set_default`) with an in-memory
//! exporter; `#[tokio::test]` runs client and server on that one thread.

use std::collections::BTreeMap;
use std::time::Duration;

use fairdeal_kit::propagation::{self, TraceContextInterceptor};
use fairdeal_kit::telemetry::otel_layer;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{WAIT_PATH, call_wait, no_interceptor, spawn_app};

struct Recorder {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Recorder {
    fn install() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry().with(otel_layer(&provider));
        let guard = tracing::subscriber::set_default(subscriber);
        Recorder {
            exporter,
            provider,
            _guard: guard,
        }
    }

    fn spans(&self) -> Vec<SpanData> {
        self.provider.force_flush().unwrap();
        self.exporter.get_finished_spans().unwrap()
    }
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|span| span.name == name).collect()
}

#[tokio::test]
async fn server_span_joins_the_callers_trace() {
    let recorder = Recorder::install();
    let app = spawn_app(Duration::from_secs(5)).await;
    app.gate.send(true).unwrap();
    let channel = app.channel().await;

    call_wait(channel.clone(), TraceContextInterceptor)
        .instrument(tracing::info_span!("with-context"))
        .await
        .unwrap();
    // Control: without the interceptor the server starts a trace of its own.
    call_wait(channel, no_interceptor)
        .instrument(tracing::info_span!("without-context"))
        .await
        .unwrap();
    app.shutdown.trigger();
    app.server.await.unwrap().unwrap();

    let spans = recorder.spans();
    let server_name = WAIT_PATH.trim_start_matches('/');
    let servers = named(&spans, server_name);
    assert_eq!(servers.len(), 2, "one server span per call: {spans:#?}");
    let with = named(&spans, "with-context")[0];
    let without = named(&spans, "without-context")[0];

    let joined: Vec<_> = servers
        .iter()
        .filter(|server| server.span_context.trace_id() == with.span_context.trace_id())
        .collect();
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].parent_span_id, with.span_context.span_id());
    assert_eq!(joined[0].span_kind, opentelemetry::trace::SpanKind::Server);
    // The trace id is also a plain field, for joining log lines with the trace.
    let logged = joined[0]
        .attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == "trace_id")
        .map(|attribute| attribute.value.to_string());
    assert_eq!(logged, Some(with.span_context.trace_id().to_string()));
    assert!(
        servers
            .iter()
            .all(|server| server.span_context.trace_id() != without.span_context.trace_id()),
        "a call without the interceptor must not join the caller's trace"
    );
}

#[test]
fn envelope_map_parents_the_consumer_span_on_the_producer() {
    let recorder = Recorder::install();
    let mut carrier = BTreeMap::new();
    let producer = tracing::info_span!("append-event");
    producer.in_scope(|| propagation::inject_current(&mut carrier));
    assert!(carrier.contains_key(propagation::TRACEPARENT));

    let consumer = tracing::info_span!("handle-event");
    assert!(propagation::set_parent(&consumer, &carrier));
    consumer.in_scope(|| tracing::info!("applied"));
    drop(consumer);
    drop(producer);

    let spans = recorder.spans();
    let producer = named(&spans, "append-event")[0];
    let consumer = named(&spans, "handle-event")[0];
    assert_eq!(
        consumer.span_context.trace_id(),
        producer.span_context.trace_id()
    );
    assert_eq!(consumer.parent_span_id, producer.span_context.span_id());

    // The map round-trips: extracting gives back the producer's span context.
    let extracted = propagation::extract(&carrier);
    use opentelemetry::trace::TraceContextExt;
    assert_eq!(
        extracted.span().span_context().trace_id(),
        producer.span_context.trace_id()
    );
    assert_eq!(
        extracted.span().span_context().span_id(),
        producer.span_context.span_id()
    );
}

#[test]
fn set_parent_ignores_a_carrier_without_context() {
    let _recorder = Recorder::install();
    let span = tracing::info_span!("orphan");
    assert!(!propagation::set_parent(&span, &BTreeMap::new()));
}
