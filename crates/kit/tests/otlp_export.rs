//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, `telemetry::init` exports traces and metrics over
//! OTLP/gRPC. An in-process OTLP receiver stands in for the collector; the service side runs
//! in a child process (this test binary again, running the ignored `child_...` test), because
//! the endpoint is read from the environment and a test cannot set its own environment
//! without `unsafe`.

// Test code panics on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fairdeal_kit::config::CommonConfig;
use fairdeal_kit::{Application, telemetry};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::resource::v1::Resource;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

const CHILD: &str = "child_serves_one_call_with_telemetry";
const SERVICE_NAME: &str = "otlp-child";

/// What the receiver got: (service.name, span or metric name).
#[derive(Debug, Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<(String, String)>>>,
    metrics: Arc<Mutex<Vec<(String, String)>>>,
}

fn service_name(resource: Option<&Resource>) -> String {
    resource
        .into_iter()
        .flat_map(|r| &r.attributes)
        .find(|kv| kv.key == "service.name")
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map_or_else(String::new, |value| match value {
            Value::StringValue(name) => name.clone(),
            other => format!("{other:?}"),
        })
}

#[tonic::async_trait]
impl TraceService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap();
        for resource in &request.get_ref().resource_spans {
            let service = service_name(resource.resource.as_ref());
            for scope in &resource.scope_spans {
                for span in &scope.spans {
                    spans.push((service.clone(), span.name.clone()));
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let mut metrics = self.metrics.lock().unwrap();
        for resource in &request.get_ref().resource_metrics {
            let service = service_name(resource.resource.as_ref());
            for scope in &resource.scope_metrics {
                for metric in &scope.metrics {
                    metrics.push((service.clone(), metric.name.clone()));
                }
            }
        }
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_traces_and_metrics_over_otlp() {
    let received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let receiver = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(received.clone()))
            .add_service(MetricsServiceServer::new(received.clone()))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );

    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD, "--ignored", "--nocapture"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{addr}"))
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), child)
        .await
        .expect("the child finishes")
        .unwrap();
    assert!(
        output.status.success(),
        "child failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The child ran its test (not zero of them).
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("1 passed"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    receiver.abort();

    let spans = received.spans.lock().unwrap().clone();
    assert!(
        spans.contains(&(SERVICE_NAME.to_owned(), "otlp.child".to_owned())),
        "{spans:?}"
    );
    let metrics = received.metrics.lock().unwrap().clone();
    assert!(
        metrics.contains(&(
            SERVICE_NAME.to_owned(),
            fairdeal_kit::metrics::RPC_DURATION.to_owned()
        )),
        "{metrics:?}"
    );
}

/// The service side, run by [`exports_traces_and_metrics_over_otlp`] in a child process
/// whose environment names the receiver. Telemetry as in a service's `main`, one call served,
/// one span, then the guard flushes both exporters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child half of exports_traces_and_metrics_over_otlp"]
async fn child_serves_one_call_with_telemetry() {
    assert!(
        telemetry::exporter_requested(),
        "run by the parent test only"
    );
    let mut common = CommonConfig::with_defaults(SERVICE_NAME).unwrap();
    common.listen_addr = "127.0.0.1:0".parse().unwrap();
    let guard = telemetry::init(&common).unwrap();
    let app = Application::builder(&common)
        .handle_signals(false)
        .build()
        .await
        .unwrap();
    let addr = app.local_addr();
    let shutdown = app.shutdown();
    let server = tokio::spawn(app.run_until_stopped());
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    tracing::info_span!("otlp.child").in_scope(|| tracing::info!("one span to export"));
    shutdown.trigger();
    server.await.unwrap().unwrap();
    guard.shutdown().unwrap();
}
