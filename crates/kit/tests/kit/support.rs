//! A real kit server on port 0 with one small gRPC service, `fairdeal.kit.test.v1.Slow`,
//! whose `Wait` RPC holds until the test opens a gate: the handle tests need to have an RPC
//! in flight during shutdown.
//!
//! The service is written by hand with tonic's own building blocks (what generated code
//! does) and `()` as both messages (protobuf's empty message), so the kit needs no protoc
//! or build script for its tests. Its descriptor is built with prost-types and registered
//! with reflection like a real service's.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use fairdeal_kit::config::CommonConfig;
use fairdeal_kit::{Application, ServeError, Shutdown};
use prost::Message;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::transport::Channel;

pub(crate) const SLOW_SERVICE: &str = "fairdeal.kit.test.v1.Slow";
pub(crate) const WAIT_PATH: &str = "/fairdeal.kit.test.v1.Slow/Wait";

/// The test service. `Wait` reports its start on `started`, then waits for the gate.
#[derive(Clone)]
pub(crate) struct Slow {
    started: mpsc::UnboundedSender<()>,
    gate: watch::Receiver<bool>,
}

impl Slow {
    /// A `Slow` nobody waits on (for tests that only mount it).
    pub(crate) fn new() -> Self {
        let (started, _) = mpsc::unbounded_channel();
        let (_, gate) = watch::channel(false);
        Self { started, gate }
    }
}

impl NamedService for Slow {
    const NAME: &'static str = SLOW_SERVICE;
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl tower::Service<http::Request<Body>> for Slow {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            if request.uri().path() != WAIT_PATH {
                return Ok(tonic::Status::unimplemented("no such method").into_http());
            }
            let handler = tower::service_fn(move |_request: tonic::Request<()>| {
                let mut this = this.clone();
                async move {
                    let _ = this.started.send(());
                    tracing::info!("waiting for the gate");
                    this.gate
                        .wait_for(|open| *open)
                        .await
                        .map_err(|_| tonic::Status::aborted("gate dropped"))?;
                    Ok::<_, tonic::Status>(tonic::Response::new(()))
                }
            });
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<(), ()>::default());
            Ok(grpc.unary(handler, request).await)
        })
    }
}

/// The encoded descriptor of `fairdeal/kit/test/v1/slow.proto`, for reflection.
pub(crate) fn slow_descriptor_set() -> &'static [u8] {
    static ENCODED: OnceLock<Vec<u8>> = OnceLock::new();
    ENCODED.get_or_init(|| {
        use prost_types::{
            DescriptorProto, FileDescriptorProto, FileDescriptorSet, MethodDescriptorProto,
            ServiceDescriptorProto,
        };
        FileDescriptorSet {
            file: vec![FileDescriptorProto {
                name: Some("fairdeal/kit/test/v1/slow.proto".into()),
                package: Some("fairdeal.kit.test.v1".into()),
                syntax: Some("proto3".into()),
                message_type: vec![DescriptorProto {
                    name: Some("Empty".into()),
                    ..Default::default()
                }],
                service: vec![ServiceDescriptorProto {
                    name: Some("Slow".into()),
                    method: vec![MethodDescriptorProto {
                        name: Some("Wait".into()),
                        input_type: Some(".fairdeal.kit.test.v1.Empty".into()),
                        output_type: Some(".fairdeal.kit.test.v1.Empty".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
        .encode_to_vec()
    })
}

/// A running test server and the levers a test pulls.
pub(crate) struct TestApp {
    pub(crate) addr: SocketAddr,
    pub(crate) shutdown: Shutdown,
    /// Receives one message per `Wait` call that has started.
    pub(crate) started: mpsc::UnboundedReceiver<()>,
    /// Set to true to let every `Wait` call (current and future) finish.
    pub(crate) gate: watch::Sender<bool>,
    /// The server task: what `run_until_stopped` returned.
    pub(crate) server: JoinHandle<Result<(), ServeError>>,
}

impl TestApp {
    pub(crate) async fn channel(&self) -> Channel {
        tonic::transport::Endpoint::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }
}

/// Starts a server on 127.0.0.1:0 with the given grace period.
pub(crate) async fn spawn_app(grace: Duration) -> TestApp {
    let mut common = CommonConfig::with_defaults("kit-test").unwrap();
    common.listen_addr = "127.0.0.1:0".parse().unwrap();
    common.shutdown_grace = grace;

    let (started_tx, started) = mpsc::unbounded_channel();
    let (gate, gate_rx) = watch::channel(false);
    let app = Application::builder(&common)
        .handle_signals(false)
        .file_descriptor_set(slow_descriptor_set())
        .add_service(Slow {
            started: started_tx,
            gate: gate_rx,
        })
        .build()
        .await
        .unwrap();
    let addr = app.local_addr();
    assert_ne!(addr.port(), 0, "port 0 resolves to the bound port");
    let shutdown = app.shutdown();
    let server = tokio::spawn(app.run_until_stopped());
    TestApp {
        addr,
        shutdown,
        started,
        gate,
        server,
    }
}

/// Calls `Wait` over `channel`, passing each request through `interceptor` (the kit's
/// trace-context interceptor, or a no-op).
pub(crate) async fn call_wait(
    channel: Channel,
    interceptor: impl tonic::service::Interceptor,
) -> Result<(), tonic::Status> {
    let mut client = tonic::client::Grpc::new(
        tonic::service::interceptor::InterceptedService::new(channel, interceptor),
    );
    client
        .ready()
        .await
        .map_err(|error| tonic::Status::unknown(error.to_string()))?;
    client
        .unary::<(), (), _>(
            tonic::Request::new(()),
            http::uri::PathAndQuery::from_static(WAIT_PATH),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .map(|response| response.into_inner())
}

/// The interceptor that changes nothing.
pub(crate) fn no_interceptor(
    request: tonic::Request<()>,
) -> Result<tonic::Request<()>, tonic::Status> {
    Ok(request)
}
