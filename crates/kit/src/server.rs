//! The gRPC server every service runs: bind first, then serve until stopped.
//!
//! ```ignore
//! let app = Application::builder(&config.common)
//!     .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET)
//!     .add_service(TablesServer::new(tables))
//!     .build()
//!     .await?;                                    // the listener is bound here
//! let shutdown = app.shutdown();
//! shutdown.spawn("relay", relay.run(shutdown.token()));
//! app.run_until_stopped().await?;                 // returns after a graceful drain
//! ```
//!
//! Binding in [`ApplicationBuilder::build`] (not in `run_until_stopped`) lets a test ask for
//! port 0 and read the real address from [`Application::local_addr`] before serving. A
//! caller that must know the port before it assembles its services (the all-in-one process
//! points its services at their own server) binds first with [`bind`] and hands the
//! listener over with [`ApplicationBuilder::listener`].
//!
//! A service's routes are a [`Mount`]: its startup builds one (services plus the descriptor
//! sets reflection serves) and either serves it alone (`builder(..).mount(m)`) or hands it
//! to a process that mounts several services on one server, one port:
//!
//! ```ignore
//! let shutdown = Shutdown::new();
//! let app = Application::builder(&common)
//!     .with_shutdown(shutdown.clone())
//!     .mount(auth::startup::mount(&auth_config, storage.clone(), &shutdown).await?)
//!     .mount(tables::startup::mount(&common, tables_parts, &shutdown).await?)
//!     .build()
//!     .await?;
//! ```
//!
//! Every server gets, besides the caller's services:
//! - `grpc.health.v1.Health`: SERVING for each added service and for `""` (the whole
//!   server) from the start, NOT_SERVING for all of them as soon as shutdown begins;
//! - `grpc.reflection.v1` and `v1alpha`, describing the caller's descriptor sets and the
//!   health service;
//! - a request span per call ([`crate::propagation::grpc_server_span`]), child of the
//!   caller's trace when the call carries `traceparent`;
//! - the call's duration and status in [`crate::metrics::RPC_DURATION`] (its count is the
//!   call rate), by service, method and gRPC status code.
//!
//! Shutdown ([`Application::run_until_stopped`]), all within `shutdown_grace` of the trigger:
//! 1. SIGTERM, SIGINT or [`Shutdown::trigger`]: health turns NOT_SERVING, the listener
//!    closes, open connections get GOAWAY and their in-flight RPCs run to completion;
//! 2. background tasks are told to stop ([`Shutdown::token`]) and waited for;
//! 3. past the deadline, RPCs still running are cancelled and answered UNAVAILABLE, and
//!    `run_until_stopped` returns [`ServeError::GraceExceeded`].

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::service::{Routes, RoutesBuilder};
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::config::CommonConfig;
use crate::propagation;
use crate::rpc_metrics::RpcMetricsLayer;
use fairdeal_platform::shutdown::{self, Shutdown};

/// After the grace period, how long cancelled RPCs get to write their UNAVAILABLE answer
/// before `run_until_stopped` returns (and `main`, dropping the runtime, kills the rest).
const CANCELLED_FLUSH: Duration = Duration::from_millis(500);

/// Why the server could not start or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listen address could not be bound (in use, no permission).
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The configured address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file descriptor set given for reflection does not decode.
    #[error("cannot build the reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The server failed while serving.
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// Two mounted services have the same gRPC name: one would shadow the other.
    #[error("the gRPC service {0} is mounted twice")]
    DuplicateService(&'static str),
    /// Shutdown did not finish within the grace period; leftovers were cancelled.
    #[error(
        "shutdown exceeded the grace period of {}: {} in-flight RPC(s) cancelled, {unfinished_tasks} background task(s) unfinished",
        humantime::format_duration(*grace),
        if *rpcs_cancelled { "some" } else { "no" }
    )]
    GraceExceeded {
        /// The configured grace period.
        grace: Duration,
        /// Whether RPCs were still running at the deadline.
        rpcs_cancelled: bool,
        /// Background tasks still running at the deadline.
        unfinished_tasks: usize,
    },
}

/// Adds one service to the server's routes (kept until the routes are assembled).
type AddRoute = Box<dyn FnOnce(&mut RoutesBuilder) + Send>;

/// One service's (or several services') gRPC routes and the descriptor sets reflection
/// serves for them, ready to be mounted on a server, alone or beside other services
/// ([`ApplicationBuilder::mount`]).
#[derive(Default)]
pub struct Mount {
    /// The services, added to the routes when the server is built.
    routes: Vec<AddRoute>,
    /// Their gRPC names, for health statuses and reflection.
    service_names: Vec<&'static str>,
    /// Encoded `FileDescriptorSet`s served by reflection.
    descriptor_sets: Vec<&'static [u8]>,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("service_names", &self.service_names)
            .field("descriptor_sets", &self.descriptor_sets.len())
            .finish()
    }
}

impl Mount {
    /// No routes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tonic service (what `FooServer::new(handler)` returns). It is reported
    /// SERVING under its gRPC name until shutdown.
    pub fn add_service<S>(mut self, service: S) -> Self
    where
        S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes
            .push(Box::new(move |routes: &mut RoutesBuilder| {
                routes.add_service(service);
            }));
        self.service_names.push(S::NAME);
        self
    }

    /// Registers an encoded `FileDescriptorSet` (the proto crate's `FILE_DESCRIPTOR_SET`)
    /// with reflection, so `grpcurl` can list and call the services without .proto files.
    /// The same set given by several mounted services is registered once.
    pub fn file_descriptor_set(mut self, encoded: &'static [u8]) -> Self {
        if !self.descriptor_sets.contains(&encoded) {
            self.descriptor_sets.push(encoded);
        }
        self
    }

    /// Adds `other`'s services and descriptor sets to these.
    pub fn merge(mut self, other: Mount) -> Self {
        self.routes.extend(other.routes);
        self.service_names.extend(other.service_names);
        for set in other.descriptor_sets {
            self = self.file_descriptor_set(set);
        }
        self
    }

    /// The gRPC names of the services, in the order added.
    pub fn service_names(&self) -> &[&'static str] {
        &self.service_names
    }
}

/// Binds `addr` (port 0 for any free port), for [`ApplicationBuilder::listener`].
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Collects services and options before the listener is bound.
#[derive(Debug)]
pub struct ApplicationBuilder {
    /// Address to bind (port 0 for any free port).
    listen_addr: SocketAddr,
    /// A listener bound by the caller, used instead of binding `listen_addr`.
    listener: Option<TcpListener>,
    /// Total time allowed for draining RPCs and background tasks.
    grace: Duration,
    /// The caller's services and their descriptor sets.
    mount: Mount,
    /// The shutdown handle shared with the caller's tasks.
    shutdown: Shutdown,
    /// Whether SIGTERM/SIGINT trigger shutdown (off in tests that share a process).
    handle_signals: bool,
}

impl ApplicationBuilder {
    /// Uses `shutdown` instead of a fresh handle, so tasks created before the server (e.g.
    /// the relay, built with the same database pool) share its lifecycle.
    pub fn with_shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// The shutdown handle the server will use.
    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Adds a tonic service (what `FooServer::new(handler)` returns). It is reported
    /// SERVING under its gRPC name until shutdown.
    pub fn add_service<S>(mut self, service: S) -> Self
    where
        S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.mount = self.mount.add_service(service);
        self
    }

    /// Registers an encoded `FileDescriptorSet` (the proto crate's `FILE_DESCRIPTOR_SET`)
    /// with reflection, so `grpcurl` can list and call the services without .proto files.
    pub fn file_descriptor_set(mut self, encoded: &'static [u8]) -> Self {
        self.mount = self.mount.file_descriptor_set(encoded);
        self
    }

    /// Mounts a service's routes (what its startup's `mount` returns); several services
    /// mounted this way share the server, its port, health and reflection.
    pub fn mount(mut self, mount: Mount) -> Self {
        self.mount = self.mount.merge(mount);
        self
    }

    /// Serves on `listener` (bound by [`bind`]) instead of binding the configured address.
    pub fn listener(mut self, listener: TcpListener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// Whether SIGTERM and SIGINT start the shutdown (default: yes).
    pub fn handle_signals(mut self, handle: bool) -> Self {
        self.handle_signals = handle;
        self
    }

    /// Binds the listener and assembles health and reflection. Nothing is served until
    /// [`Application::run_until_stopped`].
    pub async fn build(self) -> Result<Application, ServeError> {
        let Mount {
            routes: add_routes,
            service_names,
            descriptor_sets,
        } = self.mount;
        // Background tasks the services started on this shutdown handle stop with a failed
        // start, so a caller that gives up (a test, a retry) leaves nothing running.
        let fail = |error: ServeError| {
            self.shutdown.stop_background();
            Err(error)
        };
        let duplicate = service_names
            .iter()
            .enumerate()
            .find_map(|(i, name)| service_names[..i].contains(name).then_some(*name));
        if let Some(name) = duplicate {
            return fail(ServeError::DuplicateService(name));
        }
        let listener = match self.listener {
            Some(listener) => listener,
            None => match bind(self.listen_addr).await {
                Ok(listener) => listener,
                Err(error) => return fail(error),
            },
        };
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: self.listen_addr,
            source,
        })?;

        let (health, health_service) = tonic_health::server::health_reporter();
        let mut health_names: Vec<String> = service_names
            .iter()
            .map(|name| (*name).to_owned())
            .collect();
        // "" is the whole server, what a load balancer or `grpc_health_probe` asks by default.
        health_names.push(String::new());
        for name in &health_names {
            health
                .set_service_status(name, ServingStatus::Serving)
                .await;
        }

        let reflection = || {
            let mut builder = tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                .with_service_name("grpc.health.v1.Health")
                .with_service_name("grpc.reflection.v1.ServerReflection");
            for set in &descriptor_sets {
                builder = builder.register_encoded_file_descriptor_set(set);
            }
            // A descriptor set may describe services of other binaries (the workspace's one
            // set holds every API): list only what this server answers.
            for name in &service_names {
                builder = builder.with_service_name(*name);
            }
            builder
        };
        let reflection_v1 = reflection().build_v1()?;
        // The old v1alpha protocol is still what many grpcurl builds speak.
        let reflection_v1alpha = reflection().build_v1alpha()?;

        let mut routes = RoutesBuilder::default();
        for add in add_routes {
            add(&mut routes);
        }
        routes
            .add_service(health_service)
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha);

        tracing::info!(%local_addr, services = ?service_names, "gRPC server bound");
        Ok(Application {
            metrics: RpcMetricsLayer::new(),
            listener,
            local_addr,
            routes: routes.routes(),
            health,
            health_names,
            shutdown: self.shutdown,
            grace: self.grace,
            handle_signals: self.handle_signals,
        })
    }
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Application {
    /// The bound listener; accepting starts in `run_until_stopped`.
    listener: TcpListener,
    /// The address actually bound (the real port when 0 was asked).
    local_addr: SocketAddr,
    /// Caller services plus health and reflection.
    routes: Routes,
    /// Health statuses, set NOT_SERVING at shutdown.
    health: HealthReporter,
    /// Every name with a health status ("" included).
    health_names: Vec<String>,
    /// Shutdown handle shared with background tasks.
    shutdown: Shutdown,
    /// Deadline for the whole shutdown, counted from the trigger.
    grace: Duration,
    /// Whether OS signals trigger shutdown.
    handle_signals: bool,
    /// Records every call's duration and status.
    metrics: RpcMetricsLayer,
}

impl Application {
    /// Starts a builder with the listen address and grace period from `common`.
    pub fn builder(common: &CommonConfig) -> ApplicationBuilder {
        ApplicationBuilder {
            listen_addr: common.listen_addr,
            listener: None,
            grace: common.shutdown_grace,
            mount: Mount::new(),
            shutdown: Shutdown::new(),
            handle_signals: true,
        }
    }

    /// The bound address (with the real port when port 0 was configured).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.local_addr.port()
    }

    /// The shutdown handle: trigger it, spawn background tasks on it.
    pub fn shutdown(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// The health reporter, for a service to report NOT_SERVING while a dependency is down.
    pub fn health(&self) -> HealthReporter {
        self.health.clone()
    }

    /// Serves until SIGTERM/SIGINT or [`Shutdown::trigger`], then drains (see the module
    /// docs). Returns `Ok` when everything finished within the grace period.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        let Application {
            listener,
            local_addr,
            routes,
            health,
            health_names,
            shutdown,
            grace,
            handle_signals,
            metrics,
        } = self;

        // Stops accepting; fired after health says NOT_SERVING.
        let stop_accepting = CancellationToken::new();
        // Cancels RPCs still running at the deadline.
        let hard_stop = CancellationToken::new();
        let server = tonic::transport::Server::builder()
            .trace_fn(propagation::grpc_server_span)
            .layer(HardStopLayer {
                token: hard_stop.clone(),
            })
            .layer(metrics)
            .add_routes(routes)
            .serve_with_incoming_shutdown(
                TcpIncoming::from(listener).with_nodelay(Some(true)),
                stop_accepting.clone().cancelled_owned(),
            );
        tokio::pin!(server);
        tracing::info!(%local_addr, "gRPC server serving");

        let signals = async {
            if handle_signals {
                shutdown::signal().await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            result = &mut server => {
                // The server ended on its own: an accept-loop error. Stop the rest too.
                shutdown.stop_background();
                result?;
                return Ok(());
            }
            () = shutdown.draining() => {}
            () = signals => shutdown.trigger(),
        }

        let deadline = Instant::now() + grace;
        tracing::info!(grace = %humantime::format_duration(grace), "shutdown: draining");
        for name in &health_names {
            health
                .set_service_status(name, ServingStatus::NotServing)
                .await;
        }
        stop_accepting.cancel();

        let mut rpcs_cancelled = false;
        let mut serve_error = None;
        match tokio::time::timeout_at(deadline, &mut server).await {
            Ok(Ok(())) => tracing::info!("shutdown: in-flight RPCs drained"),
            Ok(Err(error)) => serve_error = Some(error),
            Err(_elapsed) => {
                tracing::warn!("shutdown: grace period over, cancelling in-flight RPCs");
                rpcs_cancelled = true;
                hard_stop.cancel();
                // Long-lived streams may keep connections open past this; they end with
                // the process.
                let _ = tokio::time::timeout(CANCELLED_FLUSH, &mut server).await;
            }
        }

        shutdown.stop_background();
        shutdown.tracker().close();
        let unfinished_tasks =
            match tokio::time::timeout_at(deadline, shutdown.tracker().wait()).await {
                Ok(()) => 0,
                Err(_elapsed) => {
                    let left = shutdown.running_tasks();
                    tracing::warn!(
                        tasks = left,
                        "shutdown: background tasks did not stop in time"
                    );
                    left
                }
            };

        if let Some(error) = serve_error {
            return Err(error.into());
        }
        if rpcs_cancelled || unfinished_tasks > 0 {
            return Err(ServeError::GraceExceeded {
                grace,
                rpcs_cancelled,
                unfinished_tasks,
            });
        }
        tracing::info!("shutdown: complete");
        Ok(())
    }
}

/// Tower layer answering UNAVAILABLE for every RPC still pending when its token fires.
/// Hand-written (a few lines) because no tower middleware cancels on an external signal.
#[derive(Debug, Clone)]
struct HardStopLayer {
    /// Fired at the end of the grace period.
    token: CancellationToken,
}

impl<S> tower::Layer<S> for HardStopLayer {
    type Service = HardStop<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HardStop {
            inner,
            token: self.token.clone(),
        }
    }
}

/// The service made by [`HardStopLayer`].
#[derive(Debug, Clone)]
struct HardStop<S> {
    /// The routes.
    inner: S,
    /// Fired at the end of the grace period.
    token: CancellationToken,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> tower::Service<http::Request<Body>> for HardStop<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let response = self.inner.call(request);
        let token = self.token.clone();
        Box::pin(async move {
            tokio::select! {
                biased;
                response = response => response,
                () = token.cancelled() => Ok(tonic::Status::unavailable(
                    "server shut down before the call completed",
                )
                .into_http()),
            }
        })
    }
}
