//! One trace spans the append and the consumer: the handling span's OpenTelemetry parent is
//! the trace context stored in the envelope.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fairdeal_bus::{EmbeddedConsumerConfig, Handler, HandlerError};
use fairdeal_eventstore::{ExpectedVersion, RecordedEvent};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use sqlx::{Sqlite, Transaction};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{EmbeddedHarness, Harness, event, run_with, stream, wait_for};

/// Records the trace id and parent of the span each event is handled in.
#[derive(Debug, Default)]
struct TraceProbe {
    seen: Mutex<Vec<(String, bool)>>,
}

impl Handler<Sqlite> for TraceProbe {
    async fn handle(
        &self,
        _event: &RecordedEvent,
        _tx: &mut Transaction<'_, Sqlite>,
    ) -> Result<(), HandlerError> {
        let context = tracing::Span::current().context();
        let span = context.span();
        let span_context = span.span_context();
        self.seen
            .lock()
            .unwrap()
            .push((span_context.trace_id().to_string(), span_context.is_valid()));
        Ok(())
    }
}

// current_thread: the subscriber set with `set_default` covers the spawned consumer task.
#[tokio::test(flavor = "current_thread")]
async fn handling_span_continues_the_appending_trace() {
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bus-test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    run_with(EmbeddedHarness::create, |h| async move {
        h.store()
            .append(&stream("table"), ExpectedVersion::NoStream, vec![event(0)])
            .await
            .unwrap();
        let probe = Arc::new(TraceProbe::default());
        let consumer = h
            .bus()
            .consumer(Arc::clone(&probe), EmbeddedConsumerConfig::new("tracer"))
            .unwrap();
        let shutdown = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(consumer.run(shutdown.clone()));
        let seen = wait_for(Duration::from_secs(10), || async {
            let seen = probe.seen.lock().unwrap().clone();
            (!seen.is_empty()).then_some(seen)
        })
        .await
        .expect("event handled");
        shutdown.cancel();
        task.await.unwrap().unwrap();
        assert_eq!(
            seen,
            vec![("4bf92f3577b34da6a3ce929d0e0e4736".to_owned(), true)],
            "the handler ran inside the appending request's trace"
        );
    })
    .await;
}
