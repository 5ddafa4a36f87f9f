//! Settings and wiring on the platform: `main.rs` calls [`Application::build`] and
//! [`Application::run_until_stopped`]; tests build [`Parts`] of their own and call
//! [`Application::assemble`] on port 0.

use std::sync::Arc;

use fairdeal_authn::{AuthLayer, Authenticator, CallerAuthSettings, spawn_key_refresh};
use fairdeal_kit::config::{Config, ConfigError, Section};
use fairdeal_kit::{CommonConfig, Mount, ServeError, Shutdown};
use fairdeal_platform::{Bus, StartError, Storage};
use fairdeal_proto::fairdeal::rating::v1::rating_service_server::RatingServiceServer;
use fairdeal_rating::KFactor;
use serde::Serialize;

use crate::grpc::RatingApi;
use crate::projection::{CONSUMER, MIGRATIONS, Ratings};
use crate::service::reads;

/// PostgreSQL schema of this service (event log, bus tables, projections).
pub const SCHEMA: &str = "rating";

/// This service's name on the bus (its events go to `<prefix>.rating`).
pub const SERVICE: &str = "rating";

/// The service whose `GameFinished` events are rated.
pub const SOURCE: &str = "tables";

/// The rating service's own settings.
#[derive(Debug, Clone, clap::Args, Serialize)]
#[command(next_help_heading = "Rating settings")]
pub struct RatingSettings {
    /// K of every rating change (SPEC 6: 32).
    #[arg(long, value_name = "K", default_value_t = 32.0)]
    pub k_factor: f64,
    /// Where callers' tokens are verified from.
    #[command(flatten)]
    #[serde(flatten)]
    pub auth: CallerAuthSettings,
}

impl Section for RatingSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        KFactor::new(self.k_factor).map_err(|e| ConfigError::invalid("k_factor", e.to_string()))?;
        self.auth.validate()
    }
}

/// What the service is assembled from (tests supply their own).
#[derive(Debug)]
pub struct Parts {
    /// The database, event store and append signal (in the embedded default, shared with
    /// the tables service: see docs/decisions.md).
    pub storage: Storage,
    /// Verifies callers' tokens.
    pub authn: Authenticator,
    /// K of every change.
    pub k: KFactor,
}

impl Parts {
    /// The parts `config` names; the database is opened and migrated.
    pub async fn from_config(config: &Config<RatingSettings>) -> Result<Self, StartError> {
        let storage = Storage::open(&config.common, SCHEMA, &[&MIGRATIONS]).await?;
        Self::over(config, storage)
    }

    /// The parts `config` names over an opened `storage` (migrated with [`MIGRATIONS`]; the
    /// all-in-one process shares one between services).
    pub fn over(config: &Config<RatingSettings>, storage: Storage) -> Result<Self, StartError> {
        let settings = &config.service;
        let k = KFactor::new(settings.k_factor)
            .map_err(|e| ConfigError::invalid("k_factor", e.to_string()))?;
        Ok(Self {
            authn: settings.auth.authenticator(settings.auth.auth_channel()?)?,
            storage,
            k,
        })
    }
}

/// Starts the service's background tasks on `shutdown` (key refresh, the relay of the
/// rating events, the consumer of the tables' events) and returns its gRPC routes, to serve
/// alone ([`Application::assemble`]) or beside other services on one server (the
/// all-in-one process).
pub async fn mount(
    common: &CommonConfig,
    parts: Parts,
    shutdown: &Shutdown,
) -> Result<Mount, StartError> {
    spawn_key_refresh(&parts.authn, shutdown);
    let bus = Bus::start(common, &parts.storage, SERVICE, shutdown).await?;
    let ratings = Ratings::new(&parts.storage, parts.k);
    bus.spawn_consumer(SOURCE, CONSUMER, Arc::new(ratings), shutdown)
        .await?;
    let api = RatingApi::new(reads(parts.storage.db()));
    Ok(Mount::new()
        .add_service(AuthLayer::new(parts.authn).wrap(RatingServiceServer::new(api)))
        .file_descriptor_set(fairdeal_proto::FILE_DESCRIPTOR_SET))
}

/// The running rating service.
#[derive(Debug)]
pub struct Application {
    /// The kit's server.
    app: fairdeal_kit::Application,
}

impl Application {
    /// Opens the storage `config` names and binds the listener.
    pub async fn build(config: Config<RatingSettings>) -> Result<Self, StartError> {
        let parts = Parts::from_config(&config).await?;
        Self::assemble(&config.common, parts).await
    }

    /// Wires `parts` into a bound server of its own: [`mount`], then bind.
    pub async fn assemble(common: &CommonConfig, parts: Parts) -> Result<Self, StartError> {
        let shutdown = Shutdown::new();
        let routes = mount(common, parts, &shutdown).await?;
        let app = fairdeal_kit::Application::builder(common)
            .with_shutdown(shutdown)
            .mount(routes)
            .build()
            .await?;
        Ok(Application { app })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.app.port()
    }

    /// The shutdown handle.
    pub fn shutdown(&self) -> Shutdown {
        self.app.shutdown()
    }

    /// Serves until stopped, then drains.
    pub async fn run_until_stopped(self) -> Result<(), ServeError> {
        self.app.run_until_stopped().await
    }
}
