//! Every call the kit's server answers is measured in `rpc.server.call.duration`, by
//! service, method and gRPC status: answers with a body (status in the trailers), errors
//! (status in the headers) and calls the client abandoned (CANCELLED).

use std::sync::OnceLock;
use std::time::Duration;

use fairdeal_kit::metrics::RPC_DURATION;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::support::{SLOW_SERVICE, call_wait, no_interceptor, spawn_app};

/// The metrics of this test binary, in memory.
struct Probe {
    exporter: InMemoryMetricExporter,
    provider: SdkMeterProvider,
}

impl Probe {
    /// Installs the global meter provider once (before any server of this binary is built
    /// by a metrics test; servers built earlier record nowhere).
    fn get() -> &'static Probe {
        static PROBE: OnceLock<Probe> = OnceLock::new();
        PROBE.get_or_init(|| {
            let exporter = InMemoryMetricExporter::default();
            let provider = SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter.clone()).build())
                .build();
            opentelemetry::global::set_meter_provider(provider.clone());
            Probe { exporter, provider }
        })
    }

    /// Calls recorded for (service, method, status code) so far.
    fn calls(&self, service: &str, method: &str, code: i64) -> u64 {
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        let Some(metric) = exported
            .iter()
            .rev()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .find(|metric| metric.name() == RPC_DURATION)
        else {
            return 0;
        };
        let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
            panic!("{RPC_DURATION} is not a histogram of seconds");
        };
        assert_eq!(metric.unit(), "s");
        histogram
            .data_points()
            .filter(|point| {
                let mut matched = 0;
                for kv in point.attributes() {
                    let value = kv.value.to_string();
                    matched += usize::from(match kv.key.as_str() {
                        "rpc.system" => value == "grpc",
                        "rpc.service" => value == service,
                        "rpc.method" => value == method,
                        "rpc.grpc.status_code" => value == code.to_string(),
                        _ => false,
                    });
                }
                matched == 4
            })
            .map(|point| point.count())
            .sum()
    }

    /// Waits until `(service, method, code)` counts more than `before` (a cancelled call is
    /// recorded when the server notices the reset, after the client returned).
    async fn wait_above(&self, service: &str, method: &str, code: i64, before: u64) -> u64 {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let now = self.calls(service, method, code);
            if now > before || tokio::time::Instant::now() > deadline {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn every_call_is_measured_by_method_and_status() {
    let probe = Probe::get();
    let health = "grpc.health.v1.Health";
    let before = [
        probe.calls(SLOW_SERVICE, "Wait", 0),
        probe.calls(health, "Check", 0),
        probe.calls(health, "Check", 5),
        probe.calls(SLOW_SERVICE, "Wait", 1),
    ];

    let app = spawn_app(Duration::from_secs(5)).await;
    let channel = app.channel().await;

    // A call abandoned by its client: CANCELLED once the server sees the reset.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(200),
        call_wait(channel.clone(), no_interceptor),
    )
    .await;
    assert!(abandoned.is_err(), "the gate is closed: the call waits");
    let cancelled = probe.wait_above(SLOW_SERVICE, "Wait", 1, before[3]).await;

    // Success with a body: the status comes in the trailers.
    app.gate.send(true).unwrap();
    call_wait(channel.clone(), no_interceptor).await.unwrap();
    // Success and an error of the kit's own health service (NOT_FOUND: status in headers).
    let mut client = HealthClient::new(channel);
    client
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    let missing = client
        .check(HealthCheckRequest {
            service: "no.such.Service".to_owned(),
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);

    let after = [
        probe.wait_above(SLOW_SERVICE, "Wait", 0, before[0]).await,
        probe.wait_above(health, "Check", 0, before[1]).await,
        probe.wait_above(health, "Check", 5, before[2]).await,
        cancelled,
    ];
    for (i, (after, before)) in after.iter().zip(before).enumerate() {
        assert!(*after > before, "series {i}: {before} -> {after}");
    }
    app.shutdown.trigger();
    app.server.await.unwrap().unwrap();
}
