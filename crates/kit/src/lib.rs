//! fairdeal-kit: the bootstrap every fairdeal service stands on, so that the six services
//! (auth, commitment, dealing, tables, chat, rating) and the all-in-one binary start,
//! log, trace, serve and stop the same way.
//!
//! Layout (one concern per module):
//! - [`client`]: channels to other services from a URL setting (`http://` or a balanced
//!   `dns:///` name).
//! - [`deployment`]: what a service says of how it is deployed, from which the deployment
//!   files are generated.
//! - [`config`]: typed settings from defaults, a TOML file, `FAIRDEAL_*` environment and
//!   flags; validation; `--dump-config` with secrets redacted.
//! - [`telemetry`]: JSON logs and OpenTelemetry traces (OTLP export when
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` is set), flushed by a guard.
//! - [`metrics`]: OpenTelemetry instruments (exported with the traces) and the cheap
//!   [`metrics::level`] / [`metrics::counter`] API services record their own through;
//!   [`propagation`]: W3C trace context across gRPC metadata, event envelopes and NATS
//!   headers. Both live in `fairdeal-telemetry`, below the bus (which records through them
//!   without linking this kit), and are re-exported here.
//! - [`server`]: the gRPC server (`Application::builder(..).build().await?` binds, then
//!   `run_until_stopped()`), with health, reflection, request spans and graceful drain;
//!   a service's routes are a [`Mount`], so one server can carry several services.
//! - [`shutdown`]: the shutdown handle and task tracker background tasks hang on (it lives
//!   in `fairdeal-platform`, below this kit, whose background tasks hang on it too).
//! - [`start`]: [`StartError`], every way a service fails to start.
//! - [`status`]: the one mapping from service errors to `tonic::Status`.
//!
//! A service's `main` is a few lines:
//!
//! ```ignore
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> {
//!     let config = fairdeal_kit::config::load_or_exit::<TablesSettings>("tables");
//!     let _telemetry = fairdeal_kit::telemetry::init(&config.common)?;
//!     let app = tables::Application::build(config).await?; // uses kit::server inside
//!     app.run_until_stopped().await?;
//!     Ok(())
//! }
//! ```
#![forbid(unsafe_code)]

pub mod client;
pub mod config;
pub mod deployment;
pub mod host;
pub use fairdeal_telemetry::metrics;
pub mod propagation;
mod rpc_metrics;
pub mod server;
pub use fairdeal_platform::shutdown;
pub mod start;
pub mod status;
pub mod telemetry;

pub use config::{CommonConfig, Config, ConfigError, Section};
pub use fairdeal_platform::Shutdown;
pub use host::{Embedded, Hosted, Service};
pub use server::{Application, ApplicationBuilder, Mount, ServeError};
pub use start::StartError;

/// The memory allocator every fairdeal binary declares as its global allocator
/// (`#[global_allocator] static ALLOCATOR: fairdeal_kit::Allocator = fairdeal_kit::Allocator;`
/// in its `main.rs`): mimalloc, without its secure mode. A service's requests allocate and
/// free many small buffers across threads (HTTP/2 frames, protobuf messages, events), where
/// glibc's allocator spent a fifth of the tables service's CPU under load (see
/// docs/decisions.md, "mimalloc").
pub use mimalloc::MiMalloc as Allocator;
pub use status::ServiceError;
